//! Partitions upstream Trident recorded. Its Host Status names each
//! partition by its GPT partition UUID (`partitionPaths: {root-a:
//! /dev/disk/by-partuuid/<uuid>}`, the node udev makes, which is how
//! upstream reaches it) and has no `layout`, our record of where each
//! partition is (disk, entry number, byte range) that the partition layer
//! resolves from. A host taken over from upstream gets it from the disks
//! themselves: the GPT of each disk of the Host Configuration is read and
//! every partition found by its UUID, its identity for upstream too. So
//! commit, A/B update, rollback and the datastore handoff of a taken-over
//! host find its partitions as they find those of a host tridentd
//! installed, on a block device or a disk-image file alike.
//!
//! Nothing is written here: the engine adds what was found to the Host
//! Status it reads ([`TakeoverLayout::fill`]), and the next Host Status
//! tridentd records keeps it (upstream's `partitionPaths` stay as upstream
//! wrote them, for upstream's agent put back).

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use trident_host::status::{HostStatus, PartitionLayout};
use uuid::Uuid;

use super::disk_guids::read_primary_gpt;

/// Where udev presents a partition by its GPT partition UUID: how
/// upstream's `partitionPaths` name partitions.
pub const BY_PARTUUID: &str = "/dev/disk/by-partuuid/";

/// The partition UUID a `partitionPaths` value names, when it names one
/// upstream's way.
pub fn partuuid_of(path: &str) -> Option<Uuid> {
    path.strip_prefix(BY_PARTUUID)
        .and_then(|uuid| Uuid::parse_str(uuid.trim_end_matches('/')).ok())
}

/// The partitions of `status` named by partition UUID whose place its
/// layout does not hold: id → UUID.
pub fn unlocated(status: &HostStatus) -> BTreeMap<String, Uuid> {
    status
        .partition_paths
        .iter()
        .filter(|(id, _)| !status.layout.contains_key(*id))
        .filter_map(|(id, path)| partuuid_of(path).map(|uuid| (id.clone(), uuid)))
        .collect()
}

/// What looking for partitions on the disks found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Located {
    /// Partition id → where it is.
    pub layout: BTreeMap<String, PartitionLayout>,
    /// Partition id → UUID, on no readable disk of the configuration.
    pub missing: BTreeMap<String, Uuid>,
    /// Disks whose GPT could not be read: `(disk id, device, why)`.
    pub unreadable: Vec<(String, String, String)>,
}

impl Located {
    pub fn is_complete(&self) -> bool {
        self.missing.is_empty()
    }
}

/// Finds each of `wanted` (id → partition UUID) in the primary GPT of the
/// disks of `status`'s Host Configuration (512- or 4096-byte sectors).
/// Blocking: reads each disk's first sectors.
pub fn locate(status: &HostStatus, wanted: &BTreeMap<String, Uuid>) -> Located {
    let mut located = Located::default();
    let mut by_uuid: BTreeMap<Uuid, PartitionLayout> = BTreeMap::new();
    for disk in status.spec.iter().flat_map(|spec| &spec.storage.disks) {
        match read_primary_gpt(&disk.device) {
            Ok(gpt) => {
                for entry in gpt.partitions() {
                    // The first disk holding a UUID wins, as the first
                    // udev link would.
                    by_uuid
                        .entry(entry.unique_guid)
                        .or_insert_with(|| PartitionLayout {
                            disk_id: disk.id.clone(),
                            device: disk.device.clone(),
                            number: entry.number,
                            offset: entry.start_offset(gpt.lba_size),
                            size: entry.size_bytes(gpt.lba_size),
                        });
                }
            }
            Err(why) => located
                .unreadable
                .push((disk.id.clone(), disk.device.clone(), why)),
        }
    }
    for (id, uuid) in wanted {
        match by_uuid.get(uuid) {
            Some(layout) => {
                located.layout.insert(id.clone(), layout.clone());
            }
            None => {
                located.missing.insert(id.clone(), *uuid);
            }
        }
    }
    located
}

/// What a lookup was for: the partitions wanted and the disks searched.
type Key = (BTreeMap<String, Uuid>, Vec<(String, String)>);

/// The layout of a taken-over host's partitions, found once and kept by
/// the engine while the Host Status names the same partitions on the same
/// disks (the next Host Status tridentd records holds it anyway).
#[derive(Debug, Default)]
pub struct TakeoverLayout {
    found: Mutex<Option<(Key, BTreeMap<String, PartitionLayout>)>>,
    /// The last lookup that left partitions unfound (warned once).
    warned: Mutex<Option<Key>>,
}

impl TakeoverLayout {
    /// Adds to `status.layout` the place of every partition it names by
    /// partition UUID and does not locate (a Host Status upstream wrote).
    /// A partition on no readable disk stays unlocated (resolving it fails
    /// naming it) and is looked for again next time. Blocking when it
    /// reads the disks: a few sectors each, once.
    pub fn fill(&self, status: &mut HostStatus) {
        let wanted = unlocated(status);
        if wanted.is_empty() {
            return;
        }
        let disks = status
            .spec
            .iter()
            .flat_map(|spec| &spec.storage.disks)
            .map(|d| (d.id.clone(), d.device.clone()))
            .collect();
        let key: Key = (wanted, disks);
        let mut found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((known, layout)) = found.as_ref()
            && *known == key
        {
            status.layout.extend(layout.clone());
            return;
        }
        let located = locate(status, &key.0);
        status.layout.extend(located.layout.clone());
        if located.is_complete() {
            tracing::info!(
                partitions = %describe(&located.layout),
                "partitions of upstream Trident's Host Status located by partition UUID \
                 in their disks' GPT"
            );
            *found = Some((key, located.layout));
            return;
        }
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        if warned.as_ref() != Some(&key) {
            tracing::warn!(
                missing = %located
                    .missing
                    .iter()
                    .map(|(id, uuid)| format!("{id} ({BY_PARTUUID}{uuid})"))
                    .collect::<Vec<_>>()
                    .join(", "),
                unreadable = %located
                    .unreadable
                    .iter()
                    .map(|(id, device, why)| format!("{id} {device}: {why}"))
                    .collect::<Vec<_>>()
                    .join("; "),
                "partitions of upstream Trident's Host Status are on no readable disk of its \
                 Host Configuration: servicing that needs them fails naming them"
            );
            *warned = Some(key);
        }
    }
}

/// `id=device#number` of each partition, for the log.
fn describe(layout: &BTreeMap<String, PartitionLayout>) -> String {
    layout
        .iter()
        .map(|(id, l)| format!("{id}={}#{}", l.device, l.number))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[path = "partuuid_tests.rs"]
mod tests;
