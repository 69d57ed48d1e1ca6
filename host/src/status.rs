//! The Host Status: what the daemon knows about the host it services
//! (camelCase YAML, upstream shape), and the servicing state machine values.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use trident_proto::v1preview::{AbVolumeState, ServicingState as ProtoState};

use crate::config::{HostConfiguration, RaidLevel};
use crate::error::{ErrorRecord, ResultExt, Subkind, TridentError};
use crate::kebab_name::KebabName;

/// Upstream servicing states (kebab-case in YAML), all of upstream's
/// (v0.27.0 `trident_api::status::ServicingState`): tridentd enters the
/// runtime-update ones never (its runtime update and rollback go straight
/// from `provisioned` to `provisioned`), but reads them in a history
/// upstream wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServicingState {
    #[default]
    NotProvisioned,
    CleanInstallStaged,
    CleanInstallFinalized,
    AbUpdateStaged,
    AbUpdateFinalized,
    AbUpdateHealthCheckFailed,
    ManualRollbackAbStaged,
    ManualRollbackAbFinalized,
    RuntimeUpdateStaged,
    ManualRollbackRuntimeStaged,
    Provisioned,
}

impl ServicingState {
    /// The daemon's handlers' spelling of `ProtoState::from`.
    pub fn to_proto(self) -> ProtoState {
        self.into()
    }
}

impl std::fmt::Display for ServicingState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kebab_name())
    }
}

/// Volume of an A/B pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AbVolume {
    VolumeA,
    VolumeB,
}

impl AbVolume {
    pub fn other(self) -> Self {
        match self {
            Self::VolumeA => Self::VolumeB,
            Self::VolumeB => Self::VolumeA,
        }
    }

    /// `None` maps to NO_VOLUME.
    pub fn option_to_proto(v: Option<Self>) -> AbVolumeState {
        v.map_or(AbVolumeState::NoVolume, AbVolumeState::from)
    }
}

impl std::fmt::Display for AbVolume {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kebab_name())
    }
}

/// The Host Status (upstream shape).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostStatus {
    /// The configuration being serviced or last provisioned.
    #[serde(default)]
    pub spec: Option<HostConfiguration>,
    /// The configuration before the current servicing (rollback target).
    #[serde(default)]
    pub spec_old: Option<HostConfiguration>,
    #[serde(default)]
    pub servicing_state: ServicingState,
    #[serde(default)]
    pub last_error: Option<ErrorRecord>,
    /// Partition id → path of the partition (for disk-image targets:
    /// `<image file>@<byte offset>+<length>`).
    #[serde(default)]
    pub partition_paths: BTreeMap<String, String>,
    #[serde(default)]
    pub ab_active_volume: Option<AbVolume>,
    /// Disk id → GPT disk GUID of the disks Trident partitioned: recorded
    /// when it wrote their GPT (what `rebuild-raid` tells a replaced disk
    /// by), shown as read from the disks when the Host Status is read.
    #[serde(default)]
    pub disk_uuids: BTreeMap<String, String>,
    /// Increases with every clean install.
    #[serde(default)]
    pub install_index: u32,
    /// Whether Trident runs in a management OS (an installer environment)
    /// rather than on the host it services; tridentd runs on the host.
    #[serde(default)]
    pub is_management_os: bool,
    #[serde(default)]
    pub trident_version: String,
    /// Hash (`sha384:<hex>`) of the COSI metadata of the image on the
    /// active volume; addition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_hash: Option<String>,
    /// Hash of the image staged on the inactive volume (A/B update) or on
    /// volume A (install), until commit makes it `imageHash`; addition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_image_hash: Option<String>,
    /// Where each partition lives (device, GPT entry number, byte range);
    /// addition, the machine-readable form of `partitionPaths`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub layout: BTreeMap<String, PartitionLayout>,
    /// Software RAID array id → what install created (name, level,
    /// members, UUID) and its state when last looked at; addition.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub raid_arrays: BTreeMap<String, RaidArrayStatus>,
    /// Encrypted volume id → the LUKS2 volume install created on its
    /// device (never a key); addition.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub encrypted_volumes: BTreeMap<String, EncryptedVolumeStatus>,
    /// Volume → mount point (`/`, `/usr`) → the dm-verity root hash of the
    /// image written there (the COSI's `images[].verity.roothash`, which
    /// the volume's kernel command line carries): what a verity device of
    /// that volume must verify to; addition. A clean install starts it
    /// over; an A/B update replaces the inactive volume's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verity_root_hashes: BTreeMap<AbVolume, BTreeMap<String, String>>,
}

/// One software RAID array created by install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RaidArrayStatus {
    /// `storage.raid.software[].name`: the array is `/dev/md/<name>`.
    pub name: String,
    pub level: RaidLevel,
    /// Member partition ids, in the configuration's order.
    pub members: Vec<String>,
    /// The md array UUID (`mdadm --detail`: `xxxxxxxx:xxxxxxxx:...`).
    pub uuid: String,
    /// Usable size of the array in bytes.
    pub size: u64,
    /// `clean`, `degraded (n missing)`, `resync 42%`, `recovery 42%`, ...
    /// when last looked at (the Host Status service reads it live).
    pub state: String,
}

impl RaidArrayStatus {
    /// `/dev/md/<name>`.
    pub fn path(&self) -> String {
        format!("/dev/md/{}", self.name)
    }
}

/// One LUKS2 volume created by install, its key sealed to the TPM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptedVolumeStatus {
    /// `storage.encryption.volumes[].deviceName`: opened as
    /// `/dev/mapper/<deviceName>`.
    pub device_name: String,
    /// The partition (or array) it is on.
    pub device_id: String,
    /// The LUKS2 header's UUID (`/etc/crypttab` names the volume by it).
    pub luks_uuid: String,
    /// Bytes of the opened volume (the device less the LUKS2 header).
    pub size: u64,
    /// The PCRs its TPM 2.0 key is sealed to.
    pub pcrs: Vec<u8>,
    /// Whether the recovery key (`recoveryKeyUrl`) opens it too.
    pub recovery_key: bool,
}

impl EncryptedVolumeStatus {
    /// `/dev/mapper/<deviceName>`.
    pub fn path(&self) -> String {
        format!("/dev/mapper/{}", self.device_name)
    }
}

/// One partition created by install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionLayout {
    /// Id of the disk in the Host Configuration.
    pub disk_id: String,
    /// Block device or disk-image file.
    pub device: String,
    /// 1-based GPT entry number.
    pub number: u32,
    /// Byte offset of the partition on the device.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

impl PartitionLayout {
    /// The `partitionPaths` form: `<device>@<offset>+<size>` (a byte range
    /// of the device; disk-image files have no per-partition nodes).
    pub fn path(&self) -> String {
        format!("{}@{}+{}", self.device, self.offset, self.size)
    }
}

impl HostStatus {
    pub fn to_yaml(&self) -> Result<String, TridentError> {
        serde_saphyr::to_string(self).structured(Subkind::SerializeHostStatus)
    }

    pub(crate) fn to_json(&self) -> Result<String, TridentError> {
        serde_json::to_string(self).structured(Subkind::SerializeHostStatus)
    }

    pub(crate) fn from_json(text: &str) -> Result<Self, TridentError> {
        serde_json::from_str(text).structured(Subkind::LoadHostStatus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_status_yaml_is_camel_case_with_kebab_values() {
        let hs = HostStatus {
            servicing_state: ServicingState::AbUpdateStaged,
            ab_active_volume: Some(AbVolume::VolumeA),
            ..HostStatus::default()
        };
        let yaml = hs.to_yaml().unwrap();
        assert!(yaml.contains("servicingState: ab-update-staged"), "{yaml}");
        assert!(yaml.contains("abActiveVolume: volume-a"), "{yaml}");
        assert!(yaml.contains("specOld:"), "{yaml}");
        let back = HostStatus::from_json(&hs.to_json().unwrap()).unwrap();
        assert_eq!(back.servicing_state, ServicingState::AbUpdateStaged);
    }
}
