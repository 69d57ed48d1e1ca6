//! The block-device stack on a real disk-image file: the partition layer
//! creates and records the GPT, and ids resolve to the recorded ranges
//! (A/B pairs to their member of the asked volume); what does not resolve
//! is a typed error.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs::File;

use trident_cosi::gpt::Gpt;
use trident_host::config::HostConfiguration;
use trident_host::config::storage_graph::DeviceKind;
use trident_host::status::{AbVolume, HostStatus};

use super::partition::LBA_SIZE;
use super::{BlockDeviceError, BlockDevices, ResolvedDevice, Targets, create_all};

const DISK_BYTES: u64 = 64 << 20;

fn hc(disk: &str) -> HostConfiguration {
    trident_host::config::parse(&hc_yaml(disk)).expect("valid Host Configuration")
}

fn hc_yaml(disk: &str) -> String {
    format!(
        r#"
image: {{ url: "file:///img.cosi", sha384: ignored }}
storage:
  disks:
  - id: os
    device: {disk}
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 8M }}
    - {{ id: root-a, type: root, size: 16M }}
    - {{ id: root-b, type: root, size: 16M }}
    - {{ id: swap, type: swap, size: 4M }}
    - {{ id: srv, type: linux-generic, size: grow }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: /boot/efi }}
  - {{ deviceId: root, mountPoint: / }}
  - {{ deviceId: srv, mountPoint: /srv }}
  swap:
  - {{ deviceId: swap }}
"#
    )
}

/// A 64 MiB disk-image file, its Host Configuration, and the Host Status
/// the stack created it into.
fn installed() -> (tempfile::TempDir, HostConfiguration, HostStatus) {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk.img");
    File::create(&disk).unwrap().set_len(DISK_BYTES).unwrap();
    let hc = hc(disk.to_str().unwrap());
    let mut status = HostStatus::default();
    create_all(&hc, &HostStatus::default(), &mut status).expect("create the stack");
    (dir, hc, status)
}

fn range(device: &ResolvedDevice) -> (u64, u64) {
    let extent = device.extent();
    (extent.offset, extent.size)
}

#[test]
fn the_partition_layer_records_each_partition_where_its_gpt_entry_puts_it() {
    let (dir, _hc, status) = installed();
    let disk = dir.path().join("disk.img");
    let file = File::open(&disk).unwrap();
    let gpt = Gpt::read_and_verify(&file, LBA_SIZE, DISK_BYTES).expect("a valid GPT");
    assert_eq!(status.layout.len(), 5);
    for (id, layout) in &status.layout {
        let entry = gpt.partition(layout.number).expect("the recorded entry");
        assert_eq!(layout.offset, entry.start_offset(LBA_SIZE), "{id}");
        assert_eq!(layout.size, entry.size_bytes(LBA_SIZE), "{id}");
        assert_eq!(layout.device, disk.to_str().unwrap(), "{id}");
        assert_eq!(
            status.partition_paths[id],
            format!("{}@{}+{}", layout.device, layout.offset, layout.size)
        );
    }
    assert_eq!(status.layout["root-a"].size, 16 << 20);
}

#[test]
fn an_ab_pair_resolves_to_its_member_of_the_asked_volume() {
    let (_dir, hc, status) = installed();
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let a = devices.device_of("root", AbVolume::VolumeA).unwrap();
    let b = devices.device_of("root", AbVolume::VolumeB).unwrap();
    assert_eq!(a.id(), "root-a");
    assert_eq!(b.id(), "root-b");
    let ResolvedDevice::Partition { layout, .. } = &b else {
        panic!("root-b is a partition: {b:?}");
    };
    assert_eq!(layout, &status.layout["root-b"]);
    assert_eq!(range(&b), (layout.offset, 16 << 20));
    assert!(
        range(&a).0 + range(&a).1 <= range(&b).0,
        "A before B, apart"
    );
}

#[test]
fn a_partition_resolves_to_itself_whatever_the_volume() {
    let (_dir, hc, status) = installed();
    let devices = BlockDevices::new(&hc, &status).unwrap();
    for volume in [AbVolume::VolumeA, AbVolume::VolumeB] {
        let esp = devices.device_of("esp", volume).unwrap();
        assert_eq!(esp.id(), "esp");
        let recorded = &status.layout["esp"];
        assert_eq!(range(&esp), (recorded.offset, recorded.size));
    }
}

#[test]
fn an_unknown_id_is_a_typed_error() {
    let (_dir, hc, status) = installed();
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let error = devices.device_of("root-c", AbVolume::VolumeA).unwrap_err();
    assert_eq!(
        error,
        BlockDeviceError::UnknownDevice {
            id: "root-c".into()
        }
    );
    assert_eq!(
        error.at("storage.filesystems[1]").subkind(),
        trident_host::Subkind::InvalidHostConfiguration
    );
}

#[test]
fn a_disk_has_no_layer_and_says_so() {
    let (_dir, hc, status) = installed();
    let devices = BlockDevices::new(&hc, &status).unwrap();
    assert_eq!(
        devices.device_of("os", AbVolume::VolumeA).unwrap_err(),
        BlockDeviceError::NoLayer {
            id: "os".into(),
            kind: DeviceKind::Disk
        }
    );
}

#[test]
fn a_partition_missing_from_the_record_is_a_servicing_state_error() {
    let (_dir, hc, mut status) = installed();
    status.layout.remove("root-b");
    let devices = BlockDevices::new(&hc, &status).unwrap();
    assert!(devices.device_of("root", AbVolume::VolumeA).is_ok());
    let error = devices.device_of("root", AbVolume::VolumeB).unwrap_err();
    assert_eq!(
        error,
        BlockDeviceError::NotRecorded {
            id: "root-b".into(),
            kind: DeviceKind::Partition
        }
    );
    let error = devices
        .write_targets(Targets::AbUpdate {
            volume: AbVolume::VolumeB,
        })
        .unwrap_err();
    assert_eq!(
        error.subkind(),
        trident_host::Subkind::InvalidServicingState
    );
    assert!(
        error
            .message()
            .starts_with("storage.filesystems[1]: partition 'root-b'"),
        "{}",
        error.message()
    );
}

#[test]
fn install_writes_every_filesystem_and_an_update_only_the_pairs_other_volume() {
    let (_dir, hc, status) = installed();
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let ids = |which| -> Vec<(String, String)> {
        devices
            .write_targets(which)
            .unwrap()
            .into_iter()
            .map(|(mount_point, device)| (mount_point, device.id().to_owned()))
            .collect()
    };
    let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
        list.iter()
            .map(|(m, d)| (m.to_string(), d.to_string()))
            .collect()
    };
    assert_eq!(
        ids(Targets::Install),
        pairs(&[("/", "root-a"), ("/boot/efi", "esp"), ("/srv", "srv")])
    );
    assert_eq!(
        ids(Targets::AbUpdate {
            volume: AbVolume::VolumeB
        }),
        pairs(&[("/", "root-b")])
    );
    assert_eq!(
        ids(Targets::AbUpdate {
            volume: AbVolume::VolumeA
        }),
        pairs(&[("/", "root-a")])
    );
}

/// A filesystem from the image with no mount point (upstream's `advanced`
/// sample's second ESP) is no write target: the image's filesystems go
/// where they are mounted, so nothing is written to its partition.
#[test]
fn a_filesystem_without_a_mount_point_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk.img");
    File::create(&disk).unwrap().set_len(DISK_BYTES).unwrap();
    let yaml = hc_yaml(disk.to_str().unwrap())
        .replace("{ deviceId: srv, mountPoint: /srv }", "{ deviceId: srv }");
    let hc = trident_host::config::parse(&yaml).unwrap();
    assert!(hc.storage.filesystems[2].mount_point.is_none(), "{yaml}");
    let mut status = HostStatus::default();
    create_all(&hc, &HostStatus::default(), &mut status).unwrap();
    let devices = BlockDevices::new(&hc, &status).unwrap();
    for which in [
        Targets::Install,
        Targets::AbUpdate {
            volume: AbVolume::VolumeB,
        },
    ] {
        let targets = devices.write_targets(which).unwrap();
        assert!(
            targets.values().all(|device| device.id() != "srv") && !targets.contains_key(""),
            "{targets:?}"
        );
    }
    assert_eq!(
        devices.write_targets(Targets::Install).unwrap().len(),
        2,
        "/ and /boot/efi"
    );
}

#[test]
fn a_second_install_replaces_the_first_ones_record() {
    let (dir, hc, first) = installed();
    let mut stale = first.clone();
    stale
        .layout
        .insert("gone".into(), first.layout["esp"].clone());
    stale.partition_paths.insert("gone".into(), "x".into());
    let mut second = stale.clone();
    create_all(&hc, &stale, &mut second).unwrap();
    assert_eq!(second.layout, first.layout);
    assert!(!second.partition_paths.contains_key("gone"));
    drop(dir);
}

#[test]
fn an_encrypted_volume_resolves_to_its_recorded_mapping_and_takes_its_filesystem() {
    use trident_host::config::{EncryptedVolume, Encryption, Pcr};
    use trident_host::status::EncryptedVolumeStatus;

    let (_dir, mut hc, mut status) = installed();
    // /srv on a LUKS2 volume over the srv partition.
    hc.storage.encryption = Some(Encryption {
        recovery_key_url: None,
        volumes: vec![EncryptedVolume {
            id: "srv-crypt".into(),
            device_name: "srv".into(),
            device_id: "srv".into(),
        }],
        pcrs: vec![Pcr::Number(7)],
        clear_tpm_on_install: None,
    });
    let fs = hc
        .storage
        .filesystems
        .iter_mut()
        .find(|f| f.device_id == "srv");
    fs.unwrap().device_id = "srv-crypt".into();
    // Not recorded yet (a Host Status from before the install).
    let err = BlockDevices::new(&hc, &status)
        .unwrap()
        .device_of("srv-crypt", AbVolume::VolumeA)
        .unwrap_err();
    assert_eq!(
        err,
        BlockDeviceError::NotRecorded {
            id: "srv-crypt".into(),
            kind: DeviceKind::EncryptedVolume
        }
    );
    status.encrypted_volumes.insert(
        "srv-crypt".into(),
        EncryptedVolumeStatus {
            device_name: "srv".into(),
            device_id: "srv".into(),
            luks_uuid: "0b9c6a8e-3f0e-4f5c-9d3a-2c1f0e9b8a7d".into(),
            size: 4 << 20,
            pcrs: vec![7],
            recovery_key: false,
        },
    );
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let expected = ResolvedDevice::EncryptedVolume {
        id: "srv-crypt".into(),
        path: "/dev/mapper/srv".into(),
        size: 4 << 20,
    };
    assert_eq!(
        devices.device_of("srv-crypt", AbVolume::VolumeB).unwrap(),
        expected
    );
    assert_eq!(range(&expected), (0, 4 << 20));
    assert_eq!(expected.extent().backing, "/dev/mapper/srv");
    let targets = devices.write_targets(Targets::Install).unwrap();
    assert_eq!(targets["/srv"], expected);
}

/// A RAID array recorded by the RAID layer resolves to `/dev/md/<name>`
/// from offset 0 (its usable size), also as the member of an A/B pair.
#[test]
fn a_recorded_raid_array_resolves_to_its_md_device() {
    let dir = tempfile::tempdir().unwrap();
    let disk = |n: u32| {
        let path = dir.path().join(format!("d{n}.img"));
        File::create(&path).unwrap().set_len(DISK_BYTES).unwrap();
        path.display().to_string()
    };
    let (d1, d2) = (disk(1), disk(2));
    let yaml = format!(
        r#"
image: {{ url: "file:///img.cosi", sha384: ignored }}
storage:
  disks:
  - id: d1
    device: {d1}
    partitions:
    - {{ id: a1, type: root, size: 16M }}
    - {{ id: b1, type: root, size: 16M }}
  - id: d2
    device: {d2}
    partitions:
    - {{ id: a2, type: root, size: 16M }}
    - {{ id: b2, type: root, size: 16M }}
  raid:
    software:
    - {{ id: root-a, name: root-a, level: raid1, devices: [a1, a2] }}
    - {{ id: root-b, name: root-b, level: raid1, devices: [b1, b2] }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: root, mountPoint: / }}
"#
    );
    let hc: HostConfiguration = trident_host::config::parse(&yaml).unwrap();
    let mut status = HostStatus::default();
    super::raid::tests::record_mirrors(
        &mut status,
        &[("root-a", ["a1", "a2"]), ("root-b", ["b1", "b2"])],
        15 << 20,
    );
    let devices = BlockDevices::new(&hc, &status).unwrap();
    let b = devices.device_of("root", AbVolume::VolumeB).unwrap();
    assert_eq!(
        b,
        ResolvedDevice::RaidArray {
            id: "root-b".to_owned(),
            path: "/dev/md/root-b".to_owned(),
            size: 15 << 20
        }
    );
    let extent = b.extent();
    assert_eq!(
        (extent.backing, extent.offset, extent.size),
        ("/dev/md/root-b", 0, 15 << 20)
    );
    let targets = devices
        .write_targets(Targets::AbUpdate {
            volume: AbVolume::VolumeA,
        })
        .unwrap();
    assert_eq!(targets["/"].id(), "root-a");
    // An array the record lacks: the configuration differs from what was installed.
    status.raid_arrays.remove("root-a");
    let devices = BlockDevices::new(&hc, &status).unwrap();
    assert!(matches!(
        devices.device_of("root", AbVolume::VolumeA),
        Err(BlockDeviceError::NotRecorded {
            kind: DeviceKind::RaidArray,
            ..
        })
    ));
}
