//! Adopted partitions (`storage.disks[].adoptedPartitions`, `source:
//! adopted`) through the real daemon on a disk-image file that a real
//! partitioner (sfdisk) laid out: a clean install keeps the adopted
//! partition where it is, byte for byte (hashed before and after), drops
//! the partitions it did not adopt, lays the new ones out around it, and
//! the installed OS's fstab mounts the adopted filesystem (an A/B update
//! leaves it alone as well); a match that
//! finds nothing fails before the disk is touched. Needs root (the install
//! mounts the new root).

#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};

use trident_cosi::gpt::Gpt;
use trident_cosi::writer::FixtureOutput;
use trident_e2e::daemon;
use trident_e2e::mini_os;
use trident_e2e::servicing_support::Clients;
use trident_proto::v1preview::ServicingState;

const MIB: u64 = 1 << 20;
const DISK_BYTES: u64 = 128 * MIB;
/// The data partition sfdisk makes: 20 MiB at 50 MiB.
const DATA_OFFSET: u64 = 50 * MIB;
const DATA_BYTES: u64 = 20 * MIB;
const DATA_GUID: &str = "6a1b7c4e-0d52-4f3e-9a51-0c2f3b8e5d17";
const LINUX: &str = "0FC63DAF-8483-4772-8E79-3D69D8477DE4";

/// A disk-image file partitioned by sfdisk (an old OS, the data partition
/// holding an ext4 with one file, scratch), as another installer left it.
fn partitioned_disk(dir: &Path) -> std::path::PathBuf {
    let disk = dir.join("disk.img");
    File::create(&disk).unwrap().set_len(DISK_BYTES).unwrap();
    let layout = format!(
        "label: gpt\nunit: sectors\n\
         start=2048, size=81920, type={LINUX}, name=old-os\n\
         start={}, size={}, type={LINUX}, uuid={DATA_GUID}, name=data\n\
         start={}, type={LINUX}, name=scratch\n",
        DATA_OFFSET / 512,
        DATA_BYTES / 512,
        (DATA_OFFSET + DATA_BYTES) / 512
    );
    let mut sfdisk = Command::new("sfdisk")
        .args(["--quiet", "--no-reread", "--no-tell-kernel"])
        .arg(&disk)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("sfdisk (scripts/test.sh installs fdisk)");
    sfdisk
        .stdin
        .take()
        .unwrap()
        .write_all(layout.as_bytes())
        .unwrap();
    assert!(sfdisk.wait().unwrap().success(), "sfdisk failed");
    let tree = dir.join("data-tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("keep-me"),
        "user data that survives a reinstall\n",
    )
    .unwrap();
    let data = dir.join("data.img");
    mini_os::sh(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-d"])
            .arg(&tree)
            .arg(&data)
            .arg("20M"),
    );
    let bytes = std::fs::read(&data).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&disk).unwrap();
    file.write_all_at(&bytes, DATA_OFFSET).unwrap();
    file.sync_all().unwrap();
    disk
}

fn data_hash(disk: &Path) -> String {
    let mut bytes = vec![0u8; DATA_BYTES as usize];
    File::open(disk)
        .unwrap()
        .read_exact_at(&mut bytes, DATA_OFFSET)
        .unwrap();
    trident_cosi::hash::sha384_hex(&bytes)
}

fn gpt_of(disk: &Path) -> Gpt {
    Gpt::read_and_verify(&File::open(disk).unwrap(), 512, DISK_BYTES).unwrap()
}

/// Installs `image` with the A/B layout around the adopted partition
/// matched by `matcher`, mounted at /srv/data.
fn config(image: &FixtureOutput, disk: &Path, matcher: &str) -> String {
    format!(
        r#"image:
  url: file://{url}
  sha384: {sha384}
storage:
  disks:
  - id: os
    device: {disk}
    partitions:
    - {{ id: esp, type: esp, size: 8M }}
    - {{ id: root-a, type: root, size: 32M }}
    - {{ id: root-b, type: root, size: 32M }}
    adoptedPartitions:
    - {{ id: data, {matcher} }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
  - {{ deviceId: data, source: adopted, mountPoint: /srv/data }}
"#,
        url = image.path.display(),
        sha384 = image.metadata_sha384,
        disk = disk.display(),
    )
}

/// The pieces each test starts from: a temp dir with the sfdisk disk and
/// mini OS v1, a daemon and its clients.
struct Setup {
    dir: tempfile::TempDir,
    disk: std::path::PathBuf,
    v1: FixtureOutput,
    _daemon: trident_e2e::Daemon,
    clients: Clients,
}

async fn setup() -> Setup {
    let dir = tempfile::Builder::new()
        .prefix("adopted-")
        .tempdir()
        .unwrap();
    let disk = partitioned_disk(dir.path());
    let v1 = mini_os::build(dir.path(), "v1");
    let daemon = daemon().await;
    let clients = Clients::new(&daemon).await;
    Setup {
        dir,
        disk,
        v1,
        _daemon: daemon,
        clients,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_install_keeps_the_adopted_partition_byte_for_byte_and_its_fstab_mounts_it() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the install mounts the new root (needs root)");
        return;
    }
    let Setup {
        dir,
        disk,
        v1,
        _daemon,
        clients: mut c,
    } = setup().await;
    let before = data_hash(&disk);
    c.install(&config(&v1, &disk, "matchLabel: data"))
        .await
        .assert_success();
    assert_eq!(c.state().await, ServicingState::InstallFinalized);

    assert_eq!(data_hash(&disk), before, "the adopted partition changed");
    let gpt = gpt_of(&disk);
    let names: Vec<&str> = gpt.partitions().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["esp", "data", "root-a", "root-b"], "entry order");
    let data = gpt.partitions().iter().find(|e| e.name == "data").unwrap();
    assert_eq!(data.number, 2, "kept its entry");
    assert_eq!(data.unique_guid.to_string(), DATA_GUID);
    assert_eq!(
        (data.start_offset(512), data.size_bytes(512)),
        (DATA_OFFSET, DATA_BYTES)
    );
    // Laid out around it: root-b does not fit before it, so goes after.
    let offset = |name: &str| {
        gpt.partitions()
            .iter()
            .find(|e| e.name == name)
            .unwrap()
            .start_offset(512)
    };
    assert_eq!(offset("esp"), MIB);
    assert_eq!(offset("root-a"), 9 * MIB);
    assert_eq!(offset("root-b"), DATA_OFFSET + DATA_BYTES);

    let fstab = mini_os::ext4_file(&disk, "root-a", "/etc/fstab");
    assert!(
        fstab.contains(&format!("PARTUUID={DATA_GUID} /srv/data ext4 defaults 0 2")),
        "{fstab}"
    );
    assert_eq!(
        mini_os::ext4_file(&disk, "data", "/keep-me"),
        "user data that survives a reinstall\n"
    );

    // An A/B update (after the simulated reboot's commit) leaves it too.
    c.commit().await.assert_success();
    let v2 = mini_os::build(dir.path(), "v2");
    c.update_stage(&config(&v2, &disk, "matchLabel: data"))
        .await
        .assert_success();
    assert_eq!(c.state().await, ServicingState::UpdateAbStaged);
    assert_eq!(data_hash(&disk), before, "the A/B update changed it");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_adopted_partition_that_matches_nothing_fails_before_the_disk_is_written() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: needs root, as the install test");
        return;
    }
    let Setup {
        dir: _dir,
        disk,
        v1,
        _daemon,
        clients: mut c,
    } = setup().await;
    let table_before = gpt_of(&disk);
    for (matcher, says) in [
        ("matchLabel: gone", "labelled 'gone'"),
        (
            "matchUuid: 00000000-0000-4000-8000-000000000001",
            "no partition of disk 'os' has the GUID",
        ),
    ] {
        let install = c.install(&config(&v1, &disk, matcher)).await;
        let error = install.error();
        assert_eq!(error.subkind, "adopt-partition", "{error:?}");
        assert!(
            error.error_message.contains(says),
            "{}",
            error.error_message
        );
        assert!(
            error
                .error_message
                .contains("storage.disks[0].adoptedPartitions[0]"),
            "{}",
            error.error_message
        );
        assert_eq!(gpt_of(&disk), table_before, "the partition table changed");
        assert_eq!(c.state().await, ServicingState::NotProvisioned);
    }
}
