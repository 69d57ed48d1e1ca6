//! The Host Configuration (camelCase YAML), modelled on upstream Trident's
//! whole schema: every key upstream's schema knows deserializes here, so a
//! document written for upstream never fails as `unknown-key`. Every struct
//! denies unknown keys, so a key upstream does not know still does.
//!
//! Parsing ([`parse`]) is three steps: syntax (serde, key path + line in
//! errors), then [`unsupported`] (features the engine does not apply yet, in
//! ONE list, refused as unsupported-configuration naming key and line), then
//! [`validate`] (what upstream checks beyond the schema).
//! [`parse_validated`] and [`validated`] hand back a [`ValidatedConfig`]:
//! the configuration with the storage graph its validation built.
//!
//! Our JSON schema (`host/schema/host-config-schema.json`) is generated from
//! these types ([`schema::generate`]); a test keeps the committed file current.

pub mod document_rules;
mod encryption;
#[cfg(test)]
mod encryption_tests;
mod os;
mod parse;
pub mod raid;
pub mod schema;
mod scripts;
#[cfg(test)]
mod secret_errors_tests;
mod size;
mod spans;
mod storage;
mod storage_advanced;
pub mod storage_graph;
pub mod unsupported;
mod validate;
mod validated;
pub mod verity_rules;
#[cfg(test)]
mod verity_rules_tests;
mod warnings;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use encryption::{PCR_NAMES, SEALABLE_PCRS};
pub use os::{
    AdditionalFile, CONFEXT_DIRECTORIES, DEFAULT_CONFEXT_DIRECTORY, DEFAULT_SYSEXT_DIRECTORY,
    Extension, KernelCommandLine, LoadMode, ManagementOs, Module, NETPLAN_FILE, Os, Password,
    SYSEXT_DIRECTORIES, Selinux, SelinuxMode, Services, SshMode, UefiFallbackMode, User,
    netplan_file_text,
};
pub use parse::{parse, parse_validated, to_yaml};
pub use scripts::{
    DEFAULT_HEALTH_CHECK_TIMEOUT_SECONDS, Health, HealthCheck, RunOn, Script, Scripts,
};
pub use size::PartitionSize;
pub use storage::{
    AbUpdate, Disk, FileSystemType, Filesystem, FilesystemSource, MountPoint, MountPointSpec,
    OverrideEspMount, Partition, PartitionTableType, PartitionType, Storage, VolumePair,
};
pub use storage_advanced::{
    AdoptedPartition, EncryptedVolume, Encryption, Pcr, Raid, RaidLevel, SoftwareRaidArray, Swap,
    VerityCorruptionOption, VerityDevice,
};
pub use validate::{check_sha384, validate, validated};
pub use validated::ValidatedConfig;
pub use warnings::warnings;

/// Default datastore location (upstream).
pub const DEFAULT_DATASTORE_PATH: &str = "/var/lib/trident/datastore.sqlite";

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "HostConfiguration")]
pub struct HostConfiguration {
    /// The COSI image to install (required by this daemon to service).
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
    #[serde(default, skip_serializing_if = "Os::is_default")]
    pub os: Os,
    #[serde(default, skip_serializing_if = "ManagementOs::is_default")]
    pub management_os: ManagementOs,
    /// Upstream's undocumented tuning knobs: parsed (so a document using
    /// them is not an unknown key) and refused as unsupported. Left out of
    /// the schema, as upstream does.
    #[serde(default, skip_serializing)]
    #[schemars(skip)]
    pub internal_params: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Image {
    /// file://, http://, https:// or oci:// (registry/repository:tag or
    /// @sha256:digest) URL of a COSI file.
    pub url: String,
    /// SHA-384 of the COSI metadata.json (96 hex digits) or `ignored`.
    #[schemars(pattern(r"^(ignored|[0-9a-fA-F]{96})$"))]
    pub sha384: String,
}

/// The word that disables the image hash check.
pub const HASH_IGNORED: &str = "ignored";

/// `trident`: the agent's own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TridentSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datastore_path: Option<String>,
    /// Upstream: the target OS does not run the agent (its units masked,
    /// no datastore handed to it; the other settings are ignored).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable: bool,
    /// Upstream's HTTP phone-home URL. Deprecated: served by tridentd's
    /// legacy bridge during migration (use the servicing stream and the RCP).
    #[serde(default, skip_serializing)]
    pub phonehome: Option<String>,
    /// Upstream's HTTP log-stream URL. Deprecated: served by tridentd's
    /// legacy bridge during migration (use TelemetryService.Watch or OTLP).
    #[serde(default, skip_serializing)]
    pub logstream: Option<String>,
}

impl TridentSettings {
    /// Nothing that would be serialized is set.
    pub fn is_empty(&self) -> bool {
        self.datastore_path.is_none() && !self.disable
    }
}

impl HostConfiguration {
    /// The datastore path the configuration asks for, if any (none when
    /// the agent is disabled on the target OS: upstream ignores the rest
    /// of `trident` then).
    pub fn datastore_path(&self) -> Option<&str> {
        if self.trident.disable {
            return None;
        }
        self.trident.datastore_path.as_deref()
    }

    /// Partition id → its disk and partition.
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
