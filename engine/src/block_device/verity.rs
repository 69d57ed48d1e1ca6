//! dm-verity devices in the stack: a verity device is no device of its own
//! on disk. Its filesystem's bytes are its data device's (the image's
//! filesystem is written there, and dm-verity maps them read-only); its
//! hash tree, the image's `images[].verity.image`, goes to its hash device.
//! Either may be a partition or an A/B volume pair (arrays when the RAID
//! layer lands): both resolve through the stack for the serviced volume.
//! The kernel opens it at boot (the initrd's `systemd-veritysetup`, from
//! the root hash and the two devices on the command line), so the engine
//! never needs it opened to write it.

use std::collections::BTreeMap;

use trident_host::TridentError;
use trident_host::config::storage_graph::{DeviceKind, NodeData, Role};
use trident_host::status::AbVolume;

use super::layer::{BlockDeviceError, ResolvedDevice};
use super::resolver::{BlockDevices, Targets};

impl BlockDevices {
    /// The device verity device `id` refers to in `role` (data or hash).
    pub(super) fn verity_member(&self, id: &str, role: Role) -> Option<&str> {
        let node = self.graph().device(id)?;
        (node.device_kind() == Some(DeviceKind::VerityDevice))
            .then(|| node.references.iter().find(|r| r.role == role))
            .flatten()
            .map(|r| r.target.as_str())
    }

    /// The data device of verity device `id` for `volume` (where its
    /// filesystem's bytes are).
    pub(super) fn verity_data_of(
        &self,
        id: &str,
        volume: AbVolume,
    ) -> Result<ResolvedDevice, BlockDeviceError> {
        let data = self
            .verity_member(id, Role::VerityData)
            .ok_or_else(|| BlockDeviceError::UnknownDevice { id: id.to_owned() })?;
        self.device_of(data, volume)
    }

    /// Mount point of each filesystem on a verity device → the device its
    /// hash tree goes into, for `which` (an A/B update: only those whose
    /// data device is a volume pair, into the serviced volume).
    pub fn verity_hash_targets(
        &self,
        which: Targets,
    ) -> Result<BTreeMap<String, ResolvedDevice>, TridentError> {
        let mut targets = BTreeMap::new();
        for fs in self.graph().filesystems() {
            let NodeData::Filesystem { mount_point, .. } = &fs.data else {
                continue;
            };
            if mount_point.is_empty() {
                continue; // not mounted: nothing written (see write_targets)
            }
            let Some(device_id) = fs.references.first().map(|r| r.target.as_str()) else {
                continue;
            };
            let Some(hash) = self.verity_member(device_id, Role::VerityHash) else {
                continue;
            };
            let volume = match which {
                Targets::Install => AbVolume::VolumeA,
                Targets::AbUpdate { volume } if self.serviced_by_ab_update(device_id) => volume,
                Targets::AbUpdate { .. } => continue,
            };
            let device = self
                .device_of(hash, volume)
                .map_err(|e| e.at(&format!("{}.hashDeviceId", self.key_of(device_id))))?;
            targets.insert(mount_point.clone(), device);
        }
        Ok(targets)
    }

    /// Where device `id` is written in the document (`storage.verity[0]`).
    fn key_of(&self, id: &str) -> String {
        self.graph()
            .device(id)
            .map_or_else(|| id.to_owned(), |n| n.key.clone())
    }
}
