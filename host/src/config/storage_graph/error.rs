//! Why a Host Configuration's storage does not make a valid graph of block
//! devices. Every variant names the key path it is about; [`GraphError::into_trident`]
//! makes it an invalid-host-configuration error with the key's line.

use super::node::{DeviceKind, ReferrerKind, Role};
use crate::config::{PartitionType, RaidLevel, spans};
use crate::error::{Subkind, TridentError};

/// A rule of the block-device graph that the storage breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("id must not be empty")]
    EmptyId { key: String },
    #[error("id '{id}' is already used at '{first}'")]
    DuplicateId {
        key: String,
        id: String,
        first: String,
    },
    #[error("'{value}' is already the {field} of '{first}'")]
    DuplicateField {
        key: String,
        field: &'static str,
        value: String,
        first: String,
    },
    #[error("an adopted partition needs exactly one of matchLabel or matchUuid")]
    AdoptedPartitionMatch { key: String },
    #[error("a {referrer} needs {expected}; {found} given")]
    TargetCount {
        key: String,
        referrer: ReferrerKind,
        expected: &'static str,
        found: usize,
    },
    #[error("references unknown device '{target}'")]
    UnknownReference { key: String, target: String },
    #[error("'{target}' is already a {role} of this {referrer}; {hint}")]
    DuplicateTarget {
        key: String,
        target: String,
        role: &'static str,
        referrer: ReferrerKind,
        hint: &'static str,
    },
    #[error("the devices form a cycle: {cycle}")]
    Cycle { key: String, cycle: String },
    #[error("'{target}' is a {target_kind}; a {referrer} sits on {allowed}")]
    IncompatibleKind {
        key: String,
        target: String,
        target_kind: DeviceKind,
        referrer: ReferrerKind,
        allowed: String,
    },
    #[error("'{target}' is already used at '{first}'; a device is used once{hint}")]
    SharedDevice {
        key: String,
        target: String,
        first: String,
        /// What to write instead, where that is clear.
        hint: &'static str,
    },
    #[error(
        "'{target}' is a {target_kind} and '{first}' a {first_kind}: the devices of a {referrer} are of one kind"
    )]
    MixedKinds {
        key: String,
        target: String,
        target_kind: DeviceKind,
        first: String,
        first_kind: DeviceKind,
        referrer: ReferrerKind,
    },
    #[error("partition '{partition}' of a {referrer} needs a fixed size, not 'grow'")]
    SizeNotFixed {
        key: String,
        partition: String,
        referrer: ReferrerKind,
    },
    #[error(
        "partitions '{first}' ({first_size}) and '{partition}' ({size}) must have the same size"
    )]
    SizeMismatch {
        key: String,
        partition: String,
        size: String,
        first: String,
        first_size: String,
    },
    #[error(
        "partitions '{first}' ({first_type}) and '{partition}' ({partition_type}) must have the same type"
    )]
    TypeMismatch {
        key: String,
        partition: String,
        partition_type: String,
        first: String,
        first_type: String,
    },
    #[error("partition '{partition}' has type '{partition_type}'; a {what} takes {allowed}")]
    PartitionTypeNotAllowed {
        key: String,
        partition: String,
        partition_type: String,
        what: String,
        allowed: String,
    },
    #[error(
        "hash partition '{hash}' has type '{hash_type}'; data of type '{data_type}' needs a '{expected}' hash partition"
    )]
    VerityHashType {
        key: String,
        hash: String,
        hash_type: String,
        data_type: String,
        expected: String,
    },
    #[error("RAID array '{raid}' is {level}; an ESP on RAID must be raid1")]
    EspRaidLevel {
        key: String,
        raid: String,
        level: String,
    },
}

impl GraphError {
    /// The key path the error is about.
    pub fn key(&self) -> &str {
        match self {
            Self::EmptyId { key }
            | Self::DuplicateId { key, .. }
            | Self::DuplicateField { key, .. }
            | Self::AdoptedPartitionMatch { key }
            | Self::TargetCount { key, .. }
            | Self::UnknownReference { key, .. }
            | Self::DuplicateTarget { key, .. }
            | Self::Cycle { key, .. }
            | Self::IncompatibleKind { key, .. }
            | Self::SharedDevice { key, .. }
            | Self::MixedKinds { key, .. }
            | Self::SizeNotFixed { key, .. }
            | Self::SizeMismatch { key, .. }
            | Self::TypeMismatch { key, .. }
            | Self::PartitionTypeNotAllowed { key, .. }
            | Self::VerityHashType { key, .. }
            | Self::EspRaidLevel { key, .. } => key,
        }
    }

    /// The invalid-host-configuration error, naming the key and, when
    /// `yaml` (the document) has it, its line and column.
    #[track_caller]
    pub fn into_trident(&self, yaml: Option<&str>) -> TridentError {
        let key = self.key();
        let location = yaml.map(|y| locate(y, key)).unwrap_or_default();
        TridentError::new(
            Subkind::InvalidHostConfiguration,
            format!("Host Configuration key '{key}'{location}: {self}"),
        )
    }
}

impl From<GraphError> for TridentError {
    #[track_caller]
    fn from(e: GraphError) -> Self {
        e.into_trident(None)
    }
}

/// ` (line L, column C)` of `key`, or of the nearest enclosing key that
/// is written out (`storage.swap[0].deviceId` written as a bare id).
fn locate(yaml: &str, key: &str) -> String {
    let mut path = key;
    loop {
        let found = spans::describe(yaml, path);
        if !found.is_empty() {
            return found;
        }
        match path.rfind(['.', '[']) {
            Some(cut) if cut > 0 => path = &path[..cut],
            _ => return String::new(),
        }
    }
}

/// "partition or RAID array" for messages.
pub(super) fn kinds_text(kinds: &[DeviceKind]) -> String {
    match kinds {
        [] => "nothing".into(),
        [one] => format!("a {one}"),
        _ => {
            let names: Vec<String> = kinds.iter().map(|k| format!("a {k}")).collect();
            names.join(" or ")
        }
    }
}

/// "'root', 'usr' or 'linux-generic'" for messages.
pub(super) fn types_text(types: &[PartitionType]) -> String {
    let names: Vec<String> = types.iter().map(|t| format!("'{}'", t.name())).collect();
    names.join(" or ")
}

pub(super) fn role_hint(role: Role, referrer: ReferrerKind) -> &'static str {
    match (referrer, role) {
        (ReferrerKind::AbVolume, _) => "a pair needs two partitions",
        (ReferrerKind::RaidArray, _) => "each member of an array is a different device",
        (ReferrerKind::VerityDevice, _) => "data and hash are different devices",
        _ => "a device is named once",
    }
}

pub(super) fn level_name(level: RaidLevel) -> String {
    format!("{level:?}").to_lowercase()
}
