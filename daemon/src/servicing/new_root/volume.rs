//! What configure steps and boot control see of a mounted new root: its
//! directory, the Host Configuration being applied, the serviced volume and
//! the host's partitions. A borrowed view, so they need neither the mounts
//! nor `NewRoot` itself.

use std::collections::BTreeMap;
use std::path::Path;

use trident_host::config::HostConfiguration;
use trident_host::status::AbVolume;

use super::partitions::{self, PartitionInfo};

/// The serviced volume's root, mounted at `path`.
#[derive(Debug, Clone, Copy)]
pub struct VolumeRoot<'a> {
    /// Directory the new root is mounted at (`TARGET_ROOT`).
    pub path: &'a Path,
    /// The Host Configuration being applied.
    pub hc: &'a HostConfiguration,
    /// The volume being serviced (A on install).
    pub volume: AbVolume,
    /// Every partition of the host, with its PARTUUID.
    pub partitions: &'a BTreeMap<String, PartitionInfo>,
}

impl VolumeRoot<'_> {
    /// The partition a mount point of the Host Configuration lands on.
    pub fn partition_of(&self, mount_point: &str) -> Option<&PartitionInfo> {
        let fs = self
            .hc
            .storage
            .filesystems
            .iter()
            .find(|f| f.mount_point.path() == mount_point)?;
        self.partitions.get(&partitions::partition_for(
            self.hc,
            &fs.device_id,
            self.volume,
        ))
    }
}
