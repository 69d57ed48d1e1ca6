//! "The device of id X on this host": the block-device graph of the Host
//! Configuration being applied, with what the layers recorded in the Host
//! Status, resolves any device id (an A/B volume pair to its member of the
//! serviced volume) through the layer of its kind.

use std::collections::BTreeMap;

use trident_host::config::storage_graph::{DeviceKind, NodeData, StorageGraph};
use trident_host::config::{FilesystemSource, HostConfiguration, ValidatedConfig};
use trident_host::status::{
    AbVolume, EncryptedVolumeStatus, HostStatus, PartitionLayout, RaidArrayStatus,
};
use trident_host::{Subkind, TridentError};

use super::layer::{BlockDeviceError, ResolvedDevice};
use super::stack::layer_of;

/// Which filesystems a servicing writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targets {
    /// Install: every filesystem; A/B pairs get their A volume.
    Install,
    /// A/B update: only filesystems on volume pairs, into `volume`.
    AbUpdate { volume: AbVolume },
}

/// The block devices of one host: its storage graph and the layers'
/// records. Owned (cloned from the Host Status), so blocking work can
/// take it along.
#[derive(Debug, Clone)]
pub struct BlockDevices {
    graph: StorageGraph,
    status: HostStatus,
}

impl BlockDevices {
    /// The devices of the configuration being applied as recorded in
    /// `status` (at install, the status the layers just created them
    /// into), through the graph its validation built.
    pub fn of_validated(config: &ValidatedConfig, status: &HostStatus) -> Self {
        Self {
            graph: config.graph().clone(),
            status: status.clone(),
        }
    }

    /// The devices of `hc` as recorded in `status`, its graph built anew:
    /// for a configuration read back from the Host Status.
    pub fn new(hc: &HostConfiguration, status: &HostStatus) -> Result<Self, TridentError> {
        Ok(Self {
            graph: StorageGraph::build(hc)?,
            status: status.clone(),
        })
    }

    /// The devices of the Host Configuration recorded in `status`.
    pub fn of_status(status: &HostStatus) -> Result<Self, TridentError> {
        let hc = status.spec.as_ref().ok_or_else(|| {
            TridentError::new(
                Subkind::InvalidServicingState,
                "No Host Configuration is recorded: nothing was installed",
            )
        })?;
        Self::new(hc, status)
    }

    /// The device of id `id` on this host; for an A/B volume pair, its
    /// member of `volume` (which other devices ignore).
    pub fn device_of(
        &self,
        id: &str,
        volume: AbVolume,
    ) -> Result<ResolvedDevice, BlockDeviceError> {
        let unknown = || BlockDeviceError::UnknownDevice { id: id.to_owned() };
        let kind = self
            .graph
            .device(id)
            .and_then(|node| node.device_kind())
            .ok_or_else(unknown)?;
        if kind == DeviceKind::AbVolume {
            // The graph checked that both members exist.
            let (a, b) = self.graph.ab_pair(id).ok_or_else(unknown)?;
            let member = match volume {
                AbVolume::VolumeA => a,
                AbVolume::VolumeB => b,
            };
            return self.device_of(member.label(), volume);
        }
        if kind == DeviceKind::VerityDevice {
            // Its filesystem is written to (and mounted from) its data
            // device; the hash device gets the tree (`verity.rs`).
            return self.verity_data_of(id, volume);
        }
        match layer_of(kind) {
            Some(layer) => layer.resolve(id, &self.status),
            None => Err(BlockDeviceError::NoLayer {
                id: id.to_owned(),
                kind,
            }),
        }
    }

    /// Whether `id` is an A/B volume pair.
    fn is_ab_pair(&self, id: &str) -> bool {
        self.graph
            .device(id)
            .is_some_and(|n| n.device_kind() == Some(DeviceKind::AbVolume))
    }

    /// Whether an A/B update writes a filesystem on `id`: a volume pair,
    /// or a verity device whose data device is one.
    pub(super) fn serviced_by_ab_update(&self, id: &str) -> bool {
        self.is_ab_pair(id)
            || self
                .verity_member(id, trident_host::config::storage_graph::Role::VerityData)
                .is_some_and(|data| self.is_ab_pair(data))
    }

    /// The storage graph of the Host Configuration.
    pub(super) fn graph(&self) -> &StorageGraph {
        &self.graph
    }

    /// Mount point → the device its image goes into (or its new
    /// filesystem is created on), for `which`. Adopted filesystems are
    /// none of these.
    pub fn write_targets(
        &self,
        which: Targets,
    ) -> Result<BTreeMap<String, ResolvedDevice>, TridentError> {
        let mut targets = BTreeMap::new();
        for fs in self.graph.filesystems() {
            let NodeData::Filesystem {
                mount_point,
                source,
                ..
            } = &fs.data
            else {
                continue;
            };
            if *source == FilesystemSource::Adopted {
                // Kept as it is: never written, formatted or mounted while
                // servicing; the new root's fstab mounts it.
                continue;
            }
            let device_id = fs.references.first().map_or("", |r| r.target.as_str());
            if mount_point.is_empty() {
                // An image's filesystem with no mount point (upstream's
                // `advanced` sample's second ESP): the image's filesystems
                // go where they are mounted, so nothing is written to its
                // device, which keeps what partitioning left there.
                tracing::info!(device = %device_id, "no mount point: nothing written to it");
                continue;
            }
            let volume = match which {
                Targets::Install => AbVolume::VolumeA,
                Targets::AbUpdate { volume } if self.serviced_by_ab_update(device_id) => volume,
                Targets::AbUpdate { .. } => {
                    tracing::info!(
                        mount_point = %mount_point,
                        device = %device_id,
                        "not on an A/B volume pair: left untouched by the A/B update"
                    );
                    continue;
                }
            };
            let device = self
                .device_of(device_id, volume)
                .map_err(|e| e.at(&fs.key))?;
            targets.insert(mount_point.clone(), device);
        }
        Ok(targets)
    }

    /// The mount points of the filesystems an A/B update leaves alone (on
    /// no volume pair; adopted ones and those without a mount point
    /// aside), each with its device id, parents first: what the new root
    /// binds from the running system (`NewRoot::bind_shared`).
    pub fn shared_mount_points(&self) -> Vec<(String, String)> {
        let mut shared: Vec<(String, String)> = self
            .graph
            .filesystems()
            .filter_map(|fs| {
                let NodeData::Filesystem {
                    mount_point,
                    source,
                    ..
                } = &fs.data
                else {
                    return None;
                };
                let device_id = fs.references.first().map_or("", |r| r.target.as_str());
                (*source != FilesystemSource::Adopted
                    && !mount_point.is_empty()
                    && !self.serviced_by_ab_update(device_id))
                .then(|| (mount_point.clone(), device_id.to_owned()))
            })
            .collect();
        shared.sort_by_key(|(mp, _)| mp.trim_end_matches('/').matches('/').count());
        shared
    }

    /// Every encrypted volume the encryption layer recorded.
    pub fn encrypted_volumes(&self) -> &BTreeMap<String, EncryptedVolumeStatus> {
        &self.status.encrypted_volumes
    }

    /// Every software RAID array the RAID layer recorded.
    pub fn raid_arrays(&self) -> &BTreeMap<String, RaidArrayStatus> {
        &self.status.raid_arrays
    }

    /// Every partition the partition layer recorded (their identities are
    /// read from the GPT for fstab and boot entries).
    pub fn partitions(&self) -> &BTreeMap<String, PartitionLayout> {
        &self.status.layout
    }
}
