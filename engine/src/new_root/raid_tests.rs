//! A new root whose `/`, ESP and data volume are RAID arrays (and swap a
//! partition): fstab names arrays by `/dev/md/<name>` and partitions by
//! PARTUUID, the boot entry's `root=` source is the serviced volume's
//! array, and
//! mdadm.conf lists every array by UUID.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;

use trident_host::config::RaidLevel;
use trident_host::status::{AbVolume, HostStatus, PartitionLayout, RaidArrayStatus};

use super::hostile_root::HostileRoot;
use super::partitions::PartitionInfo;
use super::root_dir::RootDir;
use super::volume::VolumeRoot;
use super::{fstab, mdadm_conf};
use crate::block_device::BlockDevices;

const YAML: &str = r#"
image: { url: "file:///img.cosi", sha384: ignored }
storage:
  disks:
  - id: d1
    device: /dev/vda
    partitions:
    - { id: esp1, type: esp, size: 64M }
    - { id: a1, type: root, size: 1G }
    - { id: b1, type: root, size: 1G }
    - { id: swap1, type: swap, size: 64M }
  - id: d2
    device: /dev/vdb
    partitions:
    - { id: esp2, type: esp, size: 64M }
    - { id: a2, type: root, size: 1G }
    - { id: b2, type: root, size: 1G }
  raid:
    software:
    - { id: esp, name: esp, level: raid1, devices: [esp1, esp2] }
    - { id: root-a, name: root-a, level: raid1, devices: [a1, a2] }
    - { id: root-b, name: root-b, level: raid1, devices: [b1, b2] }
  abUpdate:
    volumePairs:
    - { id: root, volumeAId: root-a, volumeBId: root-b }
  filesystems:
  - { deviceId: esp, mountPoint: { path: /boot/efi, options: umask=0077 } }
  - { deviceId: root, mountPoint: / }
  swap:
  - { deviceId: swap1 }
"#;

fn array(name: &str, uuid: &str) -> RaidArrayStatus {
    RaidArrayStatus {
        name: name.to_owned(),
        level: RaidLevel::Raid1,
        members: Vec::new(),
        uuid: uuid.to_owned(),
        size: 1 << 30,
        state: "clean".to_owned(),
    }
}

#[test]
fn fstab_boot_entry_and_mdadm_conf_name_arrays_by_their_md_device() {
    let hc = trident_host::config::parse(YAML).unwrap();
    let mut status = HostStatus::default();
    for (id, uuid) in [
        ("esp", "1:1:1:1"),
        ("root-a", "a:a:a:a"),
        ("root-b", "b:b:b:b"),
    ] {
        status.raid_arrays.insert(id.to_owned(), array(id, uuid));
    }
    let swap = PartitionLayout {
        disk_id: "d1".to_owned(),
        device: "/dev/vda".to_owned(),
        number: 4,
        offset: 1 << 20,
        size: 64 << 20,
    };
    status.layout.insert("swap1".to_owned(), swap.clone());
    let partitions = BTreeMap::from([(
        "swap1".to_owned(),
        PartitionInfo {
            id: "swap1".to_owned(),
            layout: swap,
            part_uuid: "0a0b0c0d-0000-4000-8000-000000000004".to_owned(),
        },
    )]);
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root_dir = RootDir::open(dir.path()).unwrap();
    for volume in [AbVolume::VolumeA, AbVolume::VolumeB] {
        let root = VolumeRoot {
            path: dir.path(),
            dir: &root_dir,
            hc: &hc,
            volume,
            devices: &devices,
            partitions: &partitions,
        };
        let letter = if volume == AbVolume::VolumeA {
            "a"
        } else {
            "b"
        };
        let text = fstab::render(&root).unwrap();
        assert!(text.contains("/dev/md/esp /boot/efi "), "{text}");
        assert!(text.contains(" umask=0077 0 2\n"), "{text}");
        assert!(
            text.contains(&format!("/dev/md/root-{letter} / ")),
            "{text}"
        );
        assert!(
            text.contains("PARTUUID=0a0b0c0d-0000-4000-8000-000000000004 none swap defaults 0 0"),
            "{text}"
        );
        // What the boot entry's root= names.
        let (_, source) = root.mount_source("/").unwrap();
        assert_eq!(source, format!("/dev/md/root-{letter}"));
        let conf = mdadm_conf::render(&root).unwrap();
        for line in [
            "ARRAY /dev/md/esp metadata=1.0 UUID=1:1:1:1 name=esp",
            "ARRAY /dev/md/root-a metadata=1.0 UUID=a:a:a:a name=root-a",
            "ARRAY /dev/md/root-b metadata=1.0 UUID=b:b:b:b name=root-b",
        ] {
            assert!(conf.contains(line), "{line} in {conf}");
        }
    }
}

#[test]
fn a_host_without_arrays_gets_no_mdadm_conf() {
    let hc = trident_host::config::parse(
        &YAML.replace(
            "  raid:\n    software:\n    - { id: esp, name: esp, level: raid1, devices: [esp1, esp2] }\n    - { id: root-a, name: root-a, level: raid1, devices: [a1, a2] }\n    - { id: root-b, name: root-b, level: raid1, devices: [b1, b2] }\n",
            "",
        )
        .replace("volumeAId: root-a, volumeBId: root-b", "volumeAId: a1, volumeBId: b1")
        .replace("{ deviceId: esp,", "{ deviceId: esp1,"),
    )
    .unwrap();
    let status = HostStatus::default();
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let partitions = BTreeMap::new();
    let dir = tempfile::tempdir().unwrap();
    let root_dir = RootDir::open(dir.path()).unwrap();
    let root = VolumeRoot {
        path: dir.path(),
        dir: &root_dir,
        hc: &hc,
        volume: AbVolume::VolumeA,
        devices: &devices,
        partitions: &partitions,
    };
    assert_eq!(mdadm_conf::render(&root), None);
    mdadm_conf::write_mdadm_conf(&root).unwrap();
    assert!(!dir.path().join("etc/mdadm/mdadm.conf").exists());
}

/// Issue 37: mdadm.conf stays inside a root whose symlinks point out of it.
#[test]
fn mdadm_conf_stays_inside_a_root_whose_links_point_out() {
    let hc = trident_host::config::parse(YAML).unwrap();
    let mut status = HostStatus::default();
    status
        .raid_arrays
        .insert("esp".to_owned(), array("esp", "1:1:1:1"));
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let partitions = BTreeMap::new();
    for hostile in HostileRoot::variants("/etc/mdadm/mdadm.conf") {
        let root_dir = hostile.dir();
        let root = VolumeRoot {
            path: &hostile.root,
            dir: &root_dir,
            hc: &hc,
            volume: AbVolume::VolumeA,
            devices: &devices,
            partitions: &partitions,
        };
        mdadm_conf::write_mdadm_conf(&root).unwrap();
        hostile.assert_outside_untouched();
        assert!(
            hostile.landed().contains("UUID=1:1:1:1"),
            "{}",
            hostile.variant
        );
    }
}
