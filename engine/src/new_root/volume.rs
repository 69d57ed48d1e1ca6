//! What configure steps and boot control see of a mounted new root: its
//! directory, the Host Configuration being applied, the serviced volume,
//! the host's block devices and its partitions' identities. A borrowed
//! view, so they need neither the mounts nor `NewRoot` itself.

use std::collections::BTreeMap;
use std::path::Path;

use trident_host::config::HostConfiguration;
use trident_host::status::AbVolume;

use super::partitions::PartitionInfo;
use super::root_dir::RootDir;
use crate::block_device::{BlockDevices, ResolvedDevice};

/// The serviced volume's root, mounted at `path`.
#[derive(Debug, Clone, Copy)]
pub struct VolumeRoot<'a> {
    /// Directory the new root is mounted at (`TARGET_ROOT`).
    pub path: &'a Path,
    /// The same, as a directory handle: every write into the new root
    /// goes through it.
    pub dir: &'a RootDir,
    /// The Host Configuration being applied.
    pub hc: &'a HostConfiguration,
    /// The volume being serviced (A on install).
    pub volume: AbVolume,
    /// The host's block devices (graph and records).
    pub devices: &'a BlockDevices,
    /// Every partition of the host, with its PARTUUID.
    pub partitions: &'a BTreeMap<String, PartitionInfo>,
}

impl VolumeRoot<'_> {
    /// The device `id` lands on for the serviced volume.
    pub fn device_of(&self, id: &str) -> Option<ResolvedDevice> {
        self.devices.device_of(id, self.volume).ok()
    }

    /// How the booted OS names `device` (fstab's first column, the
    /// kernel's `root=`): a partition by its PARTUUID, a RAID array by
    /// `/dev/md/<name>` (the same on every host: arrays are created for
    /// any homehost), an encrypted volume by its mapping
    /// (`/dev/mapper/<deviceName>`, which crypttab opens). `None`: a
    /// partition not on disk.
    pub fn source_of(&self, device: &ResolvedDevice) -> Option<String> {
        match device {
            ResolvedDevice::Partition { id, .. } => self
                .partitions
                .get(id)
                .map(|p| format!("PARTUUID={}", p.part_uuid)),
            ResolvedDevice::RaidArray { path, .. }
            | ResolvedDevice::EncryptedVolume { path, .. } => Some(path.clone()),
        }
    }

    /// The device a mount point of the Host Configuration lands on, and
    /// its [`source_of`](Self::source_of).
    pub fn mount_source(&self, mount_point: &str) -> Option<(ResolvedDevice, String)> {
        let fs = self
            .hc
            .storage
            .filesystems
            .iter()
            .find(|f| f.mount_point.path() == mount_point)?;
        let device = self.device_of(&fs.device_id)?;
        let source = self.source_of(&device)?;
        Some((device, source))
    }
}
