//! The Host Configuration subset (camelCase YAML). Every struct denies
//! unknown keys. Upstream features outside the subset are declared as
//! [`Unsupported`] fields so that using them is answered with an
//! unsupported-configuration error naming the key (and its line), instead
//! of an "unknown key" error or, worse, being ignored.

mod parse;
mod size;
mod unsupported;
mod validate;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use parse::{parse, to_yaml};
pub use size::PartitionSize;
pub use validate::validate;

/// An upstream key we recognise but do not support. Never serialized.
pub type Unsupported = Option<serde_saphyr::Spanned<serde::de::IgnoredAny>>;

/// Default datastore location (upstream).
pub const DEFAULT_DATASTORE_PATH: &str = "/var/lib/trident/datastore.sqlite";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostConfiguration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<Image>,
    #[serde(default)]
    pub storage: Storage,
    #[serde(default, skip_serializing_if = "Scripts::is_empty")]
    pub scripts: Scripts,
    #[serde(default, skip_serializing_if = "Health::is_empty")]
    pub health: Health,
    #[serde(default, skip_serializing_if = "TridentSettings::is_empty")]
    pub trident: TridentSettings,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<Os>,
    #[serde(default, skip_serializing)]
    pub management_os: Unsupported,
    #[serde(default, skip_serializing)]
    pub internal_params: Unsupported,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    /// file://, http:// or https:// URL of a COSI file.
    pub url: String,
    /// SHA-384 of the COSI metadata.json (96 hex digits) or `ignored`.
    pub sha384: String,
}

/// The word that disables the image hash check.
pub const HASH_IGNORED: &str = "ignored";

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Storage {
    #[serde(default)]
    pub disks: Vec<Disk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_update: Option<AbUpdate>,
    #[serde(default)]
    pub filesystems: Vec<Filesystem>,
    #[serde(default, skip_serializing)]
    pub raid: Unsupported,
    #[serde(default, skip_serializing)]
    pub encryption: Unsupported,
    #[serde(default, skip_serializing)]
    pub verity: Unsupported,
    #[serde(default, skip_serializing)]
    pub swap: Unsupported,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Disk {
    pub id: String,
    /// A block device or a disk-image file.
    pub device: String,
    #[serde(default)]
    pub partition_table_type: PartitionTableType,
    #[serde(default)]
    pub partitions: Vec<Partition>,
    #[serde(default, skip_serializing)]
    pub adopted_partitions: Unsupported,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionTableType {
    #[default]
    Gpt,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Partition {
    pub id: String,
    #[serde(rename = "type")]
    pub partition_type: PartitionType,
    pub size: PartitionSize,
}

/// Upstream partition types (discoverable-partitions names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionType {
    Esp,
    Root,
    Swap,
    Home,
    Var,
    Usr,
    Tmp,
    Srv,
    Xbootldr,
    LinuxGeneric,
}

impl PartitionType {
    /// GPT partition type GUID (x86_64 values for root/usr).
    pub fn gpt_type_guid(self) -> &'static str {
        match self {
            Self::Esp => "c12a7328-f81f-11d2-ba4b-00a0c93ec93b",
            Self::Root => "4f68bce3-e8cd-4db1-96e7-fbcaf984b709",
            Self::Swap => "0657fd6d-a4ab-43c4-84e5-0933c84b4f4f",
            Self::Home => "933ac7e1-2eb4-4f13-b844-0e14e2aef915",
            Self::Var => "4d21b016-b534-45c2-a9fb-5c16e091fd2d",
            Self::Usr => "8484680c-9521-48c6-9c11-b0720656f69e",
            Self::Tmp => "7ec6f557-3bc5-4aca-b293-16ef5df639d1",
            Self::Srv => "3b8f8425-20e0-4f3b-907f-1a25a76f98e8",
            Self::Xbootldr => "bc13c2ff-59e6-4262-a352-b275fd6f7172",
            Self::LinuxGeneric => "0fc63daf-8483-4772-8e79-3d69d8477de4",
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbUpdate {
    #[serde(default)]
    pub volume_pairs: Vec<VolumePair>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumePair {
    pub id: String,
    pub volume_a_id: String,
    pub volume_b_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Filesystem {
    /// A partition id or a volume pair id.
    pub device_id: String,
    pub mount_point: MountPoint,
    /// Only `image` (the filesystem comes from the COSI file) is supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<FilesystemSource>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FilesystemSource {
    Image,
    New,
    Adopted,
}

/// `{ path, options }`, or the path alone as a string. Deserialized by
/// hand (not `untagged`) so a bad key inside names itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum MountPoint {
    Path(String),
    Full(MountPointSpec),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MountPointSpec {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
}

impl<'de> Deserialize<'de> for MountPoint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MountPointVisitor;
        impl<'de> serde::de::Visitor<'de> for MountPointVisitor {
            type Value = MountPoint;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a mount path or a map with 'path' and 'options'")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MountPoint, E> {
                Ok(MountPoint::Path(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<MountPoint, A::Error> {
                MountPointSpec::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(MountPoint::Full)
            }
        }
        d.deserialize_any(MountPointVisitor)
    }
}

impl MountPoint {
    pub fn path(&self) -> &str {
        match self {
            Self::Path(p) => p,
            Self::Full(spec) => &spec.path,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scripts {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_servicing: Vec<Script>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_provision: Vec<Script>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post_configure: Vec<Script>,
}

/// When a script or check runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunOn {
    All,
    CleanInstall,
    AbUpdate,
}

fn default_run_on() -> Vec<RunOn> {
    vec![RunOn::All]
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    pub name: String,
    #[serde(default = "default_run_on")]
    pub run_on: Vec<RunOn>,
    /// Interpreter; default `/bin/sh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment_variables: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Health {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<HealthCheck>,
}

/// Default health check timeout.
pub const DEFAULT_HEALTH_CHECK_TIMEOUT_SECONDS: u64 = 60;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HealthCheck {
    pub name: String,
    #[serde(default = "default_run_on")]
    pub run_on: Vec<RunOn>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environment_variables: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    #[serde(default, skip_serializing)]
    pub systemd_services: Unsupported,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TridentSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datastore_path: Option<String>,
    #[serde(default, skip_serializing)]
    pub phonehome: Unsupported,
    #[serde(default, skip_serializing)]
    pub logstream: Unsupported,
    #[serde(default, skip_serializing)]
    pub tracestream: Unsupported,
    #[serde(default, skip_serializing)]
    pub self_upgrade: Unsupported,
}

/// `os`: everything in it is outside the subset.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Os {
    #[serde(default, skip_serializing)]
    pub netplan: Unsupported,
    #[serde(default, skip_serializing)]
    pub network: Unsupported,
    #[serde(default, skip_serializing)]
    pub users: Unsupported,
    #[serde(default, skip_serializing)]
    pub selinux: Unsupported,
    #[serde(default, skip_serializing)]
    pub sysexts: Unsupported,
    #[serde(default, skip_serializing)]
    pub confexts: Unsupported,
    #[serde(default, skip_serializing)]
    pub kernel_command_line: Unsupported,
    #[serde(default, skip_serializing)]
    pub modules: Unsupported,
    #[serde(default, skip_serializing)]
    pub services: Unsupported,
    #[serde(default, skip_serializing)]
    pub additional_files: Unsupported,
    #[serde(default, skip_serializing)]
    pub hostname: Unsupported,
    #[serde(default, skip_serializing)]
    pub uki: Unsupported,
}

impl Scripts {
    pub fn is_empty(&self) -> bool {
        self.pre_servicing.is_empty()
            && self.post_provision.is_empty()
            && self.post_configure.is_empty()
    }
}

impl Health {
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }
}

impl TridentSettings {
    /// Nothing that would be serialized is set.
    pub fn is_empty(&self) -> bool {
        self.datastore_path.is_none()
    }
}

impl HostConfiguration {
    /// The datastore path the configuration asks for, if any.
    pub fn datastore_path(&self) -> Option<&str> {
        self.trident.datastore_path.as_deref()
    }

    /// Partition id → (disk index, partition index).
    pub fn find_partition(&self, id: &str) -> Option<(&Disk, &Partition)> {
        self.storage
            .disks
            .iter()
            .find_map(|d| d.partitions.iter().find(|p| p.id == id).map(|p| (d, p)))
    }

    pub fn volume_pairs(&self) -> &[VolumePair] {
        self.storage
            .ab_update
            .as_ref()
            .map(|ab| ab.volume_pairs.as_slice())
            .unwrap_or_default()
    }

    pub fn find_volume_pair(&self, id: &str) -> Option<&VolumePair> {
        self.volume_pairs().iter().find(|p| p.id == id)
    }
}

#[cfg(test)]
mod tests;
