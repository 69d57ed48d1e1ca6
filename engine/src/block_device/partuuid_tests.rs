//! Partitions of a Host Status upstream wrote, found by partition UUID in a
//! disk-image file's GPT (laid out as upstream's systemd-repart lays it
//! out: the configured sizes in order, named by id).
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs::File;

use trident_cosi::gpt::{Gpt, PartitionSpec};
use trident_host::status::{AbVolume, HostStatus, ServicingState};
use uuid::Uuid;

use super::super::{BlockDevices, ResolvedDevice};
use super::*;

const DISK_BYTES: u64 = 64 << 20;
const DISK_GUID: &str = "3f0e8a52-5f4f-4d3e-9b0b-7c1d2e3f4a5b";
const PARTS: [(&str, &str, u64); 3] = [
    ("esp", "c12a7328-f81f-11d2-ba4b-00a0c93ec93b", 8),
    ("root-a", "4f68bce3-e8cd-4db1-96e7-fbcaf984b709", 16),
    ("root-b", "4f68bce3-e8cd-4db1-96e7-fbcaf984b709", 16),
];

fn partuuid(n: usize) -> Uuid {
    Uuid::parse_str(&format!("6a1c6cf4-0c3b-4d6f-9d4c-1f8c58a5b10{}", n + 1)).unwrap()
}

/// A disk-image file with upstream's layout at `lba_size`, and a Host
/// Status as upstream records it for that disk.
fn upstream_host(lba_size: u64) -> (tempfile::TempDir, String, Gpt, HostStatus) {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("os.img");
    let file = File::create(&disk).unwrap();
    file.set_len(DISK_BYTES).unwrap();
    let specs: Vec<PartitionSpec> = PARTS
        .iter()
        .enumerate()
        .map(|(n, (name, type_guid, mib))| PartitionSpec {
            type_guid: Uuid::parse_str(type_guid).unwrap(),
            unique_guid: partuuid(n),
            name: (*name).to_owned(),
            size: Some(mib << 20),
            attributes: 0,
        })
        .collect();
    let gpt = Gpt::build(
        DISK_BYTES,
        lba_size,
        Uuid::parse_str(DISK_GUID).unwrap(),
        &specs,
    )
    .unwrap();
    gpt.write_primary(&file).unwrap();
    gpt.write_backup(&file).unwrap();
    let device = disk.to_str().unwrap().to_owned();
    let spec = trident_host::config::parse(&format!(
        r#"
image: {{ url: "https://images.example.com/azl3-3.0.1.cosi", sha384: ignored }}
storage:
  disks:
  - id: os
    device: {device}
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 8M }}
    - {{ id: root-a, type: root, size: 16M }}
    - {{ id: root-b, type: root, size: 16M }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: /boot/efi }}
  - {{ deviceId: root, mountPoint: / }}
"#
    ))
    .unwrap();
    let status = HostStatus {
        spec: Some(spec),
        servicing_state: ServicingState::Provisioned,
        ab_active_volume: Some(AbVolume::VolumeA),
        partition_paths: PARTS
            .iter()
            .enumerate()
            .map(|(n, (name, _, _))| ((*name).to_owned(), format!("{BY_PARTUUID}{}", partuuid(n))))
            .collect(),
        disk_uuids: [("os".to_owned(), DISK_GUID.to_owned())].into(),
        install_index: 1,
        ..HostStatus::default()
    };
    (dir, device, gpt, status)
}

#[test]
fn upstreams_partitions_are_found_by_partition_uuid_in_the_disks_gpt() {
    for lba_size in [512, 4096] {
        let (_dir, device, gpt, mut status) = upstream_host(lba_size);
        assert_eq!(unlocated(&status).len(), 3);
        TakeoverLayout::default().fill(&mut status);
        assert!(unlocated(&status).is_empty(), "{:?}", status.layout);
        for (n, (name, _, mib)) in PARTS.iter().enumerate() {
            let layout = &status.layout[*name];
            let entry = gpt.partition(n as u32 + 1).unwrap();
            assert_eq!(layout.disk_id, "os");
            assert_eq!(layout.device, device);
            assert_eq!(layout.number, n as u32 + 1, "{name}");
            assert_eq!(layout.offset, entry.start_offset(lba_size), "{name}");
            assert_eq!(layout.size, mib << 20, "{name}");
        }
        // Upstream's names stay: its agent put back reads them.
        assert!(status.partition_paths["root-b"].starts_with(BY_PARTUUID));
        // The stack resolves them: the A/B pair to the serviced volume's.
        let devices = BlockDevices::of_status(&status).unwrap();
        let ResolvedDevice::Partition { id, layout } =
            devices.device_of("root", AbVolume::VolumeB).unwrap()
        else {
            panic!("a partition")
        };
        assert_eq!(id, "root-b");
        assert_eq!(layout, status.layout["root-b"]);
    }
}

#[test]
fn a_partition_on_no_disk_stays_unlocated_and_is_named_when_resolved() {
    let (_dir, _device, _gpt, mut status) = upstream_host(512);
    let gone = Uuid::new_v4();
    status
        .partition_paths
        .insert("root-b".to_owned(), format!("{BY_PARTUUID}{gone}"));
    let located = locate(&status, &unlocated(&status));
    assert_eq!(located.missing, [("root-b".to_owned(), gone)].into());
    assert!(located.unreadable.is_empty());
    let cache = TakeoverLayout::default();
    cache.fill(&mut status);
    assert!(status.layout.contains_key("root-a"));
    assert!(!status.layout.contains_key("root-b"));
    let error = BlockDevices::of_status(&status)
        .unwrap()
        .device_of("root", AbVolume::VolumeB)
        .unwrap_err();
    assert!(error.to_string().contains("root-b"), "{error}");
}

#[test]
fn a_disk_that_cannot_be_read_is_named() {
    let (dir, _device, _gpt, mut status) = upstream_host(512);
    drop(dir);
    let located = locate(&status, &unlocated(&status));
    assert_eq!(located.missing.len(), 3);
    assert_eq!(located.unreadable.len(), 1);
    assert_eq!(located.unreadable[0].0, "os");
    TakeoverLayout::default().fill(&mut status);
    assert!(status.layout.is_empty());
}

#[test]
fn a_layout_of_ours_and_paths_of_ours_are_left_alone() {
    let (_dir, device, _gpt, mut status) = upstream_host(512);
    // Our own install records byte ranges, never by-partuuid paths.
    status.partition_paths = [("root-a".to_owned(), format!("{device}@1048576+16777216"))].into();
    assert!(unlocated(&status).is_empty());
    TakeoverLayout::default().fill(&mut status);
    assert!(status.layout.is_empty());
    assert_eq!(partuuid_of("/dev/disk/by-partuuid/not-a-uuid"), None);
    assert_eq!(
        partuuid_of(&format!("{BY_PARTUUID}{}", partuuid(0))),
        Some(partuuid(0))
    );
}
