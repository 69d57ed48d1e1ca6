//! Upstream's rules of which device may sit on which (microsoft/trident
//! `storage_graph/rules/mod.rs`), as tables: the device kinds each referrer
//! takes, how many, which partition types, and what must be alike.

use super::node::{DeviceKind, ReferrerKind, Role};
use crate::config::PartitionType;

/// The device kinds a referrer may sit on.
pub fn compatible_kinds(referrer: ReferrerKind) -> &'static [DeviceKind] {
    use DeviceKind::*;
    match referrer {
        ReferrerKind::RaidArray => &[Partition],
        ReferrerKind::AbVolume => &[Partition, RaidArray, EncryptedVolume],
        ReferrerKind::EncryptedVolume => &[Partition, RaidArray],
        ReferrerKind::VerityDevice => &[Partition, RaidArray, AbVolume],
        ReferrerKind::Swap => &[Partition, EncryptedVolume],
        ReferrerKind::FilesystemNew => &[Partition, RaidArray, EncryptedVolume, AbVolume],
        ReferrerKind::FilesystemImage => &[
            Partition,
            RaidArray,
            EncryptedVolume,
            AbVolume,
            VerityDevice,
        ],
        ReferrerKind::FilesystemEsp => &[Partition, AdoptedPartition, RaidArray],
        ReferrerKind::FilesystemAdopted => &[AdoptedPartition],
    }
}

/// How many devices a referrer sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cardinality {
    Exactly(usize),
    AtLeast(usize),
    AtMost(usize),
}

impl Cardinality {
    pub fn allows(self, n: usize) -> bool {
        match self {
            Self::Exactly(k) => n == k,
            Self::AtLeast(k) => n >= k,
            Self::AtMost(k) => n <= k,
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            Self::Exactly(1) => "exactly one device",
            Self::Exactly(2) => "exactly two devices",
            Self::AtLeast(2) => "at least two devices",
            Self::AtMost(1) => "at most one device",
            _ => "another number of devices",
        }
    }
}

pub fn valid_target_count(referrer: ReferrerKind) -> Cardinality {
    match referrer {
        ReferrerKind::RaidArray => Cardinality::AtLeast(2),
        ReferrerKind::AbVolume | ReferrerKind::VerityDevice => Cardinality::Exactly(2),
        ReferrerKind::FilesystemNew => Cardinality::AtMost(1),
        ReferrerKind::EncryptedVolume
        | ReferrerKind::Swap
        | ReferrerKind::FilesystemImage
        | ReferrerKind::FilesystemEsp
        | ReferrerKind::FilesystemAdopted => Cardinality::Exactly(1),
    }
}

/// The devices of an array, pair, volume, verity device or swap are all
/// of one kind.
pub fn homogeneous_kinds(referrer: ReferrerKind) -> bool {
    matches!(
        referrer,
        ReferrerKind::RaidArray
            | ReferrerKind::AbVolume
            | ReferrerKind::EncryptedVolume
            | ReferrerKind::VerityDevice
            | ReferrerKind::Swap
    )
}

/// The partitions under an array or a pair have one fixed size.
pub fn homogeneous_sizes(referrer: ReferrerKind) -> bool {
    matches!(referrer, ReferrerKind::RaidArray | ReferrerKind::AbVolume)
}

/// The partitions under it have one type (not a verity device: its data
/// and hash partitions differ by design).
pub fn homogeneous_types(referrer: ReferrerKind) -> bool {
    referrer != ReferrerKind::VerityDevice
}

/// Which partition types may be under a referrer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeRule {
    Any,
    Allow(Vec<PartitionType>),
    Block(Vec<PartitionType>),
}

impl TypeRule {
    pub fn allows(&self, t: &PartitionType) -> bool {
        match self {
            Self::Any => true,
            Self::Allow(list) => list.contains(t),
            Self::Block(list) => !list.contains(t),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Self::Any => "any type".into(),
            Self::Allow(list) => super::error::types_text(list),
            Self::Block(list) => format!("any type but {}", super::error::types_text(list)),
        }
    }
}

pub fn allowed_partition_types(referrer: ReferrerKind) -> TypeRule {
    use PartitionType::*;
    match referrer {
        // Upstream allows only 'esp' under the ESP filesystem; this daemon
        // has always taken any type there (a raw GUID too), so that stays.
        ReferrerKind::RaidArray
        | ReferrerKind::AbVolume
        | ReferrerKind::FilesystemImage
        | ReferrerKind::FilesystemEsp => TypeRule::Any,
        ReferrerKind::EncryptedVolume => {
            TypeRule::Block(vec![Esp, Root, RootVerity, UsrVerity, Home])
        }
        ReferrerKind::FilesystemNew | ReferrerKind::FilesystemAdopted => TypeRule::Block(vec![Esp]),
        ReferrerKind::VerityDevice => {
            TypeRule::Allow(vec![Root, RootVerity, Usr, UsrVerity, LinuxGeneric])
        }
        ReferrerKind::Swap => TypeRule::Allow(vec![Swap]),
    }
}

/// The types a verity data or hash device's partitions may have (one type
/// per role).
pub fn verity_role_types(role: Role) -> Option<TypeRule> {
    use PartitionType::*;
    match role {
        Role::VerityData => Some(TypeRule::Allow(vec![Root, Usr, LinuxGeneric])),
        Role::VerityHash => Some(TypeRule::Allow(vec![RootVerity, UsrVerity, LinuxGeneric])),
        Role::Device | Role::VolumeA | Role::VolumeB => None,
    }
}

/// The hash partition type that goes with a data partition type (`None`:
/// any, for linux-generic data).
pub fn verity_hash_type(data: &PartitionType) -> Option<PartitionType> {
    match data {
        PartitionType::Root => Some(PartitionType::RootVerity),
        PartitionType::Usr => Some(PartitionType::UsrVerity),
        _ => None,
    }
}
