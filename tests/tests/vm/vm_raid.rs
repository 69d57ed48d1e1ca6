//! Software RAID in a UEFI VM with two blank disks (issue 23), driven as
//! an orchestrator drives a host: through the reverse-connect proxy, the
//! public gRPC API and the real `trident` CLI. `mdadm` and md exist only
//! in the guest (the test OS has mdadm; this machine's kernel has no md),
//! so everything RAID happens there. `#[ignore]`d in the plain run;
//! `scripts/test.sh` runs step 1 (the sample installs and boots) and the
//! `raid` sample, `scripts/vm-matrix.sh` the rest. Serial logs (with
//! `/proc/mdstat` at each boot) stay in `target/vm-artifacts/raid/`.
//!
//! 1. The installer (the test OS on a third disk) installs our fixture of
//!    upstream's `raid-mirrored` sample (ESP, root and `/var/lib/trident`
//!    each a RAID1 mirror of the two disks) with what a two-disk VM and an
//!    A/B update need rewritten (see [`raid_mirrored`]); the install follows
//!    the arrays' initial sync (`raid-sync`), and the OS boots with `/` on
//!    the array `root-a`, every array clean.
//! 2. A/B update to v2 into the array `root-b` and commit; a
//!    `rebuild-raid` on the healthy host is refused (no disk replaced).
//! 3. The VM is powered off, the second disk replaced by a blank image
//!    and the installer media taken out; the machine keeps its UEFI
//!    variables (`VmSpec::nvram`: NVRAM outlives a disk swap). The OS
//!    boots degraded from the first disk; `trident rebuild-raid` (live
//!    progress) partitions the new disk, re-adds its members and follows
//!    the recovery; the Host Status shows every array clean. Then the
//!    first disk fails in turn (a blank one in its place): the machine
//!    boots from the rebuilt disk alone.
//!
//! The ESP is a mirror: with GRUB each volume has one UEFI boot option per
//! member (`efibootmgr -v` on the console at every boot, checked against
//! the disks' GPTs), and `rebuild-raid` writes the rebuilt member's.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use trident_e2e::test_os::{self, TestBootloader, TestOs};
use trident_e2e::upstream_sample::{host_config_fixture, replace_lines};
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator::boot_marker::{image_boot, options_of_boot, volume_loader};
use trident_e2e::vm_orchestrator::{
    HttpServer, assert_phases, follow, installer_disk, part_uuid, start_servicing, trident_cli,
    trident_cli_output, wait_provisioned,
};
use trident_e2e::vm_rcp::GuestSocket;
use trident_proto::v1::{
    HostConfiguration, RebootHandling, RebootManagement, RebootStatus, ServicingResponse,
};

const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
const INSTALL_BOOT_TIMEOUT: Duration = Duration::from_secs(1500);

/// Our fixture of upstream's `raid-mirrored` (host/tests/fixtures/
/// host-config/raid-mirrored.yaml) for this VM: the image (`os` over
/// HTTP), the disks (`/dev/vda`, `/dev/vdb`), and what the sample cannot
/// do as it stands: its one 4 GiB root array becomes an A/B pair of
/// mirrors (`root-a`, `root-b`, 700 MiB each, the shape of upstream's
/// `raid-small` test configuration), since an A/B update needs a volume
/// pair; its 64 MiB ESP becomes 160 MiB (the test OS's ESP image is 128
/// MiB); `syncTimeout` 90 s becomes 600 s (TCG on a shared machine);
/// `os.selinux.mode` permissive becomes disabled (the boot entry carries
/// the mode's kernel arguments, and the Debian test OS has no SELinux
/// policy: with SELinux on, systemd cannot label its sockets, udev never
/// starts and no array shows up).
/// Everything else (the mirrored ESP and data volume, users, scripts,
/// netplan, UEFI fallback) is the fixture's.
fn raid_mirrored(os: &TestOs, http_port: u16) -> String {
    let fixture = host_config_fixture("raid-mirrored");
    let (url, sha) = image_lines(os, http_port);
    let part = |disk: &str, id: &str, t: &str, size: &str| {
        format!("    - {{ id: {disk}-{id}, type: {t}, size: {size}, uuid: null, label: null }}")
    };
    let roots = |disk: &str| {
        format!(
            "{}\n{}",
            part(disk, "root-a", "root", "700M"),
            part(disk, "root-b", "root", "700M")
        )
    };
    let (m1_esp, m2_esp) = (
        part("m1", "esp", "esp", "160M"),
        part("m2", "esp", "esp", "160M"),
    );
    let (m1_roots, m2_roots) = (roots("m1"), roots("m2"));
    replace_lines(
        &fixture,
        &[
            ("  url: file:///images/mirrored.cosi", &url),
            ("  sha384: ignored", &sha),
            ("    device: /dev/nvme0n1", "    device: /dev/vda"),
            ("    device: /dev/nvme1n1", "    device: /dev/vdb"),
            (
                "    - { id: m1-esp, type: esp, size: 64M, uuid: null, label: null }",
                &m1_esp,
            ),
            (
                "    - { id: m2-esp, type: esp, size: 64M, uuid: null, label: null }",
                &m2_esp,
            ),
            (
                "    - { id: m1-root, type: root, size: 4G, uuid: null, label: null }",
                &m1_roots,
            ),
            (
                "    - { id: m2-root, type: root, size: 4G, uuid: null, label: null }",
                &m2_roots,
            ),
            (
                "    - { id: root, name: root, level: raid1, devices: [m1-root, m2-root] }",
                "    - { id: root-a, name: root-a, level: raid1, devices: [m1-root-a, m2-root-a] }\n    - { id: root-b, name: root-b, level: raid1, devices: [m1-root-b, m2-root-b] }",
            ),
            ("    mode: permissive", "    mode: disabled"),
            (
                "    syncTimeout: 90",
                "    syncTimeout: 600\n  abUpdate:\n    volumePairs:\n    - { id: root, volumeAId: root-a, volumeBId: root-b }",
            ),
        ],
    )
}

/// The `url:` and `sha384:` lines of `os` served over HTTP.
fn image_lines(os: &TestOs, http_port: u16) -> (String, String) {
    let cosi = os.cosi.path.file_name().unwrap().to_string_lossy();
    (
        format!("  url: http://10.0.2.2:{http_port}/{cosi}"),
        format!("  sha384: {}", os.cosi.metadata_sha384),
    )
}

/// Every array of the configuration, clean (`md=` of the ready marker:
/// NAME:LEVEL:STATE:DEGRADED).
const ARRAYS: [&str; 4] = ["agent", "esp", "root-a", "root-b"];

/// The arrays of a ready marker's `md=NAME:LEVEL:STATE:DEGRADED,...`:
/// name → (level, state, members missing).
fn marker_arrays(line: &str) -> std::collections::BTreeMap<String, (String, String, u32)> {
    let field = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("md="))
        .unwrap_or("none");
    field
        .split(',')
        .filter(|a| !a.is_empty() && *a != "none")
        .map(|a| {
            let parts: Vec<&str> = a.split(':').collect();
            assert_eq!(parts.len(), 4, "NAME:LEVEL:STATE:DEGRADED, not {a}");
            (
                parts[0].to_owned(),
                (
                    parts[1].to_owned(),
                    parts[2].to_owned(),
                    parts[3].parse().unwrap(),
                ),
            )
        })
        .collect()
}

/// Asserts the marker shows exactly `names`, each a running raid1 missing
/// `missing` members.
fn assert_arrays(line: &str, names: &[&str], missing: u32) {
    let arrays = marker_arrays(line);
    assert_eq!(
        arrays.keys().map(String::as_str).collect::<Vec<_>>(),
        names,
        "{line}"
    );
    for (name, (level, state, degraded)) in &arrays {
        assert_eq!(level, "raid1", "{name} in {line}");
        // read-auto: assembled and not written yet (Debian's start_ro=1).
        assert!(
            ["clean", "active", "read-auto"].contains(&state.as_str()),
            "{name} running in {line}"
        );
        assert_eq!(*degraded, missing, "{name} missing members in {line}");
    }
}

/// Waits for the next ready marker; checks version, loader and root array.
async fn expect_boot(
    vm: &mut Vm,
    bootloader: TestBootloader,
    version: &str,
    volume: &str,
) -> String {
    let boot = vm
        .wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
        .await
        .unwrap();
    println!(
        "boot of {version} ({volume}) {:.1}s: {}",
        boot.duration.as_secs_f64(),
        boot.line
    );
    let line = boot.line;
    for wanted in [
        format!("version={version} "),
        volume_loader(bootloader, volume),
        format!("root-md=root-{volume} "),
        "users=mirror:mirror@lab,".to_owned(),
    ] {
        assert!(line.contains(&wanted), "{wanted} in {line}");
    }
    line
}

/// Runs a servicing RPC through the guest socket and follows it; returns
/// the phases seen.
async fn servicing<F, Fut>(vm: &mut Vm, what: &str, call: F) -> Vec<String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<
            Output = Result<tonic::Response<tonic::Streaming<ServicingResponse>>, tonic::Status>,
        >,
{
    vm.boot_clock_restart();
    let stream = start_servicing(call).await;
    let (completed, phases) = follow(what, stream).await;
    assert_eq!(completed.reboot_status(), RebootStatus::RebootStarted);
    phases
}

fn reboot() -> Option<RebootManagement> {
    Some(RebootManagement {
        handling: RebootHandling::TridentHandlesReboot as i32,
    })
}

/// The `state:` of each array in `trident get status`.
fn array_states(status: &str) -> Vec<String> {
    status
        .lines()
        .filter_map(|l| l.trim().strip_prefix("state: "))
        .map(str::to_owned)
        .collect()
}

/// One VM with two blank target disks and the test OS installer, with
/// what its steps share.
struct RaidVm {
    vm: Vm,
    name: String,
    bootloader: TestBootloader,
    disks: [PathBuf; 2],
    /// The machine's UEFI variable store, kept across power-offs.
    nvram: PathBuf,
    http: HttpServer,
    v1: TestOs,
    /// Built only for scenarios that update.
    v2: Option<TestOs>,
    artifacts: PathBuf,
    _work: tempfile::TempDir,
}

impl RaidVm {
    /// Builds the test OS (v1, and v2 if `update`), the installer disk and
    /// two blank `disk_bytes` targets, and boots the installer.
    async fn start(name: &str, update: bool, disk_bytes: u64) -> RaidVm {
        let artifacts = vm::artifacts_dir(name).unwrap();
        let work = tempfile::Builder::new()
            .prefix("trident-vm-raid-")
            .tempdir()
            .unwrap();
        let sysext = test_os::build_sysext(work.path()).unwrap();
        let bootloader = TestBootloader::from_env().unwrap();
        let v1 = test_os::build_test_os("v1", bootloader, &sysext, work.path()).unwrap();
        let v2 =
            update.then(|| test_os::build_test_os("v2", bootloader, &sysext, work.path()).unwrap());
        let installer = installer_disk(work.path(), &v1).await;
        let disks = [work.path().join("disk1.img"), work.path().join("disk2.img")];
        for disk in &disks {
            fs::File::create(disk).unwrap().set_len(disk_bytes).unwrap();
        }
        let http = HttpServer::start(work.path());
        let nvram = work.path().join("OVMF_VARS.fd");
        // Both targets blank and no boot option yet, so the firmware falls
        // through to the installer; the install's options boot the disks.
        let spec = VmSpec::new(name, &artifacts)
            .disk(&disks[0])
            .disk(&disks[1])
            .disk(&installer)
            .nvram(&nvram)
            .orchestrator(&v1.rcp);
        let mut vm = Vm::start(spec).unwrap();
        let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
        image_boot(&v1, &boot.line);
        assert!(
            boot.line.contains("md=none"),
            "no array before the install: {}",
            boot.line
        );
        RaidVm {
            vm,
            name: name.to_owned(),
            bootloader,
            disks,
            nvram,
            http,
            v1,
            v2,
            artifacts,
            _work: work,
        }
    }

    /// The guest's tridentd, answering (a local socket while the value
    /// lives).
    async fn socket(&self) -> GuestSocket {
        let guest = self.vm.forward_tridentd().unwrap();
        guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
        guest
    }

    /// Installs `config` (TRIDENT_HANDLES_REBOOT) following its progress;
    /// returns the phases seen.
    async fn install(&mut self, config: String) -> Vec<String> {
        use trident_proto::v1preview::{
            FinalizeInstallRequest, InstallRequest, StageInstallRequest,
            install_service_client::InstallServiceClient,
        };
        println!("Host Configuration of the install:\n{config}");
        let guest = self.socket().await;
        let socket = guest.path();
        let client = InstallServiceClient::new(trident_e2e::uds_channel(socket).await.unwrap());
        let request = InstallRequest {
            stage: Some(StageInstallRequest {
                config: Some(HostConfiguration { config }),
            }),
            finalize: Some(FinalizeInstallRequest { reboot: reboot() }),
        };
        servicing(&mut self.vm, "install", || {
            let (mut client, request) = (client.clone(), request.clone());
            async move { client.install(request).await }
        })
        .await
    }

    /// Step 1 and 2 (see the module docs).
    async fn mirrored_install_and_update(&mut self) {
        self.mirrored_install().await;
        self.mirrored_update().await;
    }

    /// Step 1: installs `raid-mirrored` (v1), boots A with every array
    /// clean and commits.
    async fn mirrored_install(&mut self) {
        let step = Instant::now();
        let phases = self.install(raid_mirrored(&self.v1, self.http.port)).await;
        assert_phases(
            &phases,
            &[
                "partition",
                "raid-sync",
                "write/root-a",
                "write/esp",
                "configure",
                "boot-files",
            ],
        );
        let line = expect_boot(&mut self.vm, self.bootloader, "v1", "a").await;
        assert_arrays(&line, &ARRAYS, 0);
        self.assert_esp_options(&line, "AZLA", [Some(&self.disks[0]), Some(&self.disks[1])]);
        let serial = self.vm.serial();
        assert!(
            serial.contains("TRIDENT-TEST-OS-MDSTAT md") && serial.contains("active raid1"),
            "/proc/mdstat on the serial console"
        );
        let command_line = serial
            .lines()
            .rfind(|l| l.contains("Command line: "))
            .unwrap_or_default();
        assert!(
            command_line.contains(" root=/dev/md/root-a rw ")
                && command_line.contains(" selinux=0"),
            "the volume's kernel command line: {command_line}"
        );
        let guest = self.socket().await;
        let socket = guest.path();
        let status = wait_provisioned(socket).await;
        assert!(status.contains("abActiveVolume: volume-a"), "{status}");
        assert!(status.contains("raidArrays:"), "{status}");
        assert_eq!(array_states(&status), ["clean"; 4], "{status}");
        println!(
            "timing: step 1 (install on RAID, boot A, commit) {:.1}s",
            step.elapsed().as_secs_f64()
        );
    }

    /// Step 2: A/B update to v2 on the arrays, boot B, commit; then a
    /// `rebuild-raid` with nothing replaced is refused.
    async fn mirrored_update(&mut self) {
        use trident_proto::v1::{
            FinalizeUpdateRequest, StageUpdateRequest, UpdateRequest,
            update_service_client::UpdateServiceClient,
        };
        let step = Instant::now();
        let guest = self.socket().await;
        let socket = guest.path();
        let v2 = self.v2.as_ref().expect("built for the update");
        let client = UpdateServiceClient::new(trident_e2e::uds_channel(socket).await.unwrap());
        let request = UpdateRequest {
            stage: Some(StageUpdateRequest {
                config: Some(HostConfiguration {
                    config: raid_mirrored(v2, self.http.port),
                }),
            }),
            finalize: Some(FinalizeUpdateRequest { reboot: reboot() }),
        };
        let phases = servicing(&mut self.vm, "update to v2", || {
            let (mut client, request) = (client.clone(), request.clone());
            async move { client.update(request).await }
        })
        .await;
        assert_phases(
            &phases,
            &["write/root-b", "configure", "boot-files", "finalize"],
        );
        assert!(
            !phases.iter().any(|p| p == "partition" || p == "raid-sync"),
            "{phases:?}"
        );
        let line = expect_boot(&mut self.vm, self.bootloader, "v2", "b").await;
        self.assert_esp_options(&line, "AZLB", [Some(&self.disks[0]), Some(&self.disks[1])]);
        let guest = self.socket().await;
        let socket = guest.path();
        let status = wait_provisioned(socket).await;
        assert!(status.contains("abActiveVolume: volume-b"), "{status}");
        // Nothing to rebuild on a healthy host: refused, nothing touched.
        let (code, out, err) =
            trident_cli_output(socket, &["rebuild-raid", "--progress", "plain"]).await;
        let all = format!("{out}{err}");
        assert_ne!(code, Some(0), "{all}");
        assert!(all.contains("validate-rebuild-raid"), "{all}");
        assert!(all.contains("No disk was replaced"), "{all}");
        assert_eq!(
            array_states(&trident_cli(socket, &["get", "status"]).await),
            ["clean"; 4]
        );
        println!(
            "timing: step 2 (update to v2 on RAID, boot B, commit) {:.1}s",
            step.elapsed().as_secs_f64()
        );
    }

    /// The installed machine (no installer media) with `disks`, its NVRAM
    /// kept: booted as `name`.
    fn boot_installed(&mut self, name: &str, disks: &[&Path]) {
        self.vm.stop();
        let mut spec = VmSpec::new(name, &self.artifacts);
        for disk in disks {
            spec = spec.disk(disk);
        }
        self.vm = Vm::start(spec.nvram(&self.nvram).orchestrator(&self.v1.rcp)).unwrap();
    }

    /// GRUB: the boot whose marker is `line` had one option labelled
    /// `label` per ESP mirror member present: on the `m1-esp` / `m2-esp`
    /// partitions of `disks` (read from their GPTs on the host), `None`
    /// for a disk not attached at that boot (OVMF deletes the options
    /// whose `HD()` no attached disk has when it boots).
    fn assert_esp_options(&self, line: &str, label: &str, disks: [Option<&Path>; 2]) {
        if self.bootloader != TestBootloader::Grub {
            return; // systemd-boot boots through the fallback path
        }
        let mut wanted: Vec<String> = disks
            .iter()
            .zip(["m1-esp", "m2-esp"])
            .filter_map(|(disk, member)| disk.map(|d| part_uuid(d, member)))
            .collect();
        wanted.sort();
        let options = options_of_boot(&self.vm.serial(), line, label);
        let mut guids: Vec<String> = options.iter().map(|(_, g)| g.clone()).collect();
        guids.sort();
        assert_eq!(
            guids, wanted,
            "{label}: one option per ESP member: {options:?}"
        );
        println!("{label}: options {options:?}");
    }

    /// Step 3 (see the module docs).
    async fn replace_disk_and_rebuild(&mut self) {
        let step = Instant::now();
        let blank = |path: &Path| {
            fs::File::create(path)
                .unwrap()
                .set_len(MIRRORED_DISK_BYTES)
                .unwrap();
        };
        self.vm.stop();
        fs::remove_file(&self.disks[1]).unwrap();
        blank(&self.disks[1]);
        let disks = self.disks.clone();
        self.boot_installed(&format!("{}-degraded", self.name), &[&disks[0], &disks[1]]);
        let line = expect_boot(&mut self.vm, self.bootloader, "v2", "b").await;
        assert_arrays(&line, &ARRAYS, 1);
        // B booted through its option on the first ESP member; OVMF
        // deleted the options on the blank disk.
        self.assert_esp_options(&line, "AZLB", [Some(&disks[0]), None]);
        let guest = self.socket().await;
        let socket = guest.path();
        let status = trident_cli(socket, &["get", "status"]).await;
        assert_eq!(
            array_states(&status),
            ["degraded (1 missing)"; 4],
            "{status}"
        );
        let rebuild = Instant::now();
        let (code, out, err) =
            trident_cli_output(socket, &["rebuild-raid", "--progress", "plain"]).await;
        println!(
            "trident rebuild-raid ({:.1}s):\n{out}{err}",
            rebuild.elapsed().as_secs_f64()
        );
        assert_eq!(code, Some(0), "{out}{err}");
        // Live progress of the recovery (raid-recovery): percentages on
        // the way, then its end; no "nothing changed".
        let all = format!("{out}{err}");
        let recovery = "phase Recover the RAID arrays onto the new disks: ";
        assert!(
            all.lines().any(|l| l
                .split(recovery)
                .nth(1)
                .is_some_and(|rest| rest.contains('%') && !rest.starts_with("100%"))),
            "live progress of the recovery: {all}"
        );
        assert!(all.contains(&format!("{recovery}done")), "{all}");
        assert!(
            all.contains("boot options of the rebuilt ESP mirror")
                || self.bootloader != TestBootloader::Grub,
            "{all}"
        );
        assert!(!all.contains("nothing changed"), "{all}");
        let status = trident_cli(socket, &["get", "status"]).await;
        println!("Host Status after rebuild-raid:\n{status}");
        assert_eq!(array_states(&status), ["clean"; 4], "{status}");
        let new_guid = {
            use std::os::unix::fs::FileExt;
            let mut head = vec![0u8; 34 * 512];
            fs::File::open(&self.disks[1])
                .unwrap()
                .read_exact_at(&mut head, 0)
                .unwrap();
            trident_cosi::gpt::Gpt::parse_primary(&head, 512)
                .unwrap()
                .disk_guid
                .to_string()
        };
        assert!(
            status.contains(&new_guid),
            "the new disk's GUID in diskUuids: {status}"
        );
        drop(guest);
        println!(
            "timing: step 3 (degraded boot, rebuild-raid) {:.1}s",
            step.elapsed().as_secs_f64()
        );

        // The first disk fails in turn: the rebuilt one boots alone (its
        // ESP member, and with GRUB its own boot option, written by
        // rebuild-raid).
        let step = Instant::now();
        let failed = self.disks[0].with_extension("failed");
        blank(&failed);
        self.boot_installed(
            &format!("{}-rebuilt-disk", self.name),
            &[&failed, &disks[1]],
        );
        let line = expect_boot(&mut self.vm, self.bootloader, "v2", "b").await;
        assert_arrays(&line, &ARRAYS, 1);
        // The rebuilt member's options (written by rebuild-raid) booted
        // B; the first disk's options are gone (OVMF deleted them at this
        // boot, their disk being blank).
        self.assert_esp_options(&line, "AZLB", [None, Some(&disks[1])]);
        self.assert_esp_options(&line, "AZLA", [None, Some(&disks[1])]);
        println!(
            "timing: step 3b (boot from the rebuilt disk alone) {:.1}s",
            step.elapsed().as_secs_f64()
        );
    }

    fn stop(mut self) {
        self.vm.stop();
        println!("serial logs kept in {}", self.artifacts.display());
    }
}

/// Each target disk of `raid-mirrored`: its partitions (1688 MiB) and room.
const MIRRORED_DISK_BYTES: u64 = 2 << 30;

/// Step 1 alone, the CI scenario (`scripts/test.sh`): upstream's
/// `raid-mirrored` sample installs and boots with every array clean. The
/// update and the rebuild are the matrix's (`raid-mirrored`,
/// `rebuild-raid`): within the test command's VM budget, every sample
/// installs and boots (tests/README.md, "The test command's VM budget").
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section"]
async fn upstreams_raid_mirrored_sample_installs_and_boots_with_every_array_clean() {
    let mut s = RaidVm::start("raid-mirrored-install", false, MIRRORED_DISK_BYTES).await;
    s.mirrored_install().await;
    s.stop();
}

/// Steps 1-3 (`rebuild-raid` in `scripts/vm-matrix.sh`).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/vm-matrix.sh"]
async fn matrix_a_two_disk_vm_installs_on_mirrors_updates_on_them_and_rebuilds_a_replaced_disk() {
    let started = Instant::now();
    let mut s = RaidVm::start("raid", true, MIRRORED_DISK_BYTES).await;
    s.mirrored_install_and_update().await;
    s.replace_disk_and_rebuild().await;
    println!(
        "timing: RAID scenario {:.1}s",
        started.elapsed().as_secs_f64()
    );
    s.stop();
}

/// Steps 1-2 alone (`raid-mirrored` in `scripts/vm-matrix.sh`).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/vm-matrix.sh"]
async fn matrix_raid_mirrored_installs_on_mirrors_and_updates_on_them() {
    let mut s = RaidVm::start("raid-mirrored", true, MIRRORED_DISK_BYTES).await;
    s.mirrored_install_and_update().await;
    s.stop();
}

/// Step 4 (`raid` in `scripts/vm-matrix.sh`): our fixture of upstream's
/// `raid` sample (root on a RAID1 mirror, the ESP on the first disk only,
/// swap on both) installs and boots. Rewritten: the image, the disks, the
/// ESP (64 MiB → 160 MiB: the test OS's ESP image is 128 MiB), the root
/// members (5 GiB → 1 GiB: a TCG VM's disks and resync time) and
/// `syncTimeout` (60 → 600 s), `os.selinux.mode` (permissive → disabled).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section (vm-matrix.sh raid)"]
async fn upstreams_raid_sample_installs_and_boots_with_root_on_a_mirror() {
    let mut s = RaidVm::start("raid-sample", false, 2 << 30).await;
    let fixture = host_config_fixture("raid");
    let (url, sha) = image_lines(&s.v1, s.http.port);
    let config = replace_lines(
        &fixture,
        &[
            ("  url: file:///images/raid.cosi", &url),
            ("  sha384: ignored", &sha),
            ("    device: /dev/sdb", "    device: /dev/vda"),
            ("    device: /dev/sdc", "    device: /dev/vdb"),
            (
                "    - { id: d1-esp, type: esp, size: 64M, uuid: null, label: null }",
                "    - { id: d1-esp, type: esp, size: 160M, uuid: null, label: null }",
            ),
            (
                "    - { id: d2-esp, type: esp, size: 64M, uuid: null, label: null }",
                "    - { id: d2-esp, type: esp, size: 160M, uuid: null, label: null }",
            ),
            (
                "    - { id: d1-root, type: root, size: 5G, uuid: null, label: null }",
                "    - { id: d1-root, type: root, size: 1G, uuid: null, label: null }",
            ),
            (
                "    - { id: d2-root, type: root, size: 5G, uuid: null, label: null }",
                "    - { id: d2-root, type: root, size: 1G, uuid: null, label: null }",
            ),
            ("    syncTimeout: 60", "    syncTimeout: 600"),
            // No SELinux policy in the test OS (see `raid_mirrored`).
            ("    mode: permissive", "    mode: disabled"),
        ],
    );
    let phases = s.install(config).await;
    assert_phases(
        &phases,
        &[
            "partition",
            "raid-sync",
            "write/md-root",
            "write/d1-esp",
            "boot-files",
        ],
    );
    let boot =
        s.vm.wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
            .await
            .unwrap();
    for wanted in [
        "version=v1 ".to_owned(),
        volume_loader(s.bootloader, "a"),
        "root-md=md-root ".to_owned(),
        "users=raider:raider@lab,".to_owned(),
    ] {
        assert!(boot.line.contains(&wanted), "{wanted} in {}", boot.line);
    }
    assert_arrays(&boot.line, &["md-root"], 0);
    let status = wait_provisioned(s.socket().await.path()).await;
    assert_eq!(array_states(&status), ["clean"], "{status}");
    s.stop();
}
