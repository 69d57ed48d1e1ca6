//! `storage`: disks and partitions, A/B volume pairs and filesystems (what
//! the engine applies), plus the advanced sections in [`super::storage_advanced`].

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use super::PartitionSize;
use super::storage_advanced::{Encryption, Raid, Swap, VerityDevice};

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Storage {
    #[serde(default)]
    pub disks: Vec<Disk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_update: Option<AbUpdate>,
    #[serde(default)]
    pub filesystems: Vec<Filesystem>,
    // Serialized: the Host Status's `spec` keeps it for the RAID layer and
    // rebuild-raid.
    #[serde(default, skip_serializing_if = "Raid::is_empty")]
    pub raid: Raid,
    // Serialized: the Host Status's spec keeps it, which the commit and
    // an A/B update build the installed storage graph from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Encryption>,
    // Serialized: the commit and an A/B update build the installed
    // storage graph from the Host Status's spec, where the verity root's
    // filesystem names the verity device.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verity: Vec<VerityDevice>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub swap: Vec<Swap>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Disk {
    pub id: String,
    /// A block device or a disk-image file.
    pub device: String,
    /// Upstream requires it; only `gpt` exists, so we default to it.
    #[serde(default)]
    pub partition_table_type: PartitionTableType,
    #[serde(default)]
    pub partitions: Vec<Partition>,
    /// Existing partitions an install keeps (matched by GPT name or GUID).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adopted_partitions: Vec<super::AdoptedPartition>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionTableType {
    #[default]
    Gpt,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Partition {
    pub id: String,
    #[serde(rename = "type", default)]
    pub partition_type: PartitionType,
    pub size: PartitionSize,
    /// GPT unique partition GUID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::optional_uuid")]
    pub uuid: Option<String>,
    /// GPT partition name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Upstream partition types (discoverable-partitions names), or any GPT
/// type GUID.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PartitionType {
    Esp,
    Root,
    Swap,
    RootVerity,
    Home,
    Var,
    Usr,
    UsrVerity,
    Tmp,
    #[default]
    LinuxGeneric,
    Srv,
    Xbootldr,
    /// A GPT partition type GUID (lowercase).
    Other(String),
}

/// Names and GPT type GUIDs (x86_64 values for root/usr and their verity).
const PARTITION_TYPES: [(PartitionType, &str, &str); 12] = [
    (
        PartitionType::Esp,
        "esp",
        "c12a7328-f81f-11d2-ba4b-00a0c93ec93b",
    ),
    (
        PartitionType::Root,
        "root",
        "4f68bce3-e8cd-4db1-96e7-fbcaf984b709",
    ),
    (
        PartitionType::Swap,
        "swap",
        "0657fd6d-a4ab-43c4-84e5-0933c84b4f4f",
    ),
    (
        PartitionType::RootVerity,
        "root-verity",
        "2c7357ed-ebd2-46d9-aec1-23d437ec2bf5",
    ),
    (
        PartitionType::Home,
        "home",
        "933ac7e1-2eb4-4f13-b844-0e14e2aef915",
    ),
    (
        PartitionType::Var,
        "var",
        "4d21b016-b534-45c2-a9fb-5c16e091fd2d",
    ),
    (
        PartitionType::Usr,
        "usr",
        "8484680c-9521-48c6-9c11-b0720656f69e",
    ),
    (
        PartitionType::UsrVerity,
        "usr-verity",
        "77ff5f63-e7b6-4633-acf4-1565b864c0e6",
    ),
    (
        PartitionType::Tmp,
        "tmp",
        "7ec6f557-3bc5-4aca-b293-16ef5df639d1",
    ),
    (
        PartitionType::LinuxGeneric,
        "linux-generic",
        "0fc63daf-8483-4772-8e79-3d69d8477de4",
    ),
    (
        PartitionType::Srv,
        "srv",
        "3b8f8425-20e0-4f3b-907f-1a25a76f98e8",
    ),
    (
        PartitionType::Xbootldr,
        "xbootldr",
        "bc13c2ff-59e6-4262-a352-b275fd6f7172",
    ),
];

impl PartitionType {
    /// GPT partition type GUID.
    pub fn gpt_type_guid(&self) -> &str {
        match self {
            Self::Other(guid) => guid,
            known => PARTITION_TYPES
                .iter()
                .find(|(t, _, _)| t == known)
                .map_or("0fc63daf-8483-4772-8e79-3d69d8477de4", |(_, _, g)| g),
        }
    }

    /// The kebab-case name, or the GUID for [`PartitionType::Other`].
    pub fn name(&self) -> &str {
        match self {
            Self::Other(guid) => guid,
            known => PARTITION_TYPES
                .iter()
                .find(|(t, _, _)| t == known)
                .map_or("linux-generic", |(_, n, _)| n),
        }
    }

    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some((t, _, _)) = PARTITION_TYPES.iter().find(|(_, n, _)| *n == text) {
            return Ok(t.clone());
        }
        match uuid::Uuid::parse_str(text) {
            Ok(guid) if text.len() == 36 => Ok(Self::Other(guid.to_string())),
            _ => Err(format!(
                "unknown partition type '{text}': expected one of {} or a GPT type GUID",
                PARTITION_TYPES.map(|(_, n, _)| n).join(", ")
            )),
        }
    }
}

impl Serialize for PartitionType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for PartitionType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for PartitionType {
    fn schema_name() -> Cow<'static, str> {
        "PartitionType".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = PARTITION_TYPES.iter().map(|(_, n, _)| *n).collect();
        json_schema!({
            "description": "A discoverable-partitions name or a GPT partition type GUID.",
            "oneOf": [
                { "type": "string", "enum": names },
                { "type": "string", "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$" }
            ]
        })
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbUpdate {
    pub volume_pairs: Vec<VolumePair>,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumePair {
    pub id: String,
    pub volume_a_id: String,
    pub volume_b_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Filesystem {
    /// A partition id or a volume pair id (empty: none given).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device_id: String,
    /// Where it is mounted; [`MountPoint::is_none`] when not given.
    #[serde(default, skip_serializing_if = "MountPoint::is_none")]
    pub mount_point: MountPoint,
    /// Where the filesystem comes from; upstream's default is `image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<FilesystemSource>,
    /// Filesystem type to create (`source: new`) or adopt.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<FileSystemType>,
    #[serde(default, skip_serializing)]
    pub override_esp_mount: OverrideEspMount,
}

impl Filesystem {
    /// The effective source (upstream defaults to the image).
    pub fn effective_source(&self) -> FilesystemSource {
        self.source.unwrap_or(FilesystemSource::Image)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FilesystemSource {
    Image,
    New,
    Adopted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FileSystemType {
    Ext4,
    Xfs,
    Vfat,
    Ntfs,
    Tmpfs,
    Auto,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum OverrideEspMount {
    #[default]
    UseDefault,
    Override,
    Block,
}

/// `{ path, options }`, or the path alone as a string, or null/absent
/// (then `Path("")`: [`MountPoint::is_none`]). Deserialized by hand (not
/// `untagged`) so a bad key inside names itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum MountPoint {
    Path(String),
    Full(MountPointSpec),
}

impl Default for MountPoint {
    fn default() -> Self {
        Self::Path(String::new())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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
                f.write_str("a mount path, a map with 'path' and 'options', or null")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MountPoint, E> {
                Ok(MountPoint::Path(v.to_owned()))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<MountPoint, E> {
                Ok(MountPoint::default())
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<MountPoint, E> {
                Ok(MountPoint::default())
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

impl JsonSchema for MountPoint {
    fn schema_name() -> Cow<'static, str> {
        "MountPoint".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let spec = generator.subschema_for::<MountPointSpec>();
        json_schema!({
            "description": "A mount path, or { path, options }.",
            "oneOf": [spec, { "type": "string" }, { "type": "null" }]
        })
    }
}

impl MountPoint {
    pub fn path(&self) -> &str {
        match self {
            Self::Path(p) => p,
            Self::Full(spec) => &spec.path,
        }
    }

    /// No mount point was given.
    pub fn is_none(&self) -> bool {
        matches!(self, Self::Path(p) if p.is_empty())
    }

    pub fn options(&self) -> Option<&str> {
        match self {
            Self::Path(_) => None,
            Self::Full(spec) => spec.options.as_deref(),
        }
    }
}
