//! A verity root written from a real COSI onto a disk-image file through
//! the block-device stack: the filesystem goes to the verity device's data
//! device, the image's hash tree to its hash device (the serviced member
//! of each A/B pair), and `veritysetup verify` (userspace) accepts the two
//! with the root hash the write step returns. An image without the tree is
//! refused before a byte is written. Mounted as the new root, the verity
//! root is read-only and its `/etc` an overlay on the overlay filesystem:
//! configuring it leaves the data verifying.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::Path;
use std::process::Command;

use trident_cosi::SourceOptions;
use trident_cosi::writer::{self, ImagesSpec};
use trident_host::Subkind;
use trident_host::config::HostConfiguration;
use trident_host::status::{AbVolume, HostStatus};

use super::verity_blocks::{VerityFilesystem, check_block_sizes, verity_filesystems};
use super::write::{BootCheck, ImageTargets, WrittenImage, write_image};
use crate::block_device::{BlockDevices, ResolvedDevice, Targets, create_all};
use crate::new_root::NewRoot;
use crate::new_storage;

const ROOT_UUID: &str = "0d5c4e2a-0000-4000-8000-00000000beef";

/// A host with the root's data and hash devices on A/B pairs. Read with
/// serde alone: `parse` still refuses `storage.verity` as not applied.
fn hc(disk: &Path) -> HostConfiguration {
    let yaml = format!(
        r#"
image: {{ url: "file:///img.cosi", sha384: ignored }}
storage:
  disks:
  - id: os
    device: {}
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 4M }}
    - {{ id: data-a, type: root, size: 12M }}
    - {{ id: data-b, type: root, size: 12M }}
    - {{ id: hash-a, type: root-verity, size: 2M }}
    - {{ id: hash-b, type: root-verity, size: 2M }}
    - {{ id: overlay, type: linux-generic, size: 8M }}
  abUpdate:
    volumePairs:
    - {{ id: root-data, volumeAId: data-a, volumeBId: data-b }}
    - {{ id: root-hash, volumeAId: hash-a, volumeBId: hash-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: /boot/efi }}
  - {{ deviceId: root, mountPoint: {{ path: /, options: ro }} }}
  - {{ deviceId: overlay, source: new, type: ext4, mountPoint: /var/lib/trident-overlay }}
  verity:
  - {{ id: root, name: root, dataDeviceId: root-data, hashDeviceId: root-hash }}
"#,
        disk.display()
    );
    serde_saphyr::from_str(&yaml).unwrap()
}

/// A COSI of an ESP and a real ext4 root (4 KiB blocks), with its hash
/// tree if `verity`.
fn cosi(dir: &Path, verity: bool) -> (String, String) {
    cosi_with_blocks(dir, verity, 4096)
}

/// [`cosi`] with a root of `block_size`-byte ext4 blocks.
fn cosi_with_blocks(dir: &Path, verity: bool, block_size: u32) -> (String, String) {
    let esp = dir.join("esp.img");
    fs::write(&esp, vec![0x5a; 1 << 20]).unwrap();
    let tree = dir.join("tree");
    fs::create_dir_all(tree.join("var/lib/trident-overlay")).unwrap();
    fs::create_dir_all(tree.join("boot/efi")).unwrap();
    fs::create_dir_all(tree.join("etc")).unwrap();
    fs::write(tree.join("etc/hostname"), "image\n").unwrap();
    let root = dir.join("root.img");
    fs::write(&root, vec![0u8; 8 << 20]).unwrap();
    let made = Command::new("mkfs.ext4")
        .args([
            "-q",
            "-F",
            "-b",
            &block_size.to_string(),
            "-U",
            ROOT_UUID,
            "-d",
        ])
        .arg(&tree)
        .arg(&root)
        .status()
        .unwrap();
    assert!(made.success());
    let mut spec = ImagesSpec::esp_and_root(esp, root, ROOT_UUID, "ID=debian\n");
    spec.partitions[1].verity = verity;
    let name = format!("verity-{verity}-{block_size}.cosi");
    let out = writer::pack_images(&spec, &dir.join(name)).unwrap();
    (
        format!("file://{}", out.path.display()),
        out.metadata_sha384,
    )
}

fn bytes_of(device: &ResolvedDevice, dir: &Path, name: &str) -> std::path::PathBuf {
    let extent = device.extent();
    let disk = fs::read(extent.backing).unwrap();
    let path = dir.join(name);
    let (at, len) = (extent.offset as usize, extent.size as usize);
    fs::write(&path, &disk[at..at + len]).unwrap();
    path
}

fn installed(dir: &Path) -> BlockDevices {
    let disk = dir.join("disk.img");
    File::create(&disk).unwrap().set_len(48 << 20).unwrap();
    let hc = hc(&disk);
    let mut status = HostStatus::default();
    create_all(&hc, &HostStatus::default(), &mut status).unwrap();
    BlockDevices::new(&hc, &status).unwrap()
}

/// Writes the COSI at `url` into the image filesystems and hash trees of
/// `which`: (filesystem targets, hash-tree targets, the write's result).
fn write(
    devices: &BlockDevices,
    hc: &HostConfiguration,
    (url, sha): &(String, String),
    which: Targets,
) -> (
    BTreeMap<String, ResolvedDevice>,
    BTreeMap<String, ResolvedDevice>,
    Result<WrittenImage, trident_host::TridentError>,
) {
    let all = devices.write_targets(which).unwrap();
    let filesystems = new_storage::image_targets(hc, &all);
    let hash_trees = devices.verity_hash_targets(which).unwrap();
    let targets = ImageTargets {
        filesystems: &filesystems,
        hash_trees: &hash_trees,
    };
    let boot = BootCheck {
        esp_copy: None,
        check: &|_| Ok(()),
    };
    let written = write_image(
        url,
        sha,
        &SourceOptions::default(),
        &targets,
        None,
        &boot,
        &crate::interrupt::Interrupt::default(),
    );
    (all, hash_trees, written)
}

fn ids(map: &BTreeMap<String, ResolvedDevice>) -> Vec<(&str, &str)> {
    map.iter().map(|(m, d)| (m.as_str(), d.id())).collect()
}

#[test]
fn the_root_goes_to_the_data_device_and_its_tree_to_the_hash_device_of_the_serviced_volume() {
    let dir = tempfile::tempdir().unwrap();
    let devices = installed(dir.path());
    let install = Targets::Install;
    let update = Targets::AbUpdate {
        volume: AbVolume::VolumeB,
    };
    let fs = devices.write_targets(install).unwrap();
    assert_eq!(
        ids(&fs),
        [
            ("/", "data-a"),
            ("/boot/efi", "esp"),
            ("/var/lib/trident-overlay", "overlay")
        ]
    );
    assert_eq!(
        ids(&devices.verity_hash_targets(install).unwrap()),
        [("/", "hash-a")]
    );
    // An A/B update writes the verity root (its data is a pair) into B.
    assert_eq!(
        ids(&devices.write_targets(update).unwrap()),
        [("/", "data-b")]
    );
    assert_eq!(
        ids(&devices.verity_hash_targets(update).unwrap()),
        [("/", "hash-b")]
    );
}

#[test]
fn a_written_verity_root_verifies_against_the_root_hash_the_write_returns() {
    let dir = tempfile::tempdir().unwrap();
    let devices = installed(dir.path());
    let update = Targets::AbUpdate {
        volume: AbVolume::VolumeB,
    };
    let hc = hc(Path::new("unused"));
    let (filesystems, hash_trees, written) = write(&devices, &hc, &cosi(dir.path(), true), update);
    let written = written.unwrap();
    let root_hash = &written.verity_root_hashes["/"];
    assert_eq!(root_hash.len(), 64);

    let data = bytes_of(&filesystems["/"], dir.path(), "data");
    let tree = bytes_of(&hash_trees["/"], dir.path(), "hash-tree");
    let verify = |data: &Path| {
        Command::new("veritysetup")
            .arg("verify")
            .arg(data)
            .arg(&tree)
            .arg(root_hash)
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(verify(&data), "data-b and hash-b verify with the root hash");
    // Volume A was not written: its data does not verify.
    let other = bytes_of(
        &devices.device_of("data-a", AbVolume::VolumeA).unwrap(),
        dir.path(),
        "data-a",
    );
    assert!(!verify(&other));
}

#[test]
fn an_image_without_the_tree_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let devices = installed(dir.path());
    let image = cosi(dir.path(), false);
    let hc = hc(Path::new("unused"));
    let disk = devices.write_targets(Targets::Install).unwrap()["/"]
        .extent()
        .backing
        .to_owned();
    let before = fs::read(&disk).unwrap();
    let (_, _, written) = write(&devices, &hc, &image, Targets::Install);
    let err = written.unwrap_err();
    assert_eq!(err.subkind(), Subkind::ImageDoesNotMatchConfiguration);
    assert!(
        err.message().contains("no verity hash tree"),
        "{}",
        err.message()
    );
    assert!(fs::read(&disk).unwrap() == before, "nothing written");
}

#[test]
fn a_verity_root_with_blocks_smaller_than_the_verity_data_blocks_is_refused_from_its_superblock() {
    let dir = tempfile::tempdir().unwrap();
    let on_verity = verity_filesystems(&hc(Path::new("unused")));
    assert_eq!(
        on_verity,
        [VerityFilesystem {
            mount_point: "/".to_owned(),
            device_id: "root".to_owned(),
            key: "storage.verity[0]".to_owned(),
        }]
    );
    let (url, sha) = cosi_with_blocks(dir.path(), true, 1024);
    let err = check_block_sizes(&url, &sha, &SourceOptions::default(), &on_verity).unwrap_err();
    assert_eq!(err.subkind(), Subkind::ImageDoesNotMatchConfiguration);
    let message = err.message();
    for says in ["'storage.verity[0]'", "'root'", "1024-byte", "4096"] {
        assert!(message.contains(says), "{says:?} in {message}");
    }
    let (url, sha) = cosi(dir.path(), true);
    check_block_sizes(&url, &sha, &SourceOptions::default(), &on_verity).unwrap();
    // No verity filesystem: the image is not even opened.
    check_block_sizes(
        "file:///nonexistent.cosi",
        &sha,
        &SourceOptions::default(),
        &[],
    )
    .unwrap();
}

#[test]
fn the_mounted_verity_root_is_read_only_with_a_writable_etc_that_leaves_the_data_verifying() {
    let dir = tempfile::tempdir().unwrap();
    let devices = installed(dir.path());
    let hc = hc(Path::new(
        devices.write_targets(Targets::Install).unwrap()["/"]
            .extent()
            .backing,
    ));
    let (all, hash_trees, written) =
        write(&devices, &hc, &cosi(dir.path(), true), Targets::Install);
    let written = written.unwrap();
    new_storage::create(&hc, &devices, &all, true).unwrap();

    let path = dir.path().join("new-root");
    let root = NewRoot::mount(&hc, &devices, &all, AbVolume::VolumeA, &path)
        .unwrap()
        .expect("an ext4 root");
    // /etc takes writes (into the overlay's upper directory) ...
    fs::write(path.join("etc/hostname"), "configured\n").unwrap();
    fs::write(path.join("etc/added"), "x").unwrap();
    assert_eq!(
        fs::read_to_string(path.join("etc/hostname")).unwrap(),
        "configured\n"
    );
    // ... the rest of the root does not.
    let err = fs::write(path.join("boot/written"), "x").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(30), "EROFS: {err}");
    root.unmount().unwrap();

    let data = bytes_of(&all["/"], dir.path(), "data");
    let tree = bytes_of(&hash_trees["/"], dir.path(), "hash-tree");
    let verified = Command::new("veritysetup")
        .arg("verify")
        .arg(&data)
        .arg(&tree)
        .arg(&written.verity_root_hashes["/"])
        .status()
        .unwrap();
    assert!(
        verified.success(),
        "mounting and configuring changed no data byte"
    );

    // What was configured is on the overlay filesystem.
    let overlay = dir.path().join("overlay-fs");
    fs::create_dir_all(&overlay).unwrap();
    let extent = all["/var/lib/trident-overlay"].extent();
    let device =
        crate::new_root::tools::LoopDevice::attach(extent.backing, extent.offset, extent.size)
            .unwrap();
    let guard = crate::new_root::tools::MountGuard::mount(device, "ext4", &overlay).unwrap();
    assert_eq!(
        fs::read_to_string(overlay.join("etc/upper/hostname")).unwrap(),
        "configured\n"
    );
    assert!(overlay.join("etc/upper/added").exists());
    assert!(overlay.join("etc/work").is_dir());
    guard.unmount().unwrap();
}

#[test]
fn the_volume_boots_its_verity_root_by_the_root_hash_and_its_own_data_and_hash_partitions() {
    use crate::boot_control::uefi_entry::{command_line, root_args};
    use crate::new_root::{fstab, partitions, volume::VolumeRoot};

    let dir = tempfile::tempdir().unwrap();
    let devices = installed(dir.path());
    let disk = devices.write_targets(Targets::Install).unwrap()["/"]
        .extent()
        .backing
        .to_owned();
    let mut hc = hc(Path::new(&disk));
    hc.storage.verity[0].corruption_option = trident_host::config::VerityCorruptionOption::Panic;
    let parts = partitions::read_partitions(devices.partitions()).unwrap();
    let uuid = |id: &str| parts[id].part_uuid.clone();
    for (volume, data, hash) in [
        (AbVolume::VolumeA, "data-a", "hash-a"),
        (AbVolume::VolumeB, "data-b", "hash-b"),
    ] {
        let root_dir = crate::new_root::root_dir::RootDir::open(dir.path()).unwrap();
        let root = VolumeRoot {
            path: dir.path(),
            dir: &root_dir,
            hc: &hc,
            volume,
            devices: &devices,
            partitions: &parts,
        };
        let args = root_args(&root, Some("ab12")).unwrap();
        assert_eq!(
            args,
            [
                "root=/dev/mapper/root".to_owned(),
                "ro".to_owned(),
                "rd.systemd.verity=1".to_owned(),
                "roothash=ab12".to_owned(),
                format!("systemd.verity_root_data=PARTUUID={}", uuid(data)),
                format!("systemd.verity_root_hash=PARTUUID={}", uuid(hash)),
                "systemd.verity_root_options=panic-on-corruption".to_owned(),
                format!(
                    "rd.overlayfs=etc,etc/upper,etc/work,/dev/disk/by-partuuid/{}",
                    uuid("overlay")
                ),
            ]
        );
        // The image's own root and verity arguments give way.
        let line = command_line(&hc, &args, "root=UUID=x rw roothash=ff console=ttyS0");
        assert!(line.ends_with(" console=ttyS0"), "{line}");
        assert_eq!(line.matches("roothash=").count(), 1, "{line}");
        assert!(!line.contains(" rw"), "{line}");

        let err = root_args(&root, None).unwrap_err();
        assert_eq!(err.subkind(), Subkind::BootControl);

        let table = fstab::render(&root).unwrap();
        assert!(
            table.contains("\n/dev/mapper/root / auto ro 0 1\n")
                || table.contains("\n/dev/mapper/root / ext4 ro 0 1\n"),
            "{table}"
        );
    }
}
