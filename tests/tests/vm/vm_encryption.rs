//! Encrypted volumes sealed to a TPM 2.0 in a UEFI VM (issue 24), driven
//! as an orchestrator drives a host: through the reverse-connect proxy,
//! the public gRPC API and the real `trident` CLI. dm-crypt exists only in
//! the guest (this machine's kernel has none), and the TPM is the VM's
//! software TPM (`VmSpec::tpm`: swtpm, which OVMF measures the boot into).
//! `#[ignore]`d in the plain run; `scripts/vm-matrix.sh encryption` runs
//! it. Serial logs stay in `target/vm-artifacts/encryption/`.
//!
//! The installer (the test OS on the second disk, systemd-boot) installs
//! our fixture of upstream's `encryption` sample (`/srv` on a LUKS2 volume
//! sealed to PCR 7) with the devices and the image rewritten for this VM
//! (see [`encryption_config`]), plus what proving the recovery key takes:
//! a `recoveryKeyUrl`, a preServicing script that makes that key file
//! (random bytes, 0400, on the installer) and a postProvision script that
//! opens the new volume with it (and fails with a wrong key), has the TPM
//! unseal it, and prints the new root's crypttab and the key slots. The
//! installed OS then boots with `/srv` unlocked by the TPM alone (nothing
//! types a passphrase on a serial console) and mounted (the ready marker's
//! `crypt=srv:active:/srv`), and its Host Status records the volume.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::Path;
use std::time::Duration;

use trident_e2e::mini_os;
use trident_e2e::test_os::TestOs;
use trident_e2e::upstream_sample::{host_config_fixture, replace_lines};
use trident_e2e::vm::{self, READY_MARKER, Vm, VmSpec};
use trident_e2e::vm_orchestrator::{
    HttpServer, InstallerWork, install_following, trident_cli, wait_provisioned,
};

const BOOT_TIMEOUT: Duration = Duration::from_secs(600);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(180);
const INSTALL_BOOT_TIMEOUT: Duration = Duration::from_secs(1500);

/// Where the installer's preServicing script puts the recovery key.
const RECOVERY_KEY: &str = "/root/recovery.key";

/// The scripts that make and prove the recovery key (see the module docs).
fn recovery_key_scripts() -> String {
    format!(
        r#"scripts:
  preServicing:
  - name: make-recovery-key
    runOn: [clean-install]
    content: |
      set -e
      umask 077
      # Random bytes, as upstream's docs make them; base64 text here, so the
      # test can look for the key in what the daemon shows.
      head -c 48 /dev/urandom | base64 -w0 > {RECOVERY_KEY}
      chmod 0400 {RECOVERY_KEY}
      echo "RECOVERY-KEY-MADE $(stat -c '%s bytes, mode %a' {RECOVERY_KEY})"
  postProvision:
  - name: prove-recovery-key
    runOn: [clean-install]
    content: |
      set -e
      dev=$(cryptsetup status srv | awk '$1 == "device:" {{ print $2 }}')
      # Keys only: cryptsetup open tries the TPM token first otherwise.
      keys_only="--test-passphrase --disable-external-tokens"
      cryptsetup open $keys_only --key-file {RECOVERY_KEY} "$dev"
      echo "RECOVERY-KEY-OPENS srv on $dev"
      head -c 64 /dev/urandom > /tmp/wrong.key
      if cryptsetup open $keys_only --key-file /tmp/wrong.key "$dev"; then
        echo "a wrong key opened srv" >&2; exit 1
      fi
      echo "WRONG-KEY-REFUSED"
      cryptsetup open --test-passphrase --token-only "$dev"
      echo "TPM-UNSEALS srv"
      echo "KEYSLOTS $(cryptsetup luksDump "$dev" | grep -cE '^ +[0-9]+: luks2')"
      echo "TPM-TOKENS $(cryptsetup luksDump "$dev" | grep -cE '^ +[0-9]+: systemd-tpm2')"
      sed 's/^/CRYPTTAB /' "$TARGET_ROOT/etc/crypttab"
"#
    )
}

/// Our fixture of upstream's `encryption` sample
/// (host/tests/fixtures/host-config/encryption.yaml) for this VM: the
/// image (`os` over HTTP), the disks (`/dev/vda`; the sample's second,
/// empty disk `/dev/vdc`), the ESP 160 MiB instead of 64 (the test OS's
/// ESP image is 128 MiB), the SELinux mode `disabled` (the test OS has no
/// policy), and the recovery key (a `recoveryKeyUrl` and the scripts
/// before the sample's own). The volume, its PCR, the filesystems, swap,
/// users, netplan and UEFI fallback are the sample's.
fn encryption_config(os: &TestOs, http_port: u16) -> String {
    let fixture = host_config_fixture("encryption");
    let cosi = os.cosi.path.file_name().unwrap().to_string_lossy();
    let scripts = recovery_key_scripts();
    replace_lines(
        &fixture,
        &[
            (
                "  url: file:///images/encrypted.cosi",
                &format!("  url: http://10.0.2.2:{http_port}/{cosi}"),
            ),
            (
                "  sha384: ignored",
                &format!("  sha384: {}", os.cosi.metadata_sha384),
            ),
            ("    device: /dev/sdd", "    device: /dev/vda"),
            ("    device: /dev/sde", "    device: /dev/vdc"),
            (
                "    - { id: efi, type: esp, size: 64M, uuid: null, label: null }",
                "    - { id: efi, type: esp, size: 160M, uuid: null, label: null }",
            ),
            (
                "  encryption:",
                &format!("  encryption:\n    recoveryKeyUrl: file://{RECOVERY_KEY}"),
            ),
            // The sample's postConfigure script follows ours.
            ("scripts:", scripts.trim_end()),
            // The Debian test OS has no SELinux policy: booted with
            // `selinux=1` (what permissive puts on the command line),
            // systemd cannot label udev's sockets, udev never runs and no
            // /dev/disk/by-* link (the volume's by-uuid) ever appears.
            ("    mode: permissive", "    mode: disabled"),
        ],
    )
}

/// The `crypt=` field of a ready marker.
fn crypt_field(line: &str) -> &str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix("crypt="))
        .unwrap_or("missing")
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "boots a UEFI VM for minutes: run by scripts/test.sh's VM section (vm-matrix.sh encryption)"]
async fn upstreams_encryption_sample_installs_and_boots_with_srv_unlocked_by_the_tpm() {
    let started = std::time::Instant::now();
    let artifacts = vm::artifacts_dir("encryption").unwrap();
    let work = InstallerWork::build("trident-vm-encryption-", &["v1"]).await;
    let v1 = &work.versions[0];
    // Sparse: the sample's partitions add up to 5.4 GiB.
    let target = work.blank_disk("target.img", 6 << 30);
    let spare = work.blank_disk("spare.img", 64 << 20);

    // Target first: blank, so the firmware falls through to the installer;
    // once installed, it boots first.
    let mut vm = Vm::start(
        VmSpec::new("encryption", &artifacts)
            .disk(&target)
            .disk(&work.installer)
            .disk(&spare)
            .tpm()
            .orchestrator(&v1.rcp),
    )
    .unwrap();
    let boot = vm.wait_for_boot(READY_MARKER, BOOT_TIMEOUT).await.unwrap();
    println!("installer: {}", boot.line);
    assert!(
        boot.line.contains("tpm=tpmrm0"),
        "the installer's TPM: {}",
        boot.line
    );

    let http = HttpServer::start(work.dir.path());
    let config = encryption_config(v1, http.port);
    let logs = install_following(&mut vm, config, Some("script::prove-recovery-key"))
        .await
        .logs;
    for wanted in [
        "RECOVERY-KEY-OPENS srv",
        "WRONG-KEY-REFUSED",
        "TPM-UNSEALS srv",
        // The recovery key's slot and the TPM's; the temporary key is gone.
        "KEYSLOTS 2",
        "TPM-TOKENS 1",
        "luks,tpm2-device=auto",
    ] {
        assert!(
            logs.iter().any(|l| l.contains(wanted)),
            "{wanted} in the postProvision script's output: {logs:#?}"
        );
    }

    let boot = vm
        .wait_for_boot(READY_MARKER, INSTALL_BOOT_TIMEOUT)
        .await
        .unwrap();
    println!("installed OS: {}", boot.line);
    assert!(boot.line.contains("version=v1 "), "{}", boot.line);
    assert!(boot.line.contains("tpm=tpmrm0"), "{}", boot.line);
    assert_eq!(
        crypt_field(&boot.line),
        "srv:active:/srv,",
        "/srv unlocked by the TPM and mounted: {}",
        boot.line
    );
    let serial = vm.serial();
    assert!(
        !serial.contains("Please enter passphrase"),
        "a passphrase was asked for on the console"
    );

    let guest = vm.forward_tridentd().unwrap();
    guest.wait_until_answering(ANSWER_TIMEOUT).await.unwrap();
    let status = wait_provisioned(guest.path()).await;
    for wanted in [
        "encryptedVolumes:",
        "deviceName: srv",
        "deviceId: secret",
        "recoveryKey: true",
    ] {
        assert!(
            status.contains(wanted),
            "{wanted} in the Host Status:\n{status}"
        );
    }
    let configuration = trident_cli(guest.path(), &["get", "configuration"]).await;
    assert!(
        configuration.contains(&format!("recoveryKeyUrl: file://{RECOVERY_KEY}")),
        "{configuration}"
    );

    // The recovery key is nowhere the orchestrator can read: the Host
    // Status, the configuration, the installed OS's log records (the
    // install's among them: the datastore and journal handed over) and a
    // diagnose bundle. The key itself is read from the installer's disk
    // once the VM is off.
    let bundle = work.dir.path().join("bundle.tar");
    trident_cli(
        guest.path(),
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap(),
            "--operations",
            "10",
        ],
    )
    .await;
    let records = trident_cli(guest.path(), &["logs", "-v", "TRACE"]).await;
    println!(
        "timing: encryption scenario {:.1}s",
        started.elapsed().as_secs_f64()
    );
    vm.stop();
    println!("serial log kept at {}", vm.serial_log().display());
    let key = mini_os::ext4_file(&work.installer, "root", RECOVERY_KEY);
    assert_eq!(key.len(), 64, "the recovery key file: {key:?}");
    let unpacked = work.dir.path().join("bundle");
    fs::create_dir(&unpacked).unwrap();
    mini_os::sh(
        std::process::Command::new("tar")
            .arg("-xf")
            .arg(&bundle)
            .arg("-C")
            .arg(&unpacked),
    );
    let mut seen = vec![
        ("the Host Status".to_owned(), status),
        ("the configuration".to_owned(), configuration),
        ("trident logs".to_owned(), records),
    ];
    for entry in walkdir(&unpacked) {
        let text = String::from_utf8_lossy(&fs::read(&entry).unwrap()).into_owned();
        seen.push((format!("bundle file {}", entry.display()), text));
    }
    assert!(seen.len() > 3, "an empty diagnose bundle");
    for (place, text) in &seen {
        assert!(!text.contains(key.as_str()), "the recovery key in {place}");
    }
}

/// Every file under `dir`.
fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walkdir(&path));
        } else {
            files.push(path);
        }
    }
    files
}
