//! The partition layer: at install, the GPT of every disk of the Host
//! Configuration (primary and backup), laid out around the disk's adopted
//! partitions (kept where they are, byte for byte: [`super::adoption`]),
//! recorded in the Host Status as each partition's byte range of its disk
//! (`layout`, and `partitionPaths` as `<device>@<offset>+<size>`);
//! afterwards each partition, adopted or new, resolves to that byte range. Byte ranges rather than device nodes: a disk-image file has
//! no per-partition nodes, and a block device needs no partition-table
//! reread.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::path::Path;

use trident_cosi::gpt::{Gpt, GptEntry, GptError, PartitionSpec};
use trident_host::config::storage_graph::DeviceKind;
use trident_host::config::{Disk, HostConfiguration, PartitionSize};
use trident_host::status::{HostStatus, PartitionLayout};
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};
use uuid::Uuid;

use super::adoption;
use super::layer::{BlockDeviceError, BlockDeviceLayer, ResolvedDevice};

/// Sector size of the GPTs we create.
pub const LBA_SIZE: u64 = 512;

/// Partitions of the disks of the Host Configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct PartitionLayer;

impl BlockDeviceLayer for PartitionLayer {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Partition
    }

    /// Adopted partitions are partitions of the new table too.
    fn provides(&self, kind: DeviceKind) -> bool {
        matches!(kind, DeviceKind::Partition | DeviceKind::AdoptedPartition)
    }

    /// Writes the GPT of every disk; the layout replaces any earlier
    /// install's, and each disk's GUID is recorded (how `rebuild-raid`
    /// tells a replaced disk).
    fn create(&self, hc: &HostConfiguration, status: &mut HostStatus) -> Result<(), TridentError> {
        let mut layout = BTreeMap::new();
        status.disk_uuids.clear();
        for (d, disk) in hc.storage.disks.iter().enumerate() {
            let table = create_table(d, disk)?;
            status.disk_uuids.insert(disk.id.clone(), table.disk_guid);
            layout.extend(table.partitions);
        }
        status.partition_paths = layout
            .iter()
            .map(|(id, l)| (id.clone(), l.path()))
            .collect();
        status.layout = layout;
        Ok(())
    }

    /// Nothing to assemble: the kernel presents a disk's partitions, and a
    /// disk-image file's are byte ranges of it.
    fn open(&self, _status: &HostStatus) -> Result<(), TridentError> {
        Ok(())
    }

    /// Nothing to stop: an install writes a new GPT over the old one.
    fn close(&self, _hc: &HostConfiguration, _status: &HostStatus) -> Result<(), TridentError> {
        Ok(())
    }

    fn resolve(&self, id: &str, status: &HostStatus) -> Result<ResolvedDevice, BlockDeviceError> {
        match status.layout.get(id) {
            Some(layout) => Ok(ResolvedDevice::Partition {
                id: id.to_owned(),
                layout: layout.clone(),
            }),
            None => Err(BlockDeviceError::NotRecorded {
                id: id.to_owned(),
                kind: DeviceKind::Partition,
            }),
        }
    }
}

/// What writing one disk's GPT made.
#[derive(Debug, Clone)]
pub struct DiskTable {
    /// The new GPT's disk GUID.
    pub disk_guid: String,
    /// Partition id → where it landed, adopted partitions included.
    pub partitions: BTreeMap<String, PartitionLayout>,
}

/// Creates the GPT of `disk` (`storage.disks[d]`; primary and backup) and
/// returns where each partition landed.
pub fn create_table(d: usize, disk: &Disk) -> Result<DiskTable, TridentError> {
    let planned = plan_gpt(d, disk)?;
    write_gpt(disk, &planned.gpt)?;
    let mut partitions = BTreeMap::new();
    for (id, number) in &planned.numbers {
        let Some(entry) = planned.gpt.partition(*number) else {
            continue;
        };
        partitions.insert(
            id.clone(),
            PartitionLayout {
                disk_id: disk.id.clone(),
                device: disk.device.clone(),
                number: entry.number,
                offset: entry.start_offset(LBA_SIZE),
                size: entry.size_bytes(LBA_SIZE),
            },
        );
    }
    tracing::info!(disk = %disk.id, device = %disk.device, partitions = disk.partitions.len(),
        adopted = disk.adopted_partitions.len(), "partition table created");
    Ok(DiskTable {
        disk_guid: planned.gpt.disk_guid.to_string(),
        partitions,
    })
}

/// Whether `disk` (`storage.disks[d]`) can hold its partitions: the
/// checks of [`create_table`] without writing anything.
pub fn check_fits(d: usize, disk: &Disk) -> Result<(), TridentError> {
    plan_gpt(d, disk).map(|_| ())
}

/// A disk's new GPT and the entry number of each partition id.
struct PlannedGpt {
    gpt: Gpt,
    numbers: Vec<(String, u32)>,
}

/// The whole-sector size of `disk`'s device.
fn usable_size(disk: &Disk) -> Result<u64, TridentError> {
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
    // Round down to whole sectors: a disk-image file may have any length.
    Ok(size - size % LBA_SIZE)
}

/// The partitions of `disk` (`storage.disks[d]`) that an install keeps,
/// from the GPT on it now, and that GPT's disk GUID.
fn adopt(
    d: usize,
    disk: &Disk,
    usable: u64,
) -> Result<(Vec<adoption::Adopted>, Option<Uuid>), TridentError> {
    if disk.adopted_partitions.is_empty() {
        return Ok((Vec::new(), None));
    }
    let file = File::open(&disk.device).structured_msg(
        Subkind::AdoptPartition,
        format!("Cannot open {}", disk.device),
    )?;
    let existing = Gpt::read_and_verify(&file, LBA_SIZE, usable).structured_msg(
        Subkind::AdoptPartition,
        format!(
            "Disk '{}' has adopted partitions but {} holds no valid GPT",
            disk.id, disk.device
        ),
    )?;
    let adopted = adoption::match_partitions(
        &disk.id,
        &format!("storage.disks[{d}]"),
        &disk.adopted_partitions,
        existing.partitions(),
    )?;
    Ok((adopted, Some(existing.disk_guid)))
}

/// Lays out the partitions of `disk` (`storage.disks[d]`) on the device's
/// whole sectors, around its adopted partitions.
fn plan_gpt(d: usize, disk: &Disk) -> Result<PlannedGpt, TridentError> {
    let usable = usable_size(disk)?;
    let (adopted, disk_guid) = adopt(d, disk, usable)?;
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
    let kept: Vec<GptEntry> = adopted.iter().map(|a| a.entry.clone()).collect();
    let (gpt, new_numbers) = Gpt::build_around(
        usable,
        LBA_SIZE,
        disk_guid.unwrap_or_else(Uuid::new_v4),
        &kept,
        &specs,
    )
    .map_err(|e| match e {
        GptError::DiskTooSmall { .. } => TridentError::with_source(
            Subkind::TargetDiskTooSmall,
            format!(
                "Disk '{}' ({}, {usable} bytes) is too small for its partitions{}",
                disk.id,
                disk.device,
                if kept.is_empty() {
                    ""
                } else {
                    " around its adopted ones"
                }
            ),
            e,
        ),
        other => TridentError::with_source(
            Subkind::CreatePartitionTable,
            format!("Cannot lay out the partitions of disk '{}'", disk.id),
            other,
        ),
    })?;
    let numbers = disk
        .partitions
        .iter()
        .map(|p| p.id.clone())
        .zip(new_numbers)
        .chain(adopted.into_iter().map(|a| (a.id, a.entry.number)))
        .collect();
    Ok(PlannedGpt { gpt, numbers })
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
