//! A module for testing the storage graph validation.

// The following error variants are not currently producible and therefore
// are not tested:
// - StorageGraphBuildError::InvalidSpecialReferenceKind
// - StorageGraphBuildError::InvalidTargets
// - StorageGraphBuildError::PartitionTypeMismatchSpecial

use std::path::Path;

use uuid::Uuid;

use super::{
    builder::StorageGraphBuilder,
    error::StorageGraphBuildError,
    node::StorageGraphNode,
    types::{BlkDevReferrerKind, HostConfigBlockDevice},
};

use crate::{
    config::{
        AbVolumePair, AdoptedPartition, Disk, EncryptedVolume, FileSystem, FileSystemSource,
        MountOptions, MountPoint, NewFileSystemType, Partition, PartitionSize, PartitionTableType,
        PartitionType, RaidLevel, SoftwareRaidArray,
    },
    constants::{DEFAULT_ESP_MOUNT_POINT_PATH, ROOT_MOUNT_POINT_PATH},
    storage_graph::{rules::expected_partition_type, types::BlkDevKind},
};

// Helper function to create a generic partition used in unit tests
fn generic_partition() -> Partition {
    Partition {
        id: "partition".into(),
        partition_type: PartitionType::LinuxGeneric,
        size: PartitionSize::Fixed(4096.into()),
        uuid: None,
        label: None,
    }
}

#[test]
fn test_basic_graph() {
    let mut builder = StorageGraphBuilder::default();
    let mut nodes = Vec::new();

    let disk = Disk {
        id: "disk".into(),
        device: "/dev/sda".into(),
        partition_table_type: PartitionTableType::Gpt,
        ..Default::default()
    };
    builder.add_node((&disk).into());
    nodes.push(StorageGraphNode::from(&disk));

    let partitions = (1..=6)
        .map(|i| Partition {
            id: format!("partition{i}"),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::LinuxGeneric,
            uuid: None,
            label: None,
        })
        .collect::<Vec<_>>();
    partitions.iter().for_each(|p| builder.add_node(p.into()));
    partitions.iter().for_each(|p| {
        nodes.push(StorageGraphNode::from(p));
    });

    let raid_array = SoftwareRaidArray {
        id: "raid_array".into(),
        name: "md0".into(),
        devices: vec!["partition1".into(), "partition2".into()],
        level: RaidLevel::Raid1,
    };
    builder.add_node((&raid_array).into());
    nodes.push(StorageGraphNode::from(&raid_array));

    let ab_volume_pair = AbVolumePair {
        id: "ab_volume_pair".into(),
        volume_a_id: "partition3".into(),
        volume_b_id: "partition4".into(),
    };
    builder.add_node((&ab_volume_pair).into());
    nodes.push(StorageGraphNode::from(&ab_volume_pair));

    let encrypted_volume = EncryptedVolume {
        id: "encrypted_volume".into(),
        device_id: "partition5".into(),
        device_name: "encrypted_volume".into(),
    };
    builder.add_node((&encrypted_volume).into());
    nodes.push(StorageGraphNode::from(&encrypted_volume));

    let fs = FileSystem {
        device_id: Some("partition6".into()),
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: ROOT_MOUNT_POINT_PATH.into(),
            options: MountOptions::empty(),
        }),
        is_esp: false,
    };
    builder.add_node((&fs).into());
    nodes.push(StorageGraphNode::from(&fs));

    let mut graph = builder.build().unwrap();

    // Check that all nodes were successfully added
    assert_eq!(nodes.len(), graph.inner.node_count());
    for index in graph.inner.node_indices().rev() {
        let removed = graph.inner.remove_node(index);
        assert_eq!(removed.unwrap(), nodes.pop().unwrap());
    }
}

#[test]
fn test_duplicate_node() {
    let mut builder = StorageGraphBuilder::default();

    let disk = Disk {
        id: "disk".into(),
        device: "/dev/sda".into(),
        partition_table_type: PartitionTableType::Gpt,
        ..Default::default()
    };
    builder.add_node((&disk).into());
    builder.add_node((&disk).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::DuplicateDeviceId("disk".to_string())
    );
}

#[test]
fn test_duplicate_mountpoint() {
    let mut builder = StorageGraphBuilder::default();

    let fs1 = FileSystem {
        device_id: Some("partition".into()),
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: ROOT_MOUNT_POINT_PATH.into(),
            options: MountOptions::defaults(),
        }),
        is_esp: false,
    };
    builder.add_node((&fs1).into());
    builder.add_node((&fs1).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::DuplicateMountPoint(ROOT_MOUNT_POINT_PATH.to_string())
    );
}

#[test]
fn test_duplicate_member() {
    let partition = Partition {
        id: "partition".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::Esp,
        uuid: None,
        label: None,
    };

    // Duplicate member in A/B volume
    let mut builder = StorageGraphBuilder::default();
    builder.add_node((&partition).into());

    let ab_volume_pair = AbVolumePair {
        id: "ab_volume_pair".into(),
        volume_a_id: "partition".into(),
        volume_b_id: "partition".into(),
    };
    builder.add_node((&ab_volume_pair).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::DuplicateTargetId {
            node_identifier: StorageGraphNode::from(&ab_volume_pair).identifier(),
            kind: BlkDevReferrerKind::ABVolume,
            target_id: "partition".to_string()
        }
    );

    // Duplicate member in RAID volume
    let mut builder = StorageGraphBuilder::default();
    builder.add_node((&partition).into());

    let raid_array = SoftwareRaidArray {
        id: "raid_array".into(),
        name: "md0".into(),
        devices: vec!["partition".into(), "partition".into()],
        level: RaidLevel::Raid1,
    };
    builder.add_node((&raid_array).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::DuplicateTargetId {
            node_identifier: StorageGraphNode::from(&raid_array).identifier(),
            kind: BlkDevReferrerKind::RaidArray,
            target_id: "partition".to_string()
        }
    );
}

#[test]
fn test_filesystem_missing_blkdev_id() {
    let builder_base = StorageGraphBuilder::default();

    let fs = FileSystem {
        device_id: None,
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: ROOT_MOUNT_POINT_PATH.into(),
            options: MountOptions::empty(),
        }),
        is_esp: false,
    };
    let mut builder = builder_base.clone();
    builder.add_node((&fs).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::FilesystemMissingBlockDeviceId {
            fs_desc: fs.description()
        },
    );
}

#[test]
fn test_filesystem_missing_mp() {
    // FileSystemType::Tmpfs expects a mount point
    let mut fs = FileSystem {
        device_id: None,
        source: FileSystemSource::New(NewFileSystemType::Tmpfs),
        mount_point: None,
        is_esp: false,
    };
    let mut builder = StorageGraphBuilder::default();
    builder.add_node((&fs).into());
    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::FilesystemMissingMountPoint {
            fs_desc: fs.description()
        }
    );

    // build() should pass after adding mount point
    fs.mount_point = Some(MountPoint {
        path: ROOT_MOUNT_POINT_PATH.into(),
        options: MountOptions::defaults(),
    });
    let mut builder = StorageGraphBuilder::default();
    builder.add_node((&fs).into());
    builder.build().unwrap();
}

#[test]
fn test_unexpected_blkdev_id() {
    let mut builder = StorageGraphBuilder::default();

    let partition = generic_partition();
    builder.add_node((&partition).into());

    // FileSystemType::Tmpfs does not expect device_id
    let fs = FileSystem {
        device_id: Some("partition".into()),
        source: FileSystemSource::New(NewFileSystemType::Tmpfs),
        mount_point: Some(MountPoint {
            path: ROOT_MOUNT_POINT_PATH.into(),
            options: MountOptions::defaults(),
        }),
        is_esp: false,
    };
    builder.add_node((&fs).into());
    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::FilesystemUnexpectedBlockDeviceId {
            fs_desc: fs.description()
        }
    );
}

#[test]
fn test_member_validity() {
    let mut builder = StorageGraphBuilder::default();

    let disk = Disk {
        id: "disk".into(),
        device: "/dev/sda".into(),
        partition_table_type: PartitionTableType::Gpt,
        ..Default::default()
    };
    builder.add_node((&disk).into());

    let partition = Partition {
        id: "partition".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::Esp,
        uuid: None,
        label: None,
    };
    builder.add_node((&partition).into());

    let ab_volume_pair = AbVolumePair {
        id: "ab_volume_pair".into(),
        volume_a_id: "disk".into(),
        volume_b_id: "partition".into(),
    };
    builder.add_node((&ab_volume_pair).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::InvalidReferenceKind {
            node_identifier: StorageGraphNode::from(&ab_volume_pair).identifier(),
            kind: BlkDevReferrerKind::ABVolume,
            target_id: "disk".into(),
            target_kind: BlkDevKind::Disk,
            valid_references: BlkDevReferrerKind::ABVolume.compatible_kinds()
        }
    );
}

#[test]
fn test_cardinality() {
    // Test zero cardinalities
    let zero_cardinalities = [
        // Create default instances of all zero cardinality items (the contents of the devices do
        // not matter for this test)
        HostConfigBlockDevice::Disk(Disk::default()),
        HostConfigBlockDevice::Partition(Partition {
            id: "partition".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::LinuxGeneric,
            uuid: None,
            label: None,
        }),
        HostConfigBlockDevice::AdoptedPartition(AdoptedPartition {
            id: "adopted_partition".into(),
            match_label: None,
            match_uuid: None,
        }),
    ];
    for item in zero_cardinalities.iter() {
        let cardinality = item.referrer_kind().valid_target_count();
        assert!(cardinality.contains(0), "{item:?} should contain 0");
        assert_eq!(
            cardinality.min().unwrap(),
            0,
            "{item:?} cardinality start should be 0"
        );
        assert_eq!(
            cardinality.max().unwrap(),
            0,
            "{item:?} cardinality end should be 0"
        );
    }

    // Test RaidArray cardinality
    let raid_cardinality = BlkDevReferrerKind::RaidArray.valid_target_count();
    assert!(
        !raid_cardinality.contains(0),
        "RaidArray should not contain 0"
    );
    assert!(
        !raid_cardinality.contains(1),
        "RaidArray should not contain 1"
    );
    assert!(raid_cardinality.contains(2), "RaidArray should contain 2");
    assert!(raid_cardinality.contains(3), "RaidArray should contain 3");
    assert_eq!(
        raid_cardinality.min().unwrap(),
        2,
        "RaidArray cardinality start should be 2"
    );
    assert!(
        raid_cardinality.max().is_none(),
        "RaidArray cardinality end should be none"
    );

    // Test ABVolume cardinality
    let ab_volume_cardinality = BlkDevReferrerKind::ABVolume.valid_target_count();
    assert!(
        !ab_volume_cardinality.contains(1),
        "ABVolume should not contain 1"
    );
    assert!(
        ab_volume_cardinality.contains(2),
        "ABVolume should contain 2"
    );
    assert!(
        !ab_volume_cardinality.contains(3),
        "ABVolume should not contain 3"
    );
    assert_eq!(
        ab_volume_cardinality.min().unwrap(),
        2,
        "ABVolume cardinality start should be 2"
    );
    assert_eq!(
        ab_volume_cardinality.max().unwrap(),
        2,
        "ABVolume cardinality end should be 2"
    );

    // Test EncryptedVolume cardinality
    let encrypted_volume_cardinality = BlkDevReferrerKind::EncryptedVolume.valid_target_count();
    assert!(
        !encrypted_volume_cardinality.contains(0),
        "EncryptedVolume should not contain 0"
    );
    assert!(
        encrypted_volume_cardinality.contains(1),
        "EncryptedVolume should contain 1"
    );
    assert!(
        !encrypted_volume_cardinality.contains(2),
        "EncryptedVolume should not contain 2"
    );
    assert_eq!(
        encrypted_volume_cardinality.min().unwrap(),
        1,
        "EncryptedVolume cardinality start should be 1"
    );
    assert_eq!(
        encrypted_volume_cardinality.max().unwrap(),
        1,
        "EncryptedVolume cardinality end should be 1"
    );
}

#[test]
fn test_valid_target_count() {
    let partition1 = Partition {
        id: "partition1".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::LinuxGeneric,
        uuid: None,
        label: None,
    };

    let partition2 = Partition {
        id: "partition2".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::LinuxGeneric,
        uuid: None,
        label: None,
    };

    let mut base_builder = StorageGraphBuilder::default();
    base_builder.add_node((&partition1).into());
    base_builder.add_node((&partition2).into());

    // Should be valid
    let raid_ok = SoftwareRaidArray {
        id: "raid_array".into(),
        name: "md0".into(),
        devices: vec!["partition1".into(), "partition2".into()],
        level: RaidLevel::Raid1,
    };

    let mut builder = base_builder.clone();
    builder.add_node((&raid_ok).into());

    builder.build().unwrap();

    // Should not be ok
    let raid_empty = SoftwareRaidArray {
        id: "raid_array".into(),
        name: "md0".into(),
        devices: vec![],
        level: RaidLevel::Raid1,
    };

    let mut builder = base_builder.clone();
    builder.add_node((&raid_empty).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::InvalidTargetCount {
            node_identifier: StorageGraphNode::from(&raid_empty).identifier(),
            kind: BlkDevReferrerKind::RaidArray,
            target_count: 0_usize,
            expected: BlkDevReferrerKind::RaidArray.valid_target_count()
        }
    );

    // Should not be ok
    let raid_single = SoftwareRaidArray {
        id: "raid_array".into(),
        name: "md0".into(),
        devices: vec!["partition1".into()],
        level: RaidLevel::Raid1,
    };

    let mut builder = base_builder.clone();
    builder.add_node((&raid_single).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::InvalidTargetCount {
            node_identifier: StorageGraphNode::from(&raid_single).identifier(),
            kind: BlkDevReferrerKind::RaidArray,
            target_count: 1_usize,
            expected: BlkDevReferrerKind::RaidArray.valid_target_count()
        }
    );
}

#[test]
fn test_invalid_sizes() {
    let base_builder = StorageGraphBuilder::default();

    let partition1 = Partition {
        id: "partition1".into(),
        size: PartitionSize::Fixed(2048.into()),
        partition_type: PartitionType::LinuxGeneric,
        uuid: None,
        label: None,
    };
    let mut builder = base_builder.clone();
    builder.add_node((&partition1).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::BasicCheckFailed {
            node_id: "partition1".into(),
            kind: BlkDevKind::Partition,
            body: "Partition size must be a non-zero multiple of 4096 bytes.".into()
        }
    );

    let partition2 = Partition {
        id: "partition2".into(),
        size: PartitionSize::Fixed(5032.into()),
        partition_type: PartitionType::LinuxGeneric,
        uuid: None,
        label: None,
    };
    let mut builder = base_builder.clone();
    builder.add_node((&partition2).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::BasicCheckFailed {
            node_id: "partition2".into(),
            kind: BlkDevKind::Partition,
            body: "Partition size must be a non-zero multiple of 4096 bytes.".into()
        }
    );

    let partition_zero = Partition {
        id: "partition_zero".into(),
        size: PartitionSize::Fixed(0.into()),
        partition_type: PartitionType::LinuxGeneric,
        uuid: None,
        label: None,
    };
    let mut builder = base_builder.clone();
    builder.add_node((&partition_zero).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::BasicCheckFailed {
            node_id: "partition_zero".into(),
            kind: BlkDevKind::Partition,
            body: "Partition size must be a non-zero multiple of 4096 bytes.".into()
        }
    );
}

#[test]
fn test_mount_point_path_not_absolute() {
    let mut builder = StorageGraphBuilder::default();

    let partition = generic_partition();
    builder.add_node((&partition).into());

    let fs = FileSystem {
        device_id: Some("partition".into()),
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: "not/absolute".into(),
            options: MountOptions::defaults(),
        }),
        is_esp: false,
    };
    builder.add_node((&fs).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::MountPointPathNotAbsolute("not/absolute".to_string())
    );
}

#[test]
fn test_nonexistent_ref() {
    let mut builder = StorageGraphBuilder::default();

    let fs = FileSystem {
        device_id: Some("partition".into()),
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: ROOT_MOUNT_POINT_PATH.into(),
            options: MountOptions::empty(),
        }),
        is_esp: false,
    };
    builder.add_node((&fs).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::NonExistentReference {
            node_identifier: StorageGraphNode::from(&fs).identifier(),
            kind: BlkDevReferrerKind::FileSystemImage,
            target_id: "partition".into()
        }
    );
}

#[test]
fn test_nonexistent_ref_raid() {
    let mut builder = StorageGraphBuilder::default();

    let partition = generic_partition();
    builder.add_node((&partition).into());

    let raid_array = SoftwareRaidArray {
        id: "raid_array".into(),
        name: "md0".into(),
        devices: vec!["partition".into(), "nonexistent-partition".into()],
        level: RaidLevel::Raid1,
    };
    builder.add_node((&raid_array).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::NonExistentReference {
            node_identifier: StorageGraphNode::from(&raid_array).identifier(),
            kind: BlkDevReferrerKind::RaidArray,
            target_id: "nonexistent-partition".into()
        }
    )
}

#[test]
fn test_unique_field_constraint_error() {
    let mut builder = StorageGraphBuilder::default();

    let disk1 = Disk {
        id: "disk1".into(),
        device: "/dev/sda".into(),
        partition_table_type: PartitionTableType::Gpt,
        ..Default::default()
    };
    builder.add_node((&disk1).into());

    let disk2 = Disk {
        id: "disk2".into(),
        device: "/dev/sda".into(),
        partition_table_type: PartitionTableType::Gpt,
        ..Default::default()
    };
    builder.add_node((&disk2).into());

    // Graph build should fail because across all disk nodes, the "device" field must be unique.
    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::UniqueFieldConstraintError {
            node_id: "disk2".into(),
            other_id: "disk1".into(),
            kind: BlkDevKind::Disk,
            field_name: "device".into(),
            value: "/dev/sda".into()
        }
    );
}

#[test]
fn test_partition_uuid_uniqueness_constraint() {
    let uuid = Uuid::parse_str("123e4567-e89b-12d3-a456-426614174000").unwrap();
    let other_uuid = Uuid::parse_str("223e4567-e89b-12d3-a456-426614174000").unwrap();

    let partition1 = Partition {
        id: "partition1".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::LinuxGeneric,
        uuid: Some(uuid),
        label: None,
    };

    let mut partition2 = Partition {
        id: "partition2".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::LinuxGeneric,
        // Some DIFFERENT UUID
        uuid: Some(other_uuid),
        label: None,
    };

    let partition3 = Partition {
        id: "partition3".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::LinuxGeneric,
        uuid: None,
        label: None,
    };

    let mut builder = StorageGraphBuilder::default();
    builder.add_node((&partition1).into());
    builder.add_node((&partition2).into());
    builder.add_node((&partition3).into());

    // Ensure no error occurs when UUIDs are different
    builder.build().unwrap();

    let mut builder = StorageGraphBuilder::default();
    builder.add_node((&partition1).into());

    // Now set partition2's UUID to be the SAME as partition1's UUID
    partition2.uuid = Some(uuid);
    builder.add_node((&partition2).into());

    builder.add_node((&partition3).into());

    // Graph build should fail because partition UUIDs must be unique.
    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::UniqueFieldConstraintError {
            node_id: "partition2".into(),
            other_id: "partition1".into(),
            kind: BlkDevKind::Partition,
            field_name: "uuid".into(),
            value: String::from_utf8_lossy(uuid.as_bytes()).into()
        }
    );
}

#[test]
fn test_esp_enforce_partition_type() {
    // Test success case
    let mut builder = StorageGraphBuilder::default();

    let mut partition = Partition {
        id: "partition".into(),
        size: PartitionSize::Fixed(4096.into()),
        // Correct type for ESP
        partition_type: PartitionType::Esp,
        uuid: None,
        label: None,
    };
    builder.add_node((&partition).into());

    let fs = FileSystem {
        device_id: Some("partition".into()),
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: DEFAULT_ESP_MOUNT_POINT_PATH.into(),
            options: MountOptions::defaults(),
        }),
        is_esp: true,
    };
    builder.add_node((&fs).into());
    builder.build().unwrap();

    // Test failure case
    let mut builder = StorageGraphBuilder::default();
    // Incorrect type for ESP
    partition.partition_type = PartitionType::LinuxGeneric;

    builder.add_node((&partition).into());
    builder.add_node((&fs).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::InvalidPartitionType {
            node_identifier: StorageGraphNode::from(&fs).identifier(),
            kind: BlkDevReferrerKind::FileSystemEsp,
            partition_id: "partition".into(),
            partition_type: PartitionType::LinuxGeneric,
            valid_types: expected_partition_type(
                Path::new(DEFAULT_ESP_MOUNT_POINT_PATH),
                Some(Path::new(DEFAULT_ESP_MOUNT_POINT_PATH))
            )
        }
    );
}

#[test]
fn test_filesystem_esp_multiple_fail() {
    let mut builder = StorageGraphBuilder::default();

    let partition1 = Partition {
        id: "esp1".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::Esp,
        uuid: None,
        label: None,
    };
    builder.add_node((&partition1).into());

    let partition2 = Partition {
        id: "esp2".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::Esp,
        uuid: None,
        label: None,
    };
    builder.add_node((&partition2).into());

    let fs1 = FileSystem {
        device_id: Some("esp1".into()),
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: DEFAULT_ESP_MOUNT_POINT_PATH.into(),
            options: MountOptions::defaults(),
        }),
        is_esp: true,
    };
    builder.add_node((&fs1).into());

    let fs2 = FileSystem {
        device_id: Some("esp2".into()),
        source: FileSystemSource::Image,
        mount_point: Some(MountPoint {
            path: "/efi".into(),
            options: MountOptions::defaults(),
        }),
        is_esp: true,
    };
    builder.add_node((&fs2).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::FilesystemEspMultiple {
            fs_desc_a: fs1.description(),
            fs_desc_b: fs2.description(),
        }
    );
}

#[test]
fn test_filesystem_esp_without_mount_point_fail() {
    let mut builder = StorageGraphBuilder::default();

    let partition = Partition {
        id: "esp".into(),
        size: PartitionSize::Fixed(4096.into()),
        partition_type: PartitionType::Esp,
        uuid: None,
        label: None,
    };
    builder.add_node((&partition).into());

    let fs = FileSystem {
        device_id: Some("esp".into()),
        source: FileSystemSource::Image,
        mount_point: None,
        is_esp: true,
    };
    builder.add_node((&fs).into());

    assert_eq!(
        builder.build().unwrap_err(),
        StorageGraphBuildError::FilesystemEspWithoutMountPoint {
            fs_desc: fs.description(),
        }
    );
}

mod verity {
    use super::*;

    use crate::{config::VerityDevice, storage_graph::references::SpecialReferenceKind};

    #[test]
    fn test_verity_homogeneous_targets() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::RootVerity,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let verity_dev = VerityDevice {
            id: "verity_dev".into(),
            data_device_id: "part1".into(),
            hash_device_id: "part2".into(),
            name: "verity".into(),
            ..Default::default()
        };
        builder.add_node((&verity_dev).into());

        builder.build().unwrap();
    }

    #[test]
    fn test_verity_heterogeneous_targets_fail() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let part3 = Partition {
            id: "part3".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::RootVerity,
            uuid: None,
            label: None,
        };
        builder.add_node((&part3).into());

        let raid = SoftwareRaidArray {
            id: "raid".into(),
            name: "md0".into(),
            devices: vec!["part1".into(), "part2".into()],
            level: RaidLevel::Raid1,
        };
        builder.add_node((&raid).into());

        let verity_dev = VerityDevice {
            id: "verity_dev".into(),
            data_device_id: "raid".into(),
            hash_device_id: "part3".into(),
            name: "verity".into(),
            ..Default::default()
        };
        builder.add_node((&verity_dev).into());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::ReferenceKindMismatch {
                node_identifier: StorageGraphNode::from(&verity_dev).identifier(),
                kind: BlkDevReferrerKind::VerityDevice,
            }
        );
    }

    #[test]
    fn test_verity_invalid_partition_type_fail() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Home,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::RootVerity,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let verity_dev = VerityDevice {
            id: "verity_dev".into(),
            data_device_id: "part1".into(),
            hash_device_id: "part2".into(),
            name: "verity".into(),
            ..Default::default()
        };
        let vfs_node = StorageGraphNode::from(&verity_dev);
        builder.add_node(vfs_node.clone());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::InvalidPartitionTypeSpecial {
                node_identifier: vfs_node.identifier(),
                kind: vfs_node.referrer_kind(),
                partition_id: "part1".into(),
                partition_type: PartitionType::Home,
                valid_types: SpecialReferenceKind::VerityDataDevice
                    .allowed_partition_types()
                    .unwrap(),
                special_ref_kind: SpecialReferenceKind::VerityDataDevice,
            }
        );
    }

    #[test]
    fn test_verity_invalid_hash_partition_type_fail() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Usr,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let verity_dev = VerityDevice {
            id: "verity_dev".into(),
            data_device_id: "part1".into(),
            hash_device_id: "part2".into(),
            name: "verity".into(),
            ..Default::default()
        };
        let vfs_node = StorageGraphNode::from(&verity_dev);
        builder.add_node(vfs_node.clone());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::InvalidPartitionTypeSpecial {
                node_identifier: vfs_node.identifier(),
                kind: vfs_node.referrer_kind(),
                partition_id: "part2".into(),
                partition_type: PartitionType::Usr,
                valid_types: SpecialReferenceKind::VerityHashDevice
                    .allowed_partition_types()
                    .unwrap(),
                special_ref_kind: SpecialReferenceKind::VerityHashDevice,
            }
        );
    }

    #[test]
    fn test_verity_filesystem_duplicate_name() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::RootVerity,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let verity_dev1 = VerityDevice {
            id: "verity1".into(),
            data_device_id: "part1".into(),
            hash_device_id: "part2".into(),
            name: "verity".into(),
            ..Default::default()
        };

        builder.add_node((&verity_dev1).into());

        let part3 = Partition {
            id: "part3".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part3).into());

        let part4 = Partition {
            id: "part4".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::RootVerity,
            uuid: None,
            label: None,
        };
        builder.add_node((&part4).into());

        let verity_dev2 = VerityDevice {
            id: "verity2".into(),
            data_device_id: "part3".into(),
            hash_device_id: "part4".into(),
            name: "verity".into(),
            ..Default::default()
        };

        builder.add_node((&verity_dev2).into());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::UniqueFieldConstraintError {
                node_id: "verity2".into(),
                other_id: "verity1".into(),
                kind: BlkDevKind::VerityDevice,
                field_name: "name".into(),
                value: "verity".into(),
            },
        );
    }

    #[test]
    fn test_verity_nonexistent_ref() {
        let mut builder = StorageGraphBuilder::default();

        let partition = generic_partition();
        builder.add_node((&partition).into());

        let verity_dev = VerityDevice {
            id: "verity".into(),
            data_device_id: "partition".into(),
            hash_device_id: "nonexistent-hash-partition".into(),
            name: "verity".into(),
            ..Default::default()
        };

        builder.add_node((&verity_dev).into());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::NonExistentReference {
                node_identifier: StorageGraphNode::from(&verity_dev).identifier(),
                kind: BlkDevReferrerKind::VerityDevice,
                target_id: "nonexistent-hash-partition".into()
            }
        );
    }

    #[test]
    fn test_verity_invalid_hash_partition_type_mismatch_fail() {
        let mut builder = StorageGraphBuilder::default();

        // Data device is Root, so the expected hash type is RootVerity.
        let part1 = Partition {
            id: "part1".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        // Hash device is UsrVerity instead of the expected RootVerity.
        let part2 = Partition {
            id: "part2".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::UsrVerity,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let verity_dev = VerityDevice {
            id: "verity_dev".into(),
            data_device_id: "part1".into(),
            hash_device_id: "part2".into(),
            name: "verity".into(),
            ..Default::default()
        };
        builder.add_node((&verity_dev).into());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::InvalidVerityHashPartitionType {
                node_id: "verity".into(),
                data_dev_partition_type: PartitionType::Root,
                expected_type: PartitionType::RootVerity,
                hash_dev_partition_type: PartitionType::UsrVerity,
            }
        );
    }
}

mod ab {
    use super::*;

    use crate::config::EncryptedVolume;

    #[test]
    fn test_ab_volume_heterogeneous_references_fail() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            size: PartitionSize::Fixed(4096.into()),
            partition_type: PartitionType::Root,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let enc = EncryptedVolume {
            id: "enc".into(),
            device_id: "part2".into(),
            device_name: "encrypted".into(),
        };
        builder.add_node((&enc).into());

        let ab = AbVolumePair {
            id: "ab".into(),
            volume_a_id: "part1".into(),
            volume_b_id: "enc".into(),
        };
        builder.add_node((&ab).into());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::ReferenceKindMismatch {
                node_identifier: StorageGraphNode::from(&ab).identifier(),
                kind: BlkDevReferrerKind::ABVolume,
            }
        );
    }

    #[test]
    fn test_ab_volume_partition_size_mismatch() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            partition_type: PartitionType::LinuxGeneric,
            size: PartitionSize::Fixed(4096.into()),
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            partition_type: PartitionType::LinuxGeneric,
            size: PartitionSize::Fixed(8192.into()),
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let ab = AbVolumePair {
            id: "ab".into(),
            volume_a_id: "part1".into(),
            volume_b_id: "part2".into(),
        };
        builder.add_node((&ab).into());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::PartitionSizeMismatch {
                node_identifier: StorageGraphNode::from(&ab).identifier(),
                kind: BlkDevReferrerKind::ABVolume
            }
        );
    }

    #[test]
    fn test_ab_volume_partition_size_grow() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            partition_type: PartitionType::LinuxGeneric,
            size: PartitionSize::Grow,
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            partition_type: PartitionType::LinuxGeneric,
            size: PartitionSize::Grow,
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let ab = AbVolumePair {
            id: "ab".into(),
            volume_a_id: "part1".into(),
            volume_b_id: "part2".into(),
        };
        builder.add_node((&ab).into());

        // AB Volume pairs expected to have equally sized, fixed volumes
        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::PartitionSizeNotFixed {
                node_identifier: StorageGraphNode::from(&ab).identifier(),
                kind: BlkDevReferrerKind::ABVolume,
                partition_id: "part2".into()
            }
        );
    }

    #[test]
    fn test_ab_volume_partition_type_mismatch() {
        let mut builder = StorageGraphBuilder::default();

        let part1 = Partition {
            id: "part1".into(),
            partition_type: PartitionType::Root,
            size: PartitionSize::Fixed(4096.into()),
            uuid: None,
            label: None,
        };
        builder.add_node((&part1).into());

        let part2 = Partition {
            id: "part2".into(),
            partition_type: PartitionType::LinuxGeneric,
            size: PartitionSize::Fixed(4096.into()),
            uuid: None,
            label: None,
        };
        builder.add_node((&part2).into());

        let ab = AbVolumePair {
            id: "ab".into(),
            volume_a_id: "part1".into(),
            volume_b_id: "part2".into(),
        };
        builder.add_node((&ab).into());

        // AB Volume pairs must have same partition type
        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::PartitionTypeMismatch {
                node_identifier: StorageGraphNode::from(&ab).identifier(),
                kind: BlkDevReferrerKind::ABVolume
            }
        );
    }

    #[test]
    fn test_ab_volume_nonexistent_ref() {
        let mut builder = StorageGraphBuilder::default();

        let partition = generic_partition();
        builder.add_node((&partition).into());

        let ab = AbVolumePair {
            id: "ab".into(),
            volume_a_id: "partition".into(),
            volume_b_id: "nonexistent-partition".into(),
        };
        builder.add_node((&ab).into());

        assert_eq!(
            builder.build().unwrap_err(),
            StorageGraphBuildError::NonExistentReference {
                node_identifier: StorageGraphNode::from(&ab).identifier(),
                kind: BlkDevReferrerKind::ABVolume,
                target_id: "nonexistent-partition".into()
            }
        );
    }
}
