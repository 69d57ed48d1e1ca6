//! The real test OS in a UEFI VM (issue 11), driven through public
//! interfaces only. Boots VMs under TCG, so it takes minutes and is
//! `#[ignore]`d in the plain test run; `scripts/test.sh` runs it in its VM
//! section (`--run-ignored`). Serial logs stay in `target/vm-artifacts/`.
//!
//! Steps 1-4, one VM
//! (`matrix_an_installer_vm_installs_v1_updates_to_v2_and_rolls_back_a_failing_update`):
//! an installer VM installs v1 onto its first disk through its tridentd
//! (reached through the reverse-connect proxy: the guest's `trident-rcp`
//! dials the harness; after each reboot the OS dials again and the test's
//! socket follows the new tunnel) and reboots itself into volume A, whose
//! commit service commits;
//! an A/B update to v2 boots volume B once (one-shot) and commits; an
//! update whose health check fails boots volume A once, and the host comes
//! back on volume B by itself. The Host Configurations carry a user with
//! an SSH key, a hostname and a systemd health check (issue 12), which the
//! ready marker shows took effect.
//!
//! Then, back on B, the host's whole timeline (issue 26, `vm_timeline`):
//! `trident traces --operation` of the update to v2 shows its stage on A
//! and its commit on B across the reboot, `trident logs --list-boots` every
//! boot, `trident get last-error` the recent logs of A's failed commit; and
//! after the VM stops, B's journal read offline from the target disk holds
//! every operation of B's datastore with its records.
//!
//! The same steps on upstream's `advanced` sample
//! (`upstreams_advanced_sample_installs_v1_updates_to_v2_and_rolls_back_a_failing_update`,
//! the CI scenario and `scripts/vm-matrix.sh advanced`; the plain layout
//! above is the matrix's `grub`, `uki` and `type1`): two blank disks and a
//! software TPM; the sample
//! (`tests/vm/advanced.yaml`, `vm_orchestrator::advanced`) makes twelve
//! RAID1 arrays, `/home` a LUKS2 volume over one sealed to PCR 7, swap on
//! both disks, and installs the verity test OS: `/` is `/dev/mapper/root`
//! over the array `root-data-a` with its hash tree on `root-hash-a`,
//! read-only, `/etc` an overlay on `trident-overlay-a`, `/boot` and `/var`
//! from the image on their arrays. Each boot is checked on the console:
//! every array a clean mirror, `/home` unlocked by the TPM (no passphrase
//! prompt) and mounted, swap on both disks, the kernel's command line
//! naming the volume's arrays and its version's root hash, `veritysetup
//! status root` verified, `/` read-only. The A/B update opens `/home` with
//! the TPM before writing B's arrays.
//!
//! Step 5: a disk written by StreamDisk boots. A private tridentd on
//! the host StreamDisks the v1 COSI onto a disk-image file; the VM boots it
//! with OVMF + systemd-boot; v1 runs, and its tridentd, which only the
//! `trident.raw` system extension provides, answers through the
//! reverse-connect proxy, to the real `trident` CLI too.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use trident_e2e::mini_os;
use trident_e2e::test_os::{self, TestBootloader, TestOs};
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator;
use trident_e2e::vm_orchestrator::advanced::{self, AdvancedConfig};
use trident_e2e::vm_orchestrator::boot_marker::{boot_options, image_boot, volume_loader};
use trident_e2e::vm_orchestrator::{
    GuestConfig, HttpServer, assert_phases, blank_disk, install_following, installer_disk,
    part_uuid, ssh_key, stream_disk, trident_cli, update_following, wait_provisioned,
};
use trident_e2e::vm_timeline;
use trident_e2e::{Daemon, bin_path};
use trident_proto::v1::TridentErrorKind;
use trident_proto::v1preview::{GetLastErrorRequest, status_service_client::StatusServiceClient};

/// Generous: TCG on a loaded 2-core machine.
const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
/// From Install to the installed OS's ready marker: the install in the
/// guest, the reboot, and a firmware/systemd-boot stage measured at minutes
/// under TCG on a loaded machine (589 s in all once).
const INSTALL_BOOT_TIMEOUT: Duration = Duration::from_secs(1500);

/// True if the ext4 image has `path` (debugfs reads it without mounting).
fn ext4_has(image: &Path, path: &str) -> bool {
    let out = Command::new("debugfs")
        .arg("-R")
        .arg(format!("stat {path}"))
        .arg(image)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    !text.contains("File not found")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section"]
async fn a_disk_written_by_stream_disk_boots_v1_with_tridentd_from_the_sysext() {
    let artifacts = vm::artifacts_dir("stream_disk_boots").unwrap();
    let work = tempfile::Builder::new()
        .prefix("trident-vm-scenario-")
        .tempdir()
        .unwrap();
    let sysext = test_os::build_sysext(work.path()).unwrap();
    let bootloader = TestBootloader::from_env().unwrap();
    let v1 = test_os::build_test_os("v1", bootloader, &sysext, work.path()).unwrap();
    assert!(
        v1.os_release.contains("IMAGE_VERSION=v1"),
        "{}",
        v1.os_release
    );
    // The OS itself has no tridentd: only the system extension brings it.
    assert!(!ext4_has(&v1.root_image, "/usr/bin/tridentd"));
    assert!(ext4_has(&v1.root_image, "/var/lib/extensions/trident.raw"));

    // A disk larger than the image's, like a real one: the backup GPT moves.
    let disk = work.path().join("disk.img");
    fs::File::create(&disk)
        .unwrap()
        .set_len(v1.cosi.disk_size + (256 << 20))
        .unwrap();
    stream_disk(&v1, &disk).await;

    let mut vm = Vm::start(
        VmSpec::new("stream-disk", &artifacts)
            .disk(&disk)
            .orchestrator(&v1.rcp),
    )
    .unwrap();
    let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    assert!(boot.line.contains("version=v1"), "{}", boot.line);
    assert!(boot.line.contains("sysext=trident,"), "{}", boot.line);
    assert!(
        boot.line.contains("tridentd=/usr/bin/tridentd"),
        "{}",
        boot.line
    );
    assert!(boot.line.contains("socket=active"), "{}", boot.line);
    // The image's own boot path (removable media): its loader's own entry.
    image_boot(&v1, &boot.line);

    let guest = vm.forward_tridentd().unwrap();
    let version = guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
    let host = trident_e2e::version(Daemon::start().await.unwrap().socket_path())
        .await
        .unwrap();
    assert_eq!(
        (&version.version, &version.git_commit),
        (&host.version, &host.git_commit),
        "the guest runs the tridentd built here"
    );
    // Another host: the CLI tells it from a local daemon by its boot id.
    assert!(
        !version.boot_id.is_empty() && version.boot_id != host.boot_id,
        "the guest's boot id is its own: {version:?} vs {host:?}"
    );

    // The real CLI, unchanged, through the reverse-connect proxy's socket.
    let socket = guest.path().to_owned();
    let status = tokio::task::spawn_blocking(move || {
        Command::new(bin_path("trident"))
            .arg("--socket")
            .arg(&socket)
            .args(["get", "status"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        stdout.contains("servicingState: not-provisioned"),
        "{stdout}"
    );
    vm.stop();
    println!("serial log kept at {}", vm.serial_log().display());
}

/// The scenario's test user and the comment of its generated SSH key.
const USER: &str = "orchestrator";
const KEY_COMMENT: &str = "trident-vm-scenario";

/// The storage the scenario installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// One disk: the ESP and an A/B pair of root partitions.
    Plain,
    /// Upstream's `advanced` sample on two disks with a TPM
    /// (`vm_orchestrator::advanced`).
    Advanced(advanced::Root),
}

/// The VM, its target disks and the orchestrator's pieces, across steps.
struct Scenario {
    vm: Vm,
    layout: Layout,
    bootloader: TestBootloader,
    /// The versions installed and updated to.
    v1: TestOs,
    v2: TestOs,
    /// The first target disk (the only one of [`Layout::Plain`]).
    target: std::path::PathBuf,
    http: HttpServer,
    ssh_key: String,
}

impl Scenario {
    /// A Host Configuration for `os` with `hostname` and a health check
    /// on `units`.
    fn config(&self, os: &TestOs, hostname: &str, units: &[&str], timeout_s: u64) -> String {
        match self.layout {
            Layout::Plain => GuestConfig {
                http_port: self.http.port,
                os,
                hostname,
                user: USER,
                ssh_key: &self.ssh_key,
                health_units: units,
                health_timeout_s: timeout_s,
            }
            .yaml(),
            Layout::Advanced(root) => AdvancedConfig {
                http_port: self.http.port,
                os,
                ssh_key: &self.ssh_key,
                hostname,
                health_units: units,
                health_timeout_s: timeout_s,
                root,
            }
            .yaml(),
        }
    }

    /// The user the Host Configuration adds.
    fn user(&self) -> &'static str {
        match self.layout {
            Layout::Plain => USER,
            Layout::Advanced(_) => advanced::USER,
        }
    }

    /// The id of the device volume `volume`'s root filesystem is written
    /// to (its write phase is `write/ID`).
    fn root_volume(&self, volume: &str) -> String {
        match self.layout {
            Layout::Plain => format!("root-{volume}"),
            Layout::Advanced(_) => format!("root-data-{volume}"),
        }
    }

    /// Waits for the next boot's ready marker and checks it ran `version`
    /// from `volume`'s entry and partition, with `hostname` and the user.
    async fn expect_boot(&mut self, version: &str, volume: &str, hostname: &str) -> String {
        let boot = self
            .vm
            .wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
            .await
            .unwrap();
        let line = boot.line;
        println!(
            "boot of {version} ({volume}) {:.1}s: {line}",
            boot.duration.as_secs_f64()
        );
        // Which loader started the volume: its own UEFI boot option (GRUB),
        // or its systemd-boot entry.
        let loader = volume_loader(self.bootloader, volume);
        for wanted in [
            format!("version={version} "),
            loader,
            format!("hostname={hostname} "),
            format!("users={}:{KEY_COMMENT}", self.user()),
        ] {
            assert!(line.contains(&wanted), "{wanted} in {line}");
        }
        match self.layout {
            Layout::Plain => {
                let partition = part_uuid(&self.target, &format!("root-{volume}"));
                let wanted = format!("root-partuuid={partition}");
                assert!(line.contains(&wanted), "{wanted} in {line}");
            }
            Layout::Advanced(root) => {
                let os = if version == "v2" { &self.v2 } else { &self.v1 };
                let root_hash = match root {
                    advanced::Root::Verity => mini_os::cosi_verity_root_hash(&os.cosi.path, "/"),
                    advanced::Root::Plain => String::new(),
                };
                advanced::assert_boot(root, &root_hash, &line, volume, &self.vm.serial());
            }
        }
        line
    }

    /// `trident get status` once the commit service has committed.
    async fn provisioned_on(&self, volume: &str) -> String {
        let guest = self.vm.forward_tridentd().unwrap();
        guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
        let status = wait_provisioned(guest.path()).await;
        assert!(
            status.contains(&format!("abActiveVolume: volume-{volume}")),
            "{status}"
        );
        status
    }

    /// Update to `config`, TRIDENT_HANDLES_REBOOT, following the live
    /// progress: the image goes to `root-{volume}`, the VM starts to reboot.
    async fn update(&mut self, what: &str, config: String, volume: &str) {
        let phases = update_following(&mut self.vm, what, config).await;
        assert_phases(
            &phases,
            &[
                &format!("write/{}", self.root_volume(volume)),
                "configure",
                "boot-files",
                "finalize",
            ],
        );
        assert!(
            !phases.iter().any(|p| p == "partition" || p == "raid-sync"),
            "an A/B update leaves the disks' layout alone: {phases:?}"
        );
    }
}

/// Scenario steps 1-4 in one VM (see the module docs): the GRUB, UKI and
/// Type 1 scenarios of `scripts/vm-matrix.sh`.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/vm-matrix.sh"]
async fn matrix_an_installer_vm_installs_v1_updates_to_v2_and_rolls_back_a_failing_update() {
    scenario("install", Layout::Plain).await;
}

/// Scenario steps 1-4 in one VM on upstream's `advanced` sample: two disks
/// of RAID1 arrays, `/home` encrypted on an array and unlocked by the TPM,
/// swap on both disks, A/B pairs of arrays and the verity root (the CI
/// scenario: `scripts/test.sh`; `advanced` in `scripts/vm-matrix.sh`).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section"]
async fn upstreams_advanced_sample_installs_v1_updates_to_v2_and_rolls_back_a_failing_update() {
    scenario("advanced", Layout::Advanced(advanced::Root::Verity)).await;
}

/// The advanced sample without its verity section on the plain test OS
/// (`advanced::Root::Plain`: `root-data` a plain A/B root; no `/boot` or
/// `/var` in that image): RAID, encryption over an array, swap and A/B
/// with the TPM apart from verity (`advanced-plain-root` in
/// `scripts/vm-matrix.sh`).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/vm-matrix.sh"]
async fn matrix_advanced_sample_without_verity_installs_updates_and_rolls_back() {
    scenario(
        "advanced-plain-root",
        Layout::Advanced(advanced::Root::Plain),
    )
    .await;
}

/// Each disk of the advanced sample: its partitions (2.7 GiB) and room.
const ADVANCED_DISK_BYTES: u64 = 3 << 30;

async fn scenario(name: &str, layout: Layout) {
    let scenario_started = std::time::Instant::now();
    let artifacts = vm::artifacts_dir(name).unwrap();
    let work = tempfile::Builder::new()
        .prefix("trident-vm-install-")
        .tempdir()
        .unwrap();
    let sysext = test_os::build_sysext(work.path()).unwrap();
    let bootloader = TestBootloader::from_env().unwrap();
    let verity = layout == Layout::Advanced(advanced::Root::Verity);
    let build = |version: &str| {
        if verity {
            test_os::build_verity_test_os(version, bootloader, &sysext, work.path()).unwrap()
        } else {
            test_os::build_test_os(version, bootloader, &sysext, work.path()).unwrap()
        }
    };
    let (v1, v2) = (build("v1"), build("v2"));
    // The installer media: v1, or the plain test OS beside a verity v1.
    let installer_os = if verity {
        test_os::build_test_os("installer", bootloader, &sysext, work.path()).unwrap()
    } else {
        v1.clone()
    };
    let installer = installer_disk(work.path(), &installer_os).await;
    let targets: Vec<std::path::PathBuf> = match layout {
        Layout::Plain => vec![blank_disk(work.path(), "target.img", 2 << 30)],
        Layout::Advanced(_) => ["disk1.img", "disk2.img"]
            .into_iter()
            .map(|disk| blank_disk(work.path(), disk, ADVANCED_DISK_BYTES))
            .collect(),
    };

    // Targets first: blank, so the firmware falls through to the
    // installer; once installed, they boot first.
    let mut spec = VmSpec::new(name, &artifacts);
    for target in &targets {
        spec = spec.disk(target);
    }
    spec = spec.disk(&installer).orchestrator(&v1.rcp);
    if layout != Layout::Plain {
        spec = spec.tpm();
    }
    let vm = Vm::start(spec).unwrap();
    let target = targets[0].clone();
    let mut s = Scenario {
        vm,
        layout,
        bootloader,
        v1: v1.clone(),
        v2: v2.clone(),
        target,
        http: HttpServer::start(work.path()),
        ssh_key: ssh_key(work.path(), KEY_COMMENT),
    };
    let boot =
        s.vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT)
            .await
            .unwrap();
    image_boot(&installer_os, &boot.line);

    let step = std::time::Instant::now();
    let config = s.config(&v1, "trident-v1", &["systemd-journald.service"], 60);
    install(&mut s, config).await;
    s.expect_boot("v1", "a", "trident-v1").await;
    s.provisioned_on("a").await;
    println!(
        "timing: steps 1-2 (install, boot A, commit) {:.1}s",
        step.elapsed().as_secs_f64()
    );

    // Step 3: A/B update to v2; the one-shot boot of B commits.
    let step = std::time::Instant::now();
    let config = s.config(
        &v2,
        "trident-v2",
        &["systemd-journald.service", "tridentd.socket"],
        60,
    );
    s.update("update to v2", config, "b").await;
    let trial_b = s.expect_boot("v2", "b", "trident-v2").await;
    if bootloader == TestBootloader::Grub {
        // B's trial is BootNext: BootOrder still leads with A.
        let (order, a, b) = boot_options(&s.vm.serial(), &trial_b);
        println!("trial boot of B: BootOrder {order:?}, AZLA {a}, AZLB {b}");
        assert!(
            !a.is_empty() && !b.is_empty(),
            "AZLA and AZLB options: {trial_b}"
        );
        assert_eq!(
            order.first(),
            Some(&a),
            "A first during B's trial: {trial_b}"
        );
    }
    s.provisioned_on("b").await;
    println!(
        "timing: step 3 (update to v2, boot B, commit) {:.1}s",
        step.elapsed().as_secs_f64()
    );

    // Step 4: an update whose health check cannot pass (v1 again, into A).
    let step = std::time::Instant::now();
    let config = s.config(&v1, "trident-bad", &[NEVER_ACTIVE], 15);
    s.update("failing update", config, "a").await;
    let trial_a = s.expect_boot("v1", "a", "trident-bad").await;
    // The commit service's health check fails; tridentd points the next
    // boot back at B and reboots by itself.
    let back_on_b = s.expect_boot("v2", "b", "trident-v2").await;
    if bootloader == TestBootloader::Grub {
        // B's commit put B first in BootOrder; A's trial (BootNext) and
        // its failure left it so.
        let serial = s.vm.serial();
        for line in [&trial_a, &back_on_b] {
            let (order, _, b) = boot_options(&serial, line);
            println!("BootOrder {order:?}, AZLB {b}: {line}");
            assert_eq!(order.first(), Some(&b), "B first after its commit: {line}");
        }
    }
    let trial = s.vm.serial();
    assert!(
        trial.contains(NEVER_ACTIVE),
        "the failed commit on the console"
    );
    let status = s.provisioned_on("b").await;
    // Settled on B, the error that sent it back stays the last error.
    assert!(status.contains("lastError:"), "{status}");
    // The structured error, from the datastore B was handed back (B's bus
    // journal never saw the commit that failed on A).
    let guest = s.vm.forward_tridentd().unwrap();
    let channel = trident_e2e::uds_channel(guest.path()).await.unwrap();
    let error = StatusServiceClient::new(channel)
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
        .error
        .expect("the failed health check is the last error");
    println!("last error on B: {error:?}");
    assert_eq!(error.subkind, "health-check-failed");
    assert_eq!(error.kind, TridentErrorKind::HealthChecksError as i32);
    assert!(error.message.contains(NEVER_ACTIVE), "{}", error.message);
    let cli = trident_cli(guest.path(), &["get", "last-error"]).await;
    for wanted in ["health-check-failed", NEVER_ACTIVE] {
        assert!(
            cli.contains(wanted),
            "{wanted} in `trident get last-error`: {cli}"
        );
    }
    println!(
        "timing: step 4 (failing update, trial boot A, back on B) {:.1}s",
        step.elapsed().as_secs_f64()
    );
    vm_timeline::on_b(guest.path(), &s.root_volume("b")).await;
    println!(
        "timing: scenario {:.1}s",
        scenario_started.elapsed().as_secs_f64()
    );
    s.vm.stop();
    println!("serial log kept at {}", s.vm.serial_log().display());
    match layout {
        Layout::Plain => {
            if bootloader == TestBootloader::Grub {
                grub_volumes_on_the_esp(&s.target, &v1.esp_image);
            }
            // /var/lib/trident is in B's root.
            vm_timeline::in_the_booted_volumes_journal(
                &s.target,
                "root-b",
                "/var/lib/trident",
                work.path(),
            );
        }
        Layout::Advanced(_) => {
            // /var/lib/trident is the array `trident` (metadata 1.0: its
            // filesystem starts where each member starts).
            vm_timeline::in_the_booted_volumes_journal(&s.target, "trident1", "/", work.path());
            // The second disk's ESP, a filesystem with no mount point:
            // nothing was written to it (no FAT boot sector).
            use std::os::unix::fs::FileExt;
            let esp2 = mini_os::partition(&targets[1], "esp2");
            let mut head = vec![0u8; 64 << 10];
            fs::File::open(&targets[1])
                .unwrap()
                .read_exact_at(&mut head, esp2.offset)
                .unwrap();
            assert!(
                head.iter().all(|b| *b == 0),
                "esp2 untouched by the install and updates"
            );
        }
    }
}

/// From the host, after the VM stopped: each volume's ESP directory holds
/// shim, GRUB and its grub.cfg, which boots that volume's root partition,
/// and the ESP holds exactly those and the installed image's own files
/// (`image_esp`: v1's ESP image; the fallback path's loaders replaced in
/// place).
fn grub_volumes_on_the_esp(target: &Path, image_esp: &Path) {
    let on_disk =
        vm_orchestrator::esp_tree::files(target, mini_os::partition(target, "esp").offset);
    let mut expected = vm_orchestrator::esp_tree::files(image_esp, 0);
    for volume in ["AZLA", "AZLB"] {
        for file in ["BOOTX64.EFI", "GRUBX64.EFI", "GRUB.CFG"] {
            expected.insert(format!("EFI/{volume}/{file}"));
        }
    }
    assert_eq!(
        on_disk, expected,
        "the ESP's files after install and updates"
    );
    for volume in ["a", "b"] {
        let dir = format!("EFI/AZL{}", volume.to_uppercase());
        for file in ["bootx64.efi", "grubx64.efi"] {
            assert!(
                mini_os::esp_file(target, &format!("{dir}/{file}")).is_some(),
                "{dir}/{file} on the ESP"
            );
        }
        let config = mini_os::esp_file(target, &format!("{dir}/grub.cfg")).unwrap();
        let root = part_uuid(target, &format!("root-{volume}"));
        assert!(
            config.contains(&format!("root=PARTUUID={root} ")),
            "{dir}/grub.cfg boots root-{volume}: {config}"
        );
        assert!(
            config.contains("search --no-floppy --fs-uuid --set=root "),
            "{config}"
        );
    }
}

/// A unit no test OS has: `systemctl is-active` says inactive forever.
const NEVER_ACTIVE: &str = "trident-never-active.service";

/// Step 1: Install through the installer's tridentd (reverse-connect proxy), following
/// live progress; the installer reboots itself into the installed OS.
async fn install(s: &mut Scenario, config: String) {
    let followed = install_following(&mut s.vm, config, None).await;
    assert_phases(
        &followed.phases,
        &[&format!("write/{}", s.root_volume("a"))],
    );
    if s.layout != Layout::Plain {
        assert_phases(&followed.phases, &["partition", "raid-sync"]);
    }
}
