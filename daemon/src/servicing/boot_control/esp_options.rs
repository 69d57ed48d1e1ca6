//! Where a GRUB volume's `Boot####` options point: the ESP's partition,
//! or, for an ESP on a RAID1 mirror, each member partition. A mirror is
//! created with metadata 1.0 (superblock at the end), so the firmware reads
//! every member as a plain FAT; one option per member, all with the
//! volume's label, lets it boot from whichever disk is left, as upstream
//! (`engine/bootentries.rs`: `EspDevice::Raid`, one entry per member with
//! the same label).

use trident_host::config::HostConfiguration;
use trident_host::status::HostStatus;
use trident_host::{Subkind, TridentError};

use super::load_option::HardDrive;
use crate::servicing::block_device::ResolvedDevice;
use crate::servicing::block_device::partition::LBA_SIZE;
use crate::servicing::new_root::partitions::read_partitions;

/// The `HD()` node of every partition holding the ESP `device`: the
/// partition itself, or each member of its mirror in the configuration's
/// order. A member whose disk's GPT does not have it (a replaced disk not
/// rebuilt yet) is left out; at least one must be there.
pub fn esp_partitions(
    hc: &HostConfiguration,
    status: &HostStatus,
    device: &ResolvedDevice,
) -> Result<Vec<HardDrive>, TridentError> {
    let ids: Vec<&str> = match device {
        ResolvedDevice::Partition { id, .. } => vec![id.as_str()],
        ResolvedDevice::RaidArray { id, .. } => hc
            .storage
            .raid
            .software
            .iter()
            .find(|array| &array.id == id)
            .map(|array| array.devices.iter().map(String::as_str).collect())
            .unwrap_or_default(),
    };
    let mut found = Vec::new();
    for id in &ids {
        let Some(layout) = status.layout.get(*id) else {
            continue;
        };
        let one = [((*id).to_owned(), layout.clone())].into_iter().collect();
        let part_uuid = match read_partitions(&one) {
            Ok(info) => info.get(*id).and_then(|p| p.part_uuid.parse().ok()),
            Err(e) if ids.len() > 1 => {
                tracing::warn!(member = %id, error = %e,
                    "an ESP mirror member is not on its disk: no boot option for it");
                continue;
            }
            Err(e) => return Err(e),
        };
        let Some(part_uuid) = part_uuid else {
            continue;
        };
        found.push(HardDrive {
            number: layout.number,
            start_lba: layout.offset / LBA_SIZE,
            size_lba: layout.size / LBA_SIZE,
            part_uuid,
        });
    }
    if found.is_empty() {
        return Err(TridentError::new(
            Subkind::BootControl,
            format!(
                "The ESP '{}' has no partition with a known GUID",
                device.id()
            ),
        ));
    }
    Ok(found)
}
