//! A dm-verity root in a UEFI VM (issue 24): upstream's `verity` sample
//! installed from an installer VM, booted with `/` on `/dev/mapper/root`
//! verified by the kernel, then corrupted on the host side and booted
//! again. dm-verity exists only in the guest (this machine's kernel has
//! none). `#[ignore]`d in the plain run; `scripts/vm-matrix.sh verity` runs
//! it. Serial logs stay in `target/vm-artifacts/verity/`.
//!
//! The installer is the plain test OS; the image it installs is the verity
//! test OS (`build_verity_test_os`: ESP, `/boot`, a root packed
//! `verity=yes`, `/var`), whose initrd opens the root from the kernel
//! arguments tridentd writes and mounts the `/etc` overlay of
//! `rd.overlayfs=`, and whose probe prints on each boot what the booted OS
//! sees (`TRIDENT-TEST-OS-VERITY ...`: see
//! tests/vm/verity/guest/usr/local/sbin/trident-test-verity).
//!
//! 1. Install and boot: `veritysetup status root` says verified, `/` is
//!    mounted read-only from `/dev/mapper/root` and a write to it fails
//!    with EROFS, `/etc` is an overlay and a file written there lands on
//!    the overlay's partition; the kernel's command line carries the
//!    COSI's root hash and the data, hash and overlay partitions, and the
//!    Host Status records that root hash for volume A.
//! 2. The VM off, one byte of the root's data partition flipped inside the
//!    canary file's blocks (found by its unique pattern), booted again:
//!    the OS boots (`corruptionOption: io-error`), reading the canary fails
//!    with an I/O error, `veritysetup status` says corrupted and the kernel
//!    logs the corrupted block; the `/etc` file of the first boot is
//!    still there.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use trident_e2e::mini_os;
use trident_e2e::test_os::{self, TestBootloader, TestOs};
use trident_e2e::upstream_sample::upstream_sample;
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator::{
    self, HttpServer, install_following, installer_disk, wait_provisioned,
};

const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const INSTALL_BOOT_TIMEOUT: Duration = Duration::from_secs(1500);
/// The verity test OS's probe line (printed before the ready marker).
const VERITY_MARKER: &str = "TRIDENT-TEST-OS-VERITY ";

/// Upstream's `verity` sample (host/tests/fixtures/upstream-samples/
/// verity.yaml, as upstream generates it) for this VM: the disk
/// (`/dev/vda`), the image (`os` over HTTP) and the ESP 160 MiB instead of
/// 64 (the test OS's ESP image is 128 MiB). Everything else is the
/// sample's: the partitions, the verity device with `io-error`, the
/// filesystems (/boot and /var from the image, the overlay's, /home),
/// its postConfigure script, users, netplan and UEFI fallback.
fn verity_config(os: &TestOs, http_port: u16) -> String {
    let sample = upstream_sample("verity");
    let cosi = os.cosi.path.file_name().unwrap().to_string_lossy();
    let mut config = sample;
    for (old, new) in [
        (
            "    device: /dev/disk/by-path/pci-0000:00:1f.2-ata-2.0\n",
            "    device: /dev/vda\n".to_owned(),
        ),
        (
            "      type: esp\n      size: 64M\n",
            "      type: esp\n      size: 160M\n".to_owned(),
        ),
        (
            "  url: file:///path/to/verity_image.cosi\n",
            format!("  url: http://10.0.2.2:{http_port}/{cosi}\n"),
        ),
    ] {
        assert_eq!(config.matches(old).count(), 1, "{old:?} once in the sample");
        config = config.replacen(old, &new, 1);
    }
    // The sample's sha384 is of its own placeholder image.
    let sha = config
        .lines()
        .find(|l| l.starts_with("  sha384: "))
        .unwrap()
        .to_owned();
    config.replacen(&sha, &format!("  sha384: {}", os.cosi.metadata_sha384), 1)
}

/// `key=value` of a probe line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|w| w.strip_prefix('=')))
        .unwrap_or("missing")
}

/// Asserts each `(key, value)` of the probe `line`.
fn assert_probe(line: &str, wanted: &[(&str, &str)]) {
    for (key, value) in wanted {
        assert_eq!(field(line, key), *value, "{key} in the probe: {line}");
    }
}

/// Flips one byte inside the first occurrence of `pattern` within the
/// first `limit` bytes of the partition at `offset` of `disk`; returns the
/// byte's offset in the partition.
fn flip_byte_in(disk: &Path, offset: u64, limit: u64, pattern: &[u8]) -> u64 {
    const CHUNK: usize = 4 << 20;
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(disk)
        .unwrap();
    let mut buf = vec![0u8; CHUNK + pattern.len()];
    let mut at = 0u64;
    while at < limit {
        let n = file.read_at(&mut buf, offset + at).unwrap();
        if let Some(i) = buf[..n].windows(pattern.len()).position(|w| w == pattern) {
            let target = at + i as u64;
            let mut byte = [0u8];
            file.read_exact_at(&mut byte, offset + target).unwrap();
            file.write_all_at(&[byte[0] ^ 0x01], offset + target)
                .unwrap();
            file.sync_all().unwrap();
            return target;
        }
        at += CHUNK as u64;
    }
    panic!(
        "{} not found in the data partition's first {limit} bytes",
        String::from_utf8_lossy(pattern)
    );
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section (vm-matrix.sh verity)"]
async fn upstreams_verity_sample_boots_a_verified_read_only_root_and_a_flipped_byte_fails_its_reads()
 {
    let started = std::time::Instant::now();
    let artifacts = vm::artifacts_dir("verity").unwrap();
    let work = tempfile::Builder::new()
        .prefix("trident-vm-verity-")
        .tempdir()
        .unwrap();
    let dir = work.path();
    let sysext = test_os::build_sysext(dir).unwrap();
    let bootloader = TestBootloader::from_env().unwrap();
    let installer_os = test_os::build_test_os("installer", bootloader, &sysext, dir).unwrap();
    let v1 = test_os::build_verity_test_os("v1", bootloader, &sysext, dir).unwrap();
    let verity = v1.verity.clone().unwrap();
    let installer = installer_disk(dir, &installer_os).await;
    // Sparse: the sample's partitions (the ESP at 160M) add up to 11.3 GiB.
    let target = vm_orchestrator::blank_disk(dir, "target.img", 12 << 30);
    let nvram = dir.join("OVMF_VARS.fd");
    let spec = VmSpec::new("verity", &artifacts)
        .disk(&target)
        .disk(&installer)
        .nvram(&nvram)
        .orchestrator(&installer_os.rcp);
    let mut vm = Vm::start(spec.clone()).unwrap();
    let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    println!("installer: {}", boot.line);

    let http = HttpServer::start(dir);
    let config = verity_config(&v1, http.port);
    install_following(&mut vm, config, None).await;

    // 1. The installed OS on its verity root.
    let probe = vm
        .wait_for_serial(VERITY_MARKER, INSTALL_BOOT_TIMEOUT)
        .await
        .unwrap();
    let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    println!("installed OS: {probe}\n{}", boot.line);
    assert!(boot.line.contains("version=v1 "), "{}", boot.line);
    assert_probe(
        &probe,
        &[
            ("status", "verified"),
            ("root-source", "/dev/mapper/root"),
            ("root-opts", "ro"),
            ("root-write", "erofs"),
            ("etc", "overlay"),
            ("etc-boots", "1"),
            ("canary", "ok"),
            ("corrupted-logs", "0"),
        ],
    );
    let serial = vm.serial();
    assert!(
        serial.contains("TRIDENT-TEST-OS-VERITY-STATUS /dev/mapper/root is active"),
        "veritysetup status root on the console"
    );
    let guest = vm.forward_tridentd().unwrap();
    guest
        .wait_until_answering(Duration::from_secs(180))
        .await
        .unwrap();
    let status = wait_provisioned(guest.path()).await;
    println!("Host Status:\n{status}");
    vm.stop();
    let root_hash = mini_os::cosi_verity_root_hash(&v1.cosi.path, "/");
    let recorded = status
        .split_once("verityRootHashes:")
        .map(|(_, rest)| rest.lines().take(3).collect::<Vec<_>>().join("\n"))
        .expect("verityRootHashes in the Host Status");
    assert!(
        recorded.contains("volume-a:") && recorded.contains(&format!("/: {root_hash}")),
        "the root hash of volume A's / in the Host Status: {recorded}"
    );

    // The kernel's command line, as tridentd wrote it for the installed OS.
    let part = |name: &str| mini_os::partition(&target, name);
    let cmdline = serial
        .lines()
        .rfind(|l| l.contains("Command line:") && l.contains("roothash="))
        .expect("the installed OS's kernel command line on the console")
        .to_owned();
    for wanted in [
        "root=/dev/mapper/root ro ".to_owned(),
        "rd.systemd.verity=1".to_owned(),
        format!("roothash={root_hash}"),
        format!(
            "systemd.verity_root_data=PARTUUID={}",
            part("root-data").part_uuid
        ),
        format!(
            "systemd.verity_root_hash=PARTUUID={}",
            part("root-hash").part_uuid
        ),
        format!(
            "rd.overlayfs=etc,etc/upper,etc/work,/dev/disk/by-partuuid/{}",
            part("trident-overlay").part_uuid
        ),
    ] {
        assert!(cmdline.contains(&wanted), "{wanted} in {cmdline}");
    }
    // The /etc write landed on the overlay's own partition.
    let boots = mini_os::ext4_file_after_power_off(
        &target,
        "trident-overlay",
        "/etc/upper/trident-verity-boots",
        dir,
    );
    assert_eq!(boots.trim(), "1");

    // 2. One byte of the canary flipped on the data partition.
    let data = part("root-data");
    let root_len = fs::metadata(&v1.root_image).unwrap().len();
    let flipped = flip_byte_in(
        &target,
        data.offset,
        root_len.min(data.size),
        verity.canary_pattern.as_bytes(),
    );
    println!(
        "flipped the byte at {flipped} of root-data (in {})",
        verity.canary
    );
    let mut vm = Vm::start(spec.renamed("verity-corrupted")).unwrap();
    let probe = vm
        .wait_for_serial(VERITY_MARKER, BOOT_TIMEOUT)
        .await
        .unwrap();
    let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    println!("corrupted: {probe}\n{}", boot.line);
    assert!(boot.line.contains("version=v1 "), "{}", boot.line);
    assert_probe(
        &probe,
        &[
            ("status", "corrupted"),
            ("root-source", "/dev/mapper/root"),
            ("root-write", "erofs"),
            ("etc", "overlay"),
            ("etc-boots", "2"),
            ("canary", "Input/output_error"),
        ],
    );
    assert_ne!(field(&probe, "corrupted-logs"), "0", "{probe}");
    let serial = vm.serial();
    let dmesg: Vec<&str> = serial
        .lines()
        .filter(|l| l.contains("TRIDENT-TEST-OS-VERITY-DMESG"))
        .collect();
    assert!(
        dmesg.iter().any(|l| l.contains("is corrupted")),
        "the kernel's dm-verity lines: {dmesg:#?}"
    );
    vm.stop();
    println!(
        "timing: verity scenario {:.1}s",
        started.elapsed().as_secs_f64()
    );
}
