//! The encryption layer's parts that run on any Linux host: the recovery
//! key file's checks, the temporary key, LUKS2 formatting through a loop
//! device and the TPM 2.0 enrolment into a software TPM (swtpm, through
//! its TCTI: cryptsetup and systemd-cryptenroll need no dm-crypt for the
//! header; opening a volume does, and cryptsetup's TPM token wants a
//! kernel TPM device: both happen in the VM scenarios), and which mappings
//! a re-install closes. How a recorded volume resolves is in
//! `block_device::tests`.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs::{self, File, Permissions};
use std::os::unix::fs::PermissionsExt;

use trident_host::Subkind;
use trident_host::config::HostConfiguration;
use trident_host::status::HostStatus;

use super::luks::{self, LoopNode, TempKey};
use super::{check_recovery_key_file, mapping_names};

#[test]
fn close_looks_at_the_recorded_and_the_configured_mappings() {
    let hc = trident_host::config::parse(
        r#"
image: { url: "file:///img.cosi", sha384: ignored }
storage:
  disks:
  - id: os
    device: /tmp/disk.img
    partitionTableType: gpt
    partitions:
    - { id: root, type: root, size: 16M }
    - { id: secret, type: linux-generic, size: 32M }
  encryption:
    pcrs: [7]
    volumes:
    - { id: srv-crypt, deviceName: srv, deviceId: secret }
  filesystems:
  - { deviceId: root, mountPoint: / }
"#,
    )
    .unwrap();
    let mut status = HostStatus::default();
    status.encrypted_volumes.insert(
        "srv-crypt".into(),
        trident_host::status::EncryptedVolumeStatus {
            device_name: "old-srv".into(),
            device_id: "secret".into(),
            luks_uuid: "0b9c6a8e-3f0e-4f5c-9d3a-2c1f0e9b8a7d".into(),
            size: 16 << 20,
            pcrs: vec![7],
            recovery_key: false,
        },
    );
    assert_eq!(mapping_names(&hc, &status), ["old-srv", "srv"]);
    assert!(mapping_names(&HostConfiguration::default(), &HostStatus::default()).is_empty());
}

#[test]
fn the_recovery_key_file_must_be_a_non_empty_file_only_its_owner_reaches() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("recovery.key");
    let path = key.to_str().unwrap();
    let refusal = |what: &str| {
        let err = check_recovery_key_file(path).unwrap_err();
        assert_eq!(err.subkind(), Subkind::InvalidRecoveryKeyFile, "{what}");
        assert!(
            err.message()
                .starts_with("Host Configuration key 'storage.encryption.recoveryKeyUrl'"),
            "{}",
            err.message()
        );
        err.message().to_owned()
    };
    assert!(refusal("missing").contains("cannot be read"));
    fs::create_dir(&key).unwrap();
    assert!(refusal("a directory").contains("is not a regular file"));
    fs::remove_dir(&key).unwrap();
    File::create(&key).unwrap();
    fs::set_permissions(&key, Permissions::from_mode(0o600)).unwrap();
    assert!(refusal("empty").contains("is empty"));
    fs::write(&key, b"sixty-four random bytes, in truth").unwrap();
    for mode in [0o640, 0o604, 0o644] {
        fs::set_permissions(&key, Permissions::from_mode(mode)).unwrap();
        let message = refusal("readable by others");
        assert!(
            message.contains(&format!("has mode {mode:04o}")),
            "{message}"
        );
        assert!(
            !message.contains("sixty-four"),
            "the key's content: {message}"
        );
    }
    for mode in [0o400, 0o600] {
        fs::set_permissions(&key, Permissions::from_mode(mode)).unwrap();
        check_recovery_key_file(path).unwrap();
    }
}

#[test]
fn the_temporary_key_is_private_random_and_gone_when_dropped() {
    let key = TempKey::new().unwrap();
    let path = key.path().to_owned();
    let dir = path.parent().unwrap().to_owned();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 64);
    assert_ne!(bytes, fs::read(TempKey::new().unwrap().path()).unwrap());
    drop(key);
    assert!(
        !path.exists() && !dir.exists(),
        "{} left behind",
        dir.display()
    );
}

/// Needs root (losetup), as the daemon does; cryptsetup writes the LUKS2
/// header without dm-crypt.
#[test]
fn a_partition_range_is_formatted_luks2_with_upstreams_parameters_and_its_key_opens_it() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: losetup needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk.img");
    File::create(&disk).unwrap().set_len(64 << 20).unwrap();
    let (offset, size) = (8u64 << 20, 32u64 << 20);
    let key = TempKey::new().unwrap();
    let node = LoopNode::attach(disk.to_str().unwrap(), offset, size).unwrap();
    luks::format(node.path(), key.path()).unwrap();
    let uuid = luks::uuid(node.path()).unwrap();
    assert_eq!(uuid.len(), 36, "{uuid}");
    assert!(luks::uuid(node.path()).unwrap() == uuid);
    let dump = std::process::Command::new("cryptsetup")
        .args(["luksDump", node.path()])
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&dump.stdout);
    for wanted in [
        "Version:       \t2",
        "aes-xts-plain64",
        "PBKDF:      pbkdf2",
        "Hash:       sha512",
    ] {
        assert!(dump.contains(wanted), "{wanted} in\n{dump}");
    }
    // Slot 0 holds the key; nothing else opens it, the TPM token least of all.
    let test = |args: &[&str]| {
        let mut all = vec!["open", "--type", "luks2", "--test-passphrase"];
        all.extend_from_slice(args);
        all.push(node.path());
        std::process::Command::new("cryptsetup")
            .args(&all)
            .status()
            .unwrap()
            .success()
    };
    assert!(test(&["--key-file", key.path().to_str().unwrap()]));
    let wrong = dir.path().join("wrong.key");
    fs::write(&wrong, [7u8; 64]).unwrap();
    assert!(!test(&["--key-file", wrong.to_str().unwrap()]));
    assert!(luks::open_with_tpm2(node.path(), None).unwrap().is_err());
    // Outside the partition's range: untouched.
    let bytes = fs::read(&disk).unwrap();
    let (start, end) = (offset as usize, (offset + size) as usize);
    assert!(
        bytes[..start].iter().all(|&b| b == 0),
        "before the partition"
    );
    assert!(bytes[end..].iter().all(|&b| b == 0), "after the partition");
    assert_eq!(&bytes[start..start + 4], b"LUKS");
}

/// A software TPM 2.0 (swtpm, package swtpm) on a socket in `dir`, for
/// systemd's swtpm TCTI (package libtss2-tcti-swtpm0); killed when dropped.
struct SoftwareTpm {
    child: std::process::Child,
    tcti: String,
}

impl SoftwareTpm {
    fn start(dir: &std::path::Path) -> SoftwareTpm {
        let socket = dir.join("tpm.sock");
        let child = std::process::Command::new("swtpm")
            .args(["socket", "--tpm2", "--flags", "startup-clear"])
            .arg("--tpmstate")
            .arg(format!("dir={}", dir.display()))
            .arg("--server")
            .arg(format!("type=unixio,path={}", socket.display()))
            // The TCTI finds the control channel beside the socket.
            .arg("--ctrl")
            .arg(format!("type=unixio,path={}.ctrl", socket.display()))
            .spawn()
            .expect("swtpm (package swtpm; scripts/test.sh installs it)");
        for _ in 0..100 {
            if socket.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        SoftwareTpm {
            child,
            tcti: format!("swtpm:path={}", socket.display()),
        }
    }
}

impl Drop for SoftwareTpm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn luks_dump(device: &str) -> String {
    let out = std::process::Command::new("cryptsetup")
        .args(["luksDump", device])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Needs root (losetup), as the daemon does.
#[test]
fn the_tpm_key_is_sealed_to_pcr_7_and_the_temporary_keys_slot_wiped() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: losetup needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tpm = SoftwareTpm::start(dir.path());
    let disk = dir.path().join("disk.img");
    File::create(&disk).unwrap().set_len(48 << 20).unwrap();
    let key = TempKey::new().unwrap();
    let node = LoopNode::attach(disk.to_str().unwrap(), 8 << 20, 32 << 20).unwrap();
    luks::format(node.path(), key.path()).unwrap();
    luks::enroll_tpm2(node.path(), key.path(), "7", &tpm.tcti).unwrap();
    let dump = luks_dump(node.path());
    assert!(dump.contains("systemd-tpm2"), "a TPM token:\n{dump}");
    let pcrs = dump
        .lines()
        .find_map(|l| l.trim().strip_prefix("tpm2-hash-pcrs:"))
        .map(str::trim);
    assert_eq!(pcrs, Some("7"), "sealed to PCR 7:\n{dump}");
    let keyslots = |dump: &str| {
        let slots = dump.split("Keyslots:").nth(1).unwrap_or_default();
        let slots = slots.split("Tokens:").next().unwrap_or_default();
        slots
            .lines()
            .filter(|l| l.trim_end().ends_with(": luks2"))
            .count()
    };
    assert_eq!(keyslots(&dump), 2, "the key's and the TPM's:\n{dump}");

    luks::wipe_passphrase_slots(node.path()).unwrap();
    let dump = luks_dump(node.path());
    assert_eq!(keyslots(&dump), 1, "the TPM's alone:\n{dump}");
    assert!(dump.contains("systemd-tpm2"), "{dump}");
    let opens = std::process::Command::new("cryptsetup")
        .args(["open", "--type", "luks2", "--test-passphrase"])
        .args(["--disable-external-tokens", "--key-file"])
        .arg(key.path())
        .arg(node.path())
        .status()
        .unwrap()
        .success();
    assert!(!opens, "the temporary key still opens the volume");
}
