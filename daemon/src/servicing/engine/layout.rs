//! Partition layout: creating the GPT of every disk of the Host
//! Configuration (install) and mapping filesystems to the partitions their
//! images go into.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::Path;

use trident_cosi::gpt::{Gpt, GptError, PartitionSpec};
use trident_host::config::{Disk, HostConfiguration, PartitionSize};
use trident_host::status::{AbVolume, PartitionLayout};
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};
use uuid::Uuid;

use crate::servicing::write_target::{LBA_SIZE, WriteTarget};

/// Creates the GPT of every disk (primary and backup) and returns where
/// each partition landed. Blocking.
pub fn create_partition_tables(
    hc: &HostConfiguration,
) -> Result<BTreeMap<String, PartitionLayout>, TridentError> {
    let mut layout = BTreeMap::new();
    for disk in &hc.storage.disks {
        let gpt = plan_gpt(disk)?;
        write_gpt(disk, &gpt)?;
        for (entry, part) in gpt.partitions().iter().zip(&disk.partitions) {
            layout.insert(
                part.id.clone(),
                PartitionLayout {
                    disk_id: disk.id.clone(),
                    device: disk.device.clone(),
                    number: entry.number,
                    offset: entry.start_offset(LBA_SIZE),
                    size: entry.size_bytes(LBA_SIZE),
                },
            );
        }
        tracing::info!(disk = %disk.id, device = %disk.device, partitions = disk.partitions.len(), "partition table created");
    }
    Ok(layout)
}

/// Lays out the partitions of `disk` on the device's whole sectors.
fn plan_gpt(disk: &Disk) -> Result<Gpt, TridentError> {
    let device = Path::new(&disk.device);
    if !device.exists() {
        return Err(TridentError::new(
            Subkind::TargetDiskMissing,
            format!(
                "Disk '{}': {} does not exist (create the disk-image file or attach the device)",
                disk.id, disk.device
            ),
        ));
    }
    let size = trident_cosi::stream::target_size(device).structured_msg(
        Subkind::CreatePartitionTable,
        format!("Cannot size {}", disk.device),
    )?;
    let specs = disk
        .partitions
        .iter()
        .map(|p| {
            Ok(PartitionSpec {
                type_guid: Uuid::parse_str(p.partition_type.gpt_type_guid())
                    .structured(Subkind::CreatePartitionTable)?,
                // The configured GUID (what fstab and boot entries name), else a fresh one.
                unique_guid: match &p.uuid {
                    Some(u) => Uuid::parse_str(u).structured_msg(
                        Subkind::InvalidHostConfiguration,
                        format!("partition '{}': uuid '{u}' is not a GUID", p.id),
                    )?,
                    None => Uuid::new_v4(),
                },
                // The configured GPT name, else the partition id.
                name: p.label.clone().unwrap_or_else(|| p.id.clone()),
                size: match p.size {
                    PartitionSize::Bytes(b) => Some(b),
                    PartitionSize::Grow => None,
                },
                attributes: 0,
            })
        })
        .collect::<Result<Vec<_>, TridentError>>()?;
    // Round down to whole sectors: a disk-image file may have any length.
    let usable = size - size % LBA_SIZE;
    Gpt::build(usable, LBA_SIZE, Uuid::new_v4(), &specs).map_err(|e| match e {
        GptError::DiskTooSmall { .. } => TridentError::with_source(
            Subkind::TargetDiskTooSmall,
            format!(
                "Disk '{}' ({}, {size} bytes) is too small for its partitions",
                disk.id, disk.device
            ),
            e,
        ),
        other => TridentError::with_source(
            Subkind::CreatePartitionTable,
            format!("Cannot lay out the partitions of disk '{}'", disk.id),
            other,
        ),
    })
}

/// Writes the primary and backup GPT of `disk` and syncs them.
fn write_gpt(disk: &Disk, gpt: &Gpt) -> Result<(), TridentError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&disk.device)
        .structured_msg(
            Subkind::CreatePartitionTable,
            format!("Cannot open {}", disk.device),
        )?;
    gpt.write_primary(&file)
        .structured(Subkind::CreatePartitionTable)
        .with_context(|| format!("Writing the primary GPT of {}", disk.device))?;
    gpt.write_backup(&file)
        .structured(Subkind::CreatePartitionTable)
        .with_context(|| format!("Writing the backup GPT of {}", disk.device))?;
    file.sync_all().structured(Subkind::CreatePartitionTable)?;
    Ok(())
}

/// Which filesystems a servicing writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targets {
    /// Install: every filesystem; A/B pairs get their A volume.
    Install,
    /// A/B update: only filesystems on volume pairs, into `volume`.
    AbUpdate { volume: AbVolume },
}

/// Mount point → target partition.
pub fn write_targets(
    hc: &HostConfiguration,
    layout: &BTreeMap<String, PartitionLayout>,
    which: Targets,
) -> Result<BTreeMap<String, WriteTarget>, TridentError> {
    let mut targets = BTreeMap::new();
    for (i, fs) in hc.storage.filesystems.iter().enumerate() {
        let partition_id = match (hc.find_volume_pair(&fs.device_id), which) {
            (Some(pair), Targets::Install) => pair.volume_a_id.clone(),
            (Some(pair), Targets::AbUpdate { volume }) => match volume {
                AbVolume::VolumeA => pair.volume_a_id.clone(),
                AbVolume::VolumeB => pair.volume_b_id.clone(),
            },
            (None, Targets::Install) => fs.device_id.clone(),
            (None, Targets::AbUpdate { .. }) => {
                tracing::info!(
                    mount_point = fs.mount_point.path(),
                    device = %fs.device_id,
                    "not on an A/B volume pair: left untouched by the A/B update"
                );
                continue;
            }
        };
        let Some(place) = layout.get(&partition_id) else {
            return Err(TridentError::new(
                Subkind::InvalidServicingState,
                format!(
                    "storage.filesystems[{i}]: partition '{partition_id}' is not in the recorded layout; \
                     the Host Configuration's storage differs from the installed one"
                ),
            ));
        };
        targets.insert(
            fs.mount_point.path().to_owned(),
            WriteTarget {
                partition_id,
                layout: place.clone(),
            },
        );
    }
    Ok(targets)
}
