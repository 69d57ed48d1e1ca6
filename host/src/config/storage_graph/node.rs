//! The nodes of the block-device graph: the devices (what may be sat on)
//! and what refers to other devices (arrays, pairs, volumes, filesystems,
//! swap), each with the key path it was written at.

use std::fmt;

use crate::config::{FileSystemType, FilesystemSource, PartitionSize, PartitionType, RaidLevel};

/// What kind of block device a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceKind {
    Disk,
    Partition,
    AdoptedPartition,
    RaidArray,
    AbVolume,
    EncryptedVolume,
    VerityDevice,
}

impl DeviceKind {
    pub const ALL: [DeviceKind; 7] = [
        Self::Disk,
        Self::Partition,
        Self::AdoptedPartition,
        Self::RaidArray,
        Self::AbVolume,
        Self::EncryptedVolume,
        Self::VerityDevice,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Disk => "disk",
            Self::Partition => "partition",
            Self::AdoptedPartition => "adopted partition",
            Self::RaidArray => "RAID array",
            Self::AbVolume => "A/B volume pair",
            Self::EncryptedVolume => "encrypted volume",
            Self::VerityDevice => "verity device",
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a node that refers to devices is (upstream's referrer kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReferrerKind {
    RaidArray,
    AbVolume,
    EncryptedVolume,
    VerityDevice,
    Swap,
    /// `source: new`.
    FilesystemNew,
    /// `source: image` (the default).
    FilesystemImage,
    /// The filesystem mounted as the ESP.
    FilesystemEsp,
    /// `source: adopted`.
    FilesystemAdopted,
}

impl ReferrerKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::RaidArray => "RAID array",
            Self::AbVolume => "A/B volume pair",
            Self::EncryptedVolume => "encrypted volume",
            Self::VerityDevice => "verity device",
            Self::Swap => "swap device",
            Self::FilesystemNew => "new filesystem",
            Self::FilesystemImage => "filesystem from the image",
            Self::FilesystemEsp => "ESP filesystem",
            Self::FilesystemAdopted => "adopted filesystem",
        }
    }
}

impl fmt::Display for ReferrerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The part a reference plays for its referrer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A RAID member, the device under an encrypted volume, swap or a filesystem.
    Device,
    VolumeA,
    VolumeB,
    /// The data device of a verity device.
    VerityData,
    /// The hash device of a verity device.
    VerityHash,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Self::Device => "device",
            Self::VolumeA => "volume A",
            Self::VolumeB => "volume B",
            Self::VerityData => "verity data device",
            Self::VerityHash => "verity hash device",
        }
    }
}

/// One reference from a node to a device, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The id referred to.
    pub target: String,
    pub role: Role,
    /// Where it is written (`storage.raid.software[1].devices[0]`).
    pub key: String,
}

/// What a node is, with the attributes the rules read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeData {
    Disk {
        device: String,
    },
    Partition {
        disk_id: String,
        partition_type: PartitionType,
        size: PartitionSize,
    },
    AdoptedPartition {
        disk_id: String,
        match_label: Option<String>,
        match_uuid: Option<String>,
    },
    RaidArray {
        name: String,
        level: RaidLevel,
    },
    AbVolume,
    EncryptedVolume {
        device_name: String,
    },
    VerityDevice {
        name: String,
    },
    Filesystem {
        mount_point: String,
        source: FilesystemSource,
        fs_type: Option<FileSystemType>,
        esp: bool,
    },
    Swap,
}

/// One node of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The device id; filesystems and swap have none.
    pub id: Option<String>,
    /// Where the node is written (`storage.raid.software[1]`).
    pub key: String,
    pub data: NodeData,
    /// The devices it sits on, in document order.
    pub references: Vec<Reference>,
}

impl Node {
    /// The device kind (`None` for filesystems and swap).
    pub fn device_kind(&self) -> Option<DeviceKind> {
        Some(match self.data {
            NodeData::Disk { .. } => DeviceKind::Disk,
            NodeData::Partition { .. } => DeviceKind::Partition,
            NodeData::AdoptedPartition { .. } => DeviceKind::AdoptedPartition,
            NodeData::RaidArray { .. } => DeviceKind::RaidArray,
            NodeData::AbVolume => DeviceKind::AbVolume,
            NodeData::EncryptedVolume { .. } => DeviceKind::EncryptedVolume,
            NodeData::VerityDevice { .. } => DeviceKind::VerityDevice,
            NodeData::Filesystem { .. } | NodeData::Swap => return None,
        })
    }

    /// What it is as a referrer (`None` for disks and partitions).
    pub fn referrer_kind(&self) -> Option<ReferrerKind> {
        Some(match &self.data {
            NodeData::Disk { .. }
            | NodeData::Partition { .. }
            | NodeData::AdoptedPartition { .. } => return None,
            NodeData::RaidArray { .. } => ReferrerKind::RaidArray,
            NodeData::AbVolume => ReferrerKind::AbVolume,
            NodeData::EncryptedVolume { .. } => ReferrerKind::EncryptedVolume,
            NodeData::VerityDevice { .. } => ReferrerKind::VerityDevice,
            NodeData::Swap => ReferrerKind::Swap,
            NodeData::Filesystem { esp: true, .. } => ReferrerKind::FilesystemEsp,
            NodeData::Filesystem { source, .. } => match source {
                FilesystemSource::Image => ReferrerKind::FilesystemImage,
                FilesystemSource::New => ReferrerKind::FilesystemNew,
                FilesystemSource::Adopted => ReferrerKind::FilesystemAdopted,
            },
        })
    }

    /// How it is named in messages: its id, or its key path.
    pub fn label(&self) -> &str {
        self.id.as_deref().unwrap_or(&self.key)
    }
}
