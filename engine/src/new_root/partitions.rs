//! Partition identities (PARTUUID) of the Host Configuration's partitions,
//! read back from the GPT on disk: what fstab and boot entries name.

use std::collections::BTreeMap;
use std::fs::File;

use trident_cosi::gpt::Gpt;
use trident_host::status::PartitionLayout;
use trident_host::{ResultExt, Subkind, TridentError};

use crate::block_device::partition::LBA_SIZE;

/// One partition of the serviced host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub id: String,
    pub layout: PartitionLayout,
    /// GPT unique partition GUID, lowercase (`root=PARTUUID=...`).
    pub part_uuid: String,
}

/// Reads the GPT of every disk in `layout` (the partition layer's record)
/// and names each partition.
pub fn read_partitions(
    layout: &BTreeMap<String, PartitionLayout>,
) -> Result<BTreeMap<String, PartitionInfo>, TridentError> {
    let mut gpts: BTreeMap<String, Gpt> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (id, place) in layout {
        if !gpts.contains_key(&place.device) {
            gpts.insert(place.device.clone(), read_gpt(&place.device)?);
        }
        let entry = gpts
            .get(&place.device)
            .and_then(|gpt| gpt.partition(place.number))
            .ok_or_else(|| {
                TridentError::new(
                    Subkind::ConfigureNewRoot,
                    format!(
                        "Partition '{id}' (entry {} of {}) is not in the disk's GPT",
                        place.number, place.device
                    ),
                )
            })?;
        out.insert(
            id.clone(),
            PartitionInfo {
                id: id.clone(),
                layout: place.clone(),
                part_uuid: entry.unique_guid.to_string(),
            },
        );
    }
    Ok(out)
}

fn read_gpt(device: &str) -> Result<Gpt, TridentError> {
    let file = File::open(device)
        .structured_msg(Subkind::ConfigureNewRoot, format!("Cannot open {device}"))?;
    let size = trident_cosi::stream::target_size(std::path::Path::new(device))
        .structured_msg(Subkind::ConfigureNewRoot, format!("Cannot size {device}"))?;
    Gpt::read_and_verify(&file, LBA_SIZE, size - size % LBA_SIZE).structured_msg(
        Subkind::ConfigureNewRoot,
        format!("Cannot read the GPT of {device}"),
    )
}
