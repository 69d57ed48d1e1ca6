//! Upstream's `basic`, `simple` and `base` Host Configuration samples
//! (host/tests/fixtures/upstream-samples/, verbatim) installed by an
//! installer VM onto a blank disk, booted, and `base` A/B updated to v2
//! and committed (issue 24: every upstream sample installs and boots).
//! Driven as an orchestrator drives a host: the reverse-connect proxy, the
//! public gRPC API and the real `trident` CLI. The VM tests are
//! `#[ignore]`d in the plain run; `scripts/vm-matrix.sh basic simple base`
//! runs them. Serial logs stay in `target/vm-artifacts/sample-NAME/`.
//!
//! Each test reads upstream's file and rewrites it ([`rewritten`], the
//! table [`SAMPLES`]); everything else is the sample's, its scripts and
//! health checks (`systemd-networkd` active: the test OS's network is
//! systemd-networkd's) included:
//! - the disk (`/dev/disk/by-path/...` → `/dev/vda`), the image (URL over
//!   HTTP, its sha384);
//! - sizes: the ESP 64 MiB → 160 MiB (the test OS's ESP image is 128 MiB),
//!   the roots 8 GiB → 1 GiB, and in `base` swap 2 GiB → 256 MiB and the
//!   encrypted and RAID partitions 1 GiB → 128 MiB (a TCG VM's disk and
//!   mirror resync time);
//! - the `<MY_PUBLIC_SSH_KEY>` placeholder → a fresh ed25519 key, whose
//!   comment the test OS's ready marker shows (`users=`);
//! - `base`'s `recoveryKeyUrl` (`file:///recovery.key`) must name an
//!   existing 0400/0600 file, as upstream demands: a preServicing script
//!   of ours (clean install only) makes it on the installer first.
//!
//! SELinux is not rewritten: the three samples leave it alone (`mode:
//! null`, or no `os` at all). `os.netplan` is written as the sample says;
//! the test OS has no netplan, so the file is inert and the image's own
//! systemd-networkd configuration brings the network up.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::time::{Duration, Instant};

use trident_e2e::upstream_sample::{replace_lines, resize_partition, upstream_sample};
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator::boot_marker::volume_loader;
use trident_e2e::vm_orchestrator::{
    HttpServer, InstallerWork, follow_logging, install_following, ssh_key, start_servicing,
    trident_cli, wait_provisioned,
};
use trident_e2e::vm_rcp::GuestSocket;

const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
const INSTALL_BOOT_TIMEOUT: Duration = Duration::from_secs(1500);

/// The disk line every sample has (upstream's placeholder device).
const UPSTREAM_DEVICE: &str = "    device: /dev/disk/by-path/pci-0000:00:1f.2-ata-2.0";
const UPSTREAM_URL: &str = "  url: file:///path/to/image.cosi";
const UPSTREAM_SHA384: &str = "  sha384: ec9a9aa23f02b30f4ec6a168b9bc24733b652eeab4f8abc243630666a5e34cea1667c34313a13ec1564ac4871b80112f";
const UPSTREAM_SSH_KEY: &str = "    - <MY_PUBLIC_SSH_KEY>";
/// The comment of the key the tests put in its place.
const SSH_KEY_COMMENT: &str = "sample@lab";
/// `base`'s recovery key file (its `recoveryKeyUrl`), on the installer.
const RECOVERY_KEY: &str = "/recovery.key";

/// How a sample is rewritten for the VM (see the module docs).
struct Sample {
    name: &'static str,
    /// `(partition id, upstream's size, ours)`.
    sizes: &'static [(&'static str, &'static str, &'static str)],
    /// The target disk's size (sparse).
    disk_bytes: u64,
    /// It has what `simple` and `base` share: `os` (a user whose key is
    /// the `<MY_PUBLIC_SSH_KEY>` placeholder), scripts and health checks.
    os_and_scripts: bool,
    /// It has `storage.encryption.recoveryKeyUrl`: the VM needs a TPM and
    /// the installer the key file.
    encrypted: bool,
}

const SAMPLES: [Sample; 3] = [
    Sample {
        name: "basic",
        sizes: &[("esp", "64M", "160M"), ("root", "8G", "1G")],
        disk_bytes: 2 << 30,
        os_and_scripts: false,
        encrypted: false,
    },
    Sample {
        name: "simple",
        sizes: &[("esp", "64M", "160M"), ("root", "8G", "1G")],
        disk_bytes: 2 << 30,
        os_and_scripts: true,
        encrypted: false,
    },
    Sample {
        name: "base",
        sizes: &[
            ("esp", "64M", "160M"),
            ("root-a", "8G", "1G"),
            ("root-b", "8G", "1G"),
            ("swap", "2G", "256M"),
            ("enc-srv", "1G", "128M"),
            ("raid-a", "1G", "128M"),
            ("raid-b", "1G", "128M"),
        ],
        disk_bytes: 4 << 30,
        os_and_scripts: true,
        encrypted: true,
    },
];

fn sample(name: &str) -> &'static Sample {
    SAMPLES.iter().find(|s| s.name == name).unwrap()
}

/// Our preServicing script making `base`'s recovery key file on the
/// installer (random bytes as base64 text, 0400), before the sample's own.
fn recovery_key_script() -> String {
    format!(
        r#"  preServicing:
  - name: make-recovery-key
    runOn:
    - clean-install
    content: |
      set -e
      umask 077
      head -c 48 /dev/urandom | base64 -w0 > {RECOVERY_KEY}
      chmod 0400 {RECOVERY_KEY}"#
    )
}

/// Upstream's sample `sample` for the VM: the image at `image_url` (its
/// metadata hash `sha384`), the SSH key `ssh_key` (see the module docs).
fn rewritten(sample: &Sample, image_url: &str, sha384: &str, ssh_key: &str) -> String {
    let url = format!("  url: {image_url}");
    let sha = format!("  sha384: {sha384}");
    let key = format!("    - {ssh_key}");
    let mut changes = vec![
        (UPSTREAM_DEVICE, "    device: /dev/vda"),
        (UPSTREAM_URL, url.as_str()),
        (UPSTREAM_SHA384, sha.as_str()),
    ];
    if sample.os_and_scripts {
        changes.push((UPSTREAM_SSH_KEY, key.as_str()));
    }
    let script = recovery_key_script();
    if sample.encrypted {
        changes.push(("  preServicing:", script.as_str()));
    }
    let mut text = replace_lines(&upstream_sample(sample.name), &changes);
    for (id, old, new) in sample.sizes {
        text = resize_partition(&text, id, old, new);
    }
    text
}

/// Field `name` of a ready marker (`name=value`), or "missing".
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or("missing")
}

/// One sample's VM: the installer (test OS v1 on the second disk) and a
/// blank target disk first, with a TPM for an encrypted sample.
struct SampleVm {
    sample: &'static Sample,
    work: InstallerWork,
    http: HttpServer,
    vm: Vm,
    ssh_key: String,
    started: Instant,
}

impl SampleVm {
    async fn start(name: &str, versions: &[&str]) -> SampleVm {
        let started = Instant::now();
        let sample = sample(name);
        let artifacts = vm::artifacts_dir(&format!("sample-{name}")).unwrap();
        let work = InstallerWork::build(&format!("trident-vm-sample-{name}-"), versions).await;
        let target = work.blank_disk("target.img", sample.disk_bytes);
        let ssh_key = ssh_key(work.dir.path(), SSH_KEY_COMMENT);
        let mut spec = VmSpec::new(name, &artifacts)
            .disk(&target)
            .disk(&work.installer)
            .orchestrator(&work.versions[0].rcp);
        if sample.encrypted {
            spec = spec.tpm();
        }
        let mut vm = Vm::start(spec).unwrap();
        let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
        println!("installer: {}", boot.line);
        let http = HttpServer::start(work.dir.path());
        SampleVm {
            sample,
            work,
            http,
            vm,
            ssh_key,
            started,
        }
    }

    /// The rewritten sample installing version `i` of the test OS.
    fn config(&self, i: usize) -> String {
        let os = &self.work.versions[i];
        let cosi = os.cosi.path.file_name().unwrap().to_string_lossy();
        let url = format!("http://10.0.2.2:{}/{cosi}", self.http.port);
        rewritten(self.sample, &url, &os.cosi.metadata_sha384, &self.ssh_key)
    }

    /// Installs the sample (v1), following the output of its postConfigure
    /// script; returns the installed OS's ready marker.
    async fn install(&mut self) -> String {
        let config = self.config(0);
        println!("Host Configuration of the install:\n{config}");
        let followed = install_following(
            &mut self.vm,
            config,
            Some("script::sample-configure-script"),
        )
        .await;
        if self.sample.os_and_scripts {
            assert_postconfigure_ran(&followed.logs);
        }
        let boot = self
            .vm
            .wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
            .await
            .unwrap();
        println!("installed OS: {}", boot.line);
        assert_eq!(field(&boot.line, "version"), "v1", "{}", boot.line);
        if self.sample.os_and_scripts {
            assert_eq!(
                field(&boot.line, "users"),
                format!("my-custom-user:{SSH_KEY_COMMENT},"),
                "{}",
                boot.line
            );
        }
        boot.line
    }

    async fn socket(&self) -> GuestSocket {
        let guest = self.vm.forward_tridentd().unwrap();
        guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
        guest
    }

    fn stop(mut self) {
        println!(
            "timing: sample {} scenario {:.1}s",
            self.sample.name,
            self.started.elapsed().as_secs_f64()
        );
        self.vm.stop();
        println!("serial log kept at {}", self.vm.serial_log().display());
    }
}

/// The sample's postConfigure script ran `/var/config-script.sh` (its
/// additional file, mode 0755, in the new root). The file's `echo` quotes
/// its text in single quotes: `$SAMPLE_VARIABLE` is printed as it is.
fn assert_postconfigure_ran(logs: &[String]) {
    assert!(
        logs.iter()
            .any(|l| l == "Running from newly deployed chroot: $SAMPLE_VARIABLE"),
        "the postConfigure script's output: {logs:#?}"
    );
}

/// The committed host's Host Status, after its health checks passed
/// (upstream's script and `systemd-networkd` active: the commit service
/// commits only then, and an A/B update's failed check would have rolled
/// back to the other volume); the records show both checks ran. (After
/// `base`'s A/B update, `trident logs` showed the new volume's commit's
/// checks only, not the install's: so they are this commit's.)
async fn committed(socket: &GuestSocket) -> String {
    let status = wait_provisioned(socket.path()).await;
    let records = trident_cli(socket.path(), &["logs", "-v", "DEBUG"]).await;
    for wanted in [
        // The script check's output line, and the systemd check started.
        "script::sample-commit-script: success",
        "running systemd health check",
    ] {
        assert!(
            records.contains(wanted),
            "{wanted} in the records:\n{records}"
        );
    }
    status
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section (vm-matrix.sh basic)"]
async fn upstreams_basic_sample_installs_and_boots() {
    let mut s = SampleVm::start("basic", &["v1"]).await;
    let line = s.install().await;
    assert_eq!(field(&line, "root-md"), "none", "{line}");
    let status = wait_provisioned(s.socket().await.path()).await;
    assert!(status.contains("servicingState: provisioned"), "{status}");
    s.stop();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section (vm-matrix.sh simple)"]
async fn upstreams_simple_sample_installs_boots_and_passes_its_health_checks() {
    let mut s = SampleVm::start("simple", &["v1"]).await;
    s.install().await;
    committed(&s.socket().await).await;
    s.stop();
}

/// What `base` asks of every boot: `/srv` unlocked by the TPM (no
/// passphrase typed) and mounted, `/mnt/raid` on a clean mirror, swap on.
fn assert_base_boot(line: &str) {
    assert_eq!(field(line, "tpm"), "tpmrm0", "{line}");
    assert_eq!(
        field(line, "crypt"),
        "luks-srv:active:/srv,",
        "/srv unlocked by the TPM and mounted: {line}"
    );
    // NAME:LEVEL:STATE:DEGRADED; read-auto: assembled, not written yet
    // (Debian's start_ro=1).
    let md: Vec<&str> = field(line, "md").trim_end_matches(',').split(':').collect();
    assert_eq!(md[..2], ["some_raid1", "raid1"], "{line}");
    assert!(["clean", "active", "read-auto"].contains(&md[2]), "{line}");
    assert_eq!(md[3], "0", "no member missing: {line}");
    assert_eq!(field(line, "md-mnt"), "some_raid1:/mnt/raid,", "{line}");
    assert_eq!(field(line, "swap"), "swap,", "{line}");
}

/// `base` installed (v1) and booted from volume A with `/srv` unlocked by
/// the TPM; the committed host's socket.
async fn base_installed(s: &mut SampleVm) -> GuestSocket {
    let bootloader = s.work.versions[0].bootloader;
    let step = Instant::now();
    let line = s.install().await;
    assert!(line.contains(&volume_loader(bootloader, "a")), "{line}");
    assert_base_boot(&line);
    assert!(
        !s.vm.serial().contains("Please enter passphrase"),
        "a passphrase was asked for on the console"
    );
    let guest = s.socket().await;
    let status = committed(&guest).await;
    for wanted in [
        "abActiveVolume: volume-a",
        "deviceName: luks-srv",
        "recoveryKey: true",
        "raidArrays:",
        "state: clean",
    ] {
        assert!(status.contains(wanted), "{wanted} in\n{status}");
    }
    println!(
        "timing: base install, boot A, commit {:.1}s",
        step.elapsed().as_secs_f64()
    );
    guest
}

/// The test command's: `base` installs and boots. Its A/B update (with the
/// TPM unsealing `/srv` before the write) is the matrix's `base`: the
/// test command's `advanced` runs the same flow on a TPM-sealed volume.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section"]
async fn upstreams_base_sample_installs_and_boots_with_srv_unlocked_by_the_tpm() {
    let mut s = SampleVm::start("base", &["v1"]).await;
    drop(base_installed(&mut s).await);
    s.stop();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/vm-matrix.sh base"]
async fn matrix_upstreams_base_sample_installs_boots_with_srv_unlocked_and_updates_to_v2() {
    use trident_proto::v1::{
        FinalizeUpdateRequest, HostConfiguration, RebootHandling, RebootManagement, RebootStatus,
        StageUpdateRequest, UpdateRequest, update_service_client::UpdateServiceClient,
    };
    let mut s = SampleVm::start("base", &["v1", "v2"]).await;
    let bootloader = s.work.versions[0].bootloader;
    let guest = base_installed(&mut s).await;

    // A/B update to v2: the daemon has the TPM unseal /srv's key before
    // writing; B boots with /srv unlocked by the TPM again, and commits.
    let step = Instant::now();
    let client = UpdateServiceClient::new(trident_e2e::uds_channel(guest.path()).await.unwrap());
    let request = UpdateRequest {
        stage: Some(StageUpdateRequest {
            config: Some(HostConfiguration {
                config: s.config(1),
            }),
        }),
        finalize: Some(FinalizeUpdateRequest {
            reboot: Some(RebootManagement {
                handling: RebootHandling::TridentHandlesReboot as i32,
            }),
        }),
    };
    s.vm.boot_clock_restart();
    let stream = start_servicing(|| {
        let (mut client, request) = (client.clone(), request.clone());
        async move { client.update(request).await }
    })
    .await;
    let followed = follow_logging(
        "update to v2",
        stream,
        Some("script::sample-configure-script"),
    )
    .await;
    assert_eq!(
        followed.completed.reboot_status(),
        RebootStatus::RebootStarted
    );
    assert_postconfigure_ran(&followed.logs);
    for phase in ["write/root-b", "configure", "boot-files"] {
        assert!(
            followed.phases.iter().any(|p| p == phase),
            "{phase} in {:?}",
            followed.phases
        );
    }
    assert!(
        !followed.phases.iter().any(|p| p == "partition"),
        "{:?}",
        followed.phases
    );
    drop(guest);
    let boot =
        s.vm.wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
            .await
            .unwrap();
    println!("updated OS: {}", boot.line);
    assert_eq!(field(&boot.line, "version"), "v2", "{}", boot.line);
    assert!(
        boot.line.contains(&volume_loader(bootloader, "b")),
        "{}",
        boot.line
    );
    assert_base_boot(&boot.line);
    let guest = s.socket().await;
    let status = committed(&guest).await;
    assert!(status.contains("abActiveVolume: volume-b"), "{status}");
    println!(
        "timing: base update to v2, boot B, commit {:.1}s",
        step.elapsed().as_secs_f64()
    );
    drop(guest);
    s.stop();
}

/// Before any VM: each rewritten sample parses and validates as the daemon
/// will (`trident_host::config::parse`), its partitions fit its disk, and
/// nothing of upstream's placeholders is left.
#[test]
fn every_rewritten_sample_parses_validates_and_fits_its_vm_disk() {
    use trident_host::config::{PartitionSize, parse};
    let sha384 = "ab".repeat(48);
    for sample in &SAMPLES {
        let key = format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample {SSH_KEY_COMMENT}");
        let text = rewritten(sample, "http://10.0.2.2:8080/v1.cosi", &sha384, &key);
        let hc = parse(&text).unwrap_or_else(|e| panic!("{}: {}\n{text}", sample.name, e.report()));
        assert!(!text.contains("<MY_PUBLIC_SSH_KEY>"), "{text}");
        assert!(!text.contains("/dev/disk/by-path"), "{text}");
        assert_eq!(hc.storage.disks.len(), 1, "{}", sample.name);
        let disk = &hc.storage.disks[0];
        assert_eq!(disk.device, "/dev/vda");
        let bytes: u64 = disk
            .partitions
            .iter()
            .map(|p| match p.size {
                PartitionSize::Bytes(b) => b,
                PartitionSize::Grow => panic!("{}: a grow partition", sample.name),
            })
            .sum();
        // The GPT's two copies and alignment: a few MiB.
        assert!(
            bytes + (8 << 20) <= sample.disk_bytes,
            "{}: {bytes} bytes of partitions on a {}-byte disk",
            sample.name,
            sample.disk_bytes
        );
        let image = hc.image.as_ref().unwrap();
        assert_eq!(image.url, "http://10.0.2.2:8080/v1.cosi");
        assert_eq!(image.sha384, sha384);
        let encrypted = hc.storage.encryption.as_ref();
        assert_eq!(encrypted.is_some(), sample.encrypted, "{}", sample.name);
        if let Some(encryption) = encrypted {
            assert_eq!(encryption.recovery_key_path(), Some(RECOVERY_KEY));
            assert!(
                hc.scripts
                    .pre_servicing
                    .first()
                    .is_some_and(|s| s.name == "make-recovery-key"),
                "{}: the recovery key is made first",
                sample.name
            );
        }
    }
}
