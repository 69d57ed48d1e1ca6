//! The RAID layer: software RAID arrays (`storage.raid.software`) over
//! member partitions, made and run by `mdadm` (see [`mdadm`] for how they
//! are created). At install, after the partition layer wrote the GPTs,
//! each array is created over its members' device nodes, recorded in the
//! Host Status (`raidArrays`: name, level, members, UUID, size; and
//! `partitionPaths[id] = /dev/md/<name>`, as upstream), and, when
//! `syncTimeout` is set, the initial sync is followed to its end as the
//! `raid-sync` phase (as upstream, which does not wait without it). An
//! array resolves to `/dev/md/<name>` from offset 0, so images, new
//! filesystems, mounts and the ESP go through it like through a
//! partition. At update the recorded arrays are assembled if the booted
//! OS has not; before an install re-creates the storage, arrays running
//! on its disks are stopped (upstream's cleanup: one with members on
//! other disks too is an error).

pub mod mdadm;
pub mod members;
pub mod rebuild;
pub mod sync;
pub mod sysfs;

pub use self::sysfs::Kernel;

#[cfg(test)]
pub(super) mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use trident_host::config::HostConfiguration;
use trident_host::config::storage_graph::DeviceKind;
use trident_host::status::{HostStatus, PartitionLayout, RaidArrayStatus};
use trident_host::{Subkind, TridentError};

use super::layer::{BlockDeviceError, BlockDeviceLayer, ResolvedDevice};

/// How long udev may take to link `/dev/md/<name>` after creation.
const LINK_TIMEOUT: Duration = Duration::from_secs(30);

/// Software RAID arrays of the Host Configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct RaidLayer;

impl BlockDeviceLayer for RaidLayer {
    fn kind(&self) -> DeviceKind {
        DeviceKind::RaidArray
    }

    /// mdadm must be there and every disk holding a member must be a
    /// block device: checked before anything is written.
    fn preflight(&self, hc: &HostConfiguration) -> Result<(), TridentError> {
        if hc.storage.raid.software.is_empty() {
            return Ok(());
        }
        for disk in member_disks(hc) {
            if !members::is_block_device(&disk.device) {
                return Err(TridentError::new(
                    Subkind::UnsupportedFeature,
                    format!(
                        "Disk '{}' ({}) holds RAID members but is not a block device: md arrays need the kernel's partitions, which a disk-image file does not have",
                        disk.id, disk.device
                    ),
                ));
            }
        }
        if !mdadm::available() {
            return Err(TridentError::new(
                Subkind::CreateRaid,
                "Software RAID needs mdadm, which is not installed on this host",
            ));
        }
        Ok(())
    }

    fn create(&self, hc: &HostConfiguration, status: &mut HostStatus) -> Result<(), TridentError> {
        status.raid_arrays.clear();
        if hc.storage.raid.software.is_empty() {
            return Ok(());
        }
        let kernel = Kernel::host();
        let layouts = member_layouts(hc, status, Subkind::CreateRaid)?;
        for layout in layouts.values() {
            members::wipe_signatures(layout)?;
        }
        for disk in member_disks(hc) {
            members::reread_partition_table(&disk.device, Subkind::CreateRaid)?;
        }
        members::settle_udev();
        let mut followed = Vec::new();
        for array in &hc.storage.raid.software {
            let nodes = array
                .devices
                .iter()
                .map(|m| {
                    let layout = layouts
                        .get(m)
                        .ok_or_else(|| TridentError::of(Subkind::CreateRaid))?;
                    let node = members::node_of(&kernel.sys, layout, Subkind::CreateRaid)?;
                    Ok(node.display().to_string())
                })
                .collect::<Result<Vec<_>, TridentError>>()?;
            mdadm::run(
                Subkind::CreateRaid,
                &mdadm::create_args(&array.name, array.level, &nodes),
            )?;
            let path = Path::new("/dev/md").join(&array.name);
            wait_for_link(&path)?;
            members::settle_udev();
            let uuid = mdadm::array_uuid(&path)?;
            let state = kernel.array(&array.name);
            let size = state.as_ref().map_or(0, |s| s.size);
            tracing::info!(array = %array.id, device = %path.display(), %uuid, size,
                members = %nodes.join(" "), "RAID array created");
            followed.push((array.id.clone(), array.name.clone(), size));
            status
                .partition_paths
                .insert(array.id.clone(), path.display().to_string());
            status.raid_arrays.insert(
                array.id.clone(),
                RaidArrayStatus {
                    name: array.name.clone(),
                    level: array.level,
                    members: array.devices.clone(),
                    uuid,
                    size,
                    state: state.map_or_else(|| "unknown".to_owned(), |s| s.summary()),
                },
            );
        }
        if let Some(seconds) = hc.storage.raid.sync_timeout {
            let arrays = sync::md_names(&kernel, &followed, Subkind::CreateRaid)?;
            sync::follow(
                &kernel.sys,
                &arrays,
                sync::Limit::Total(Duration::from_secs(seconds)),
                RAID_SYNC_PHASE,
                "Wait for the RAID arrays' initial sync",
                Subkind::CreateRaid,
            )?;
        }
        refresh_states(&kernel, status);
        Ok(())
    }

    /// Assembles each recorded array the booted OS has not (degraded if a
    /// member is missing: the data is there).
    fn open(&self, status: &HostStatus) -> Result<(), TridentError> {
        let sys = Kernel::host().sys;
        for (id, array) in &status.raid_arrays {
            let path = array.path();
            if Path::new(&path).exists() {
                continue;
            }
            let mut args = vec!["--assemble".to_owned(), path.clone(), "--run".to_owned()];
            for member in &array.members {
                let layout = status.layout.get(member).ok_or_else(|| {
                    TridentError::new(
                        Subkind::OpenRaid,
                        format!(
                            "RAID array '{id}': member '{member}' is not in the recorded layout"
                        ),
                    )
                })?;
                if let Ok(node) = members::node_of(&sys, layout, Subkind::OpenRaid) {
                    args.push(node.display().to_string());
                }
            }
            mdadm::run(Subkind::OpenRaid, &args)?;
            wait_for_link(Path::new(&path))?;
            tracing::info!(array = %id, device = %path, "RAID array assembled");
        }
        Ok(())
    }

    /// Stops every array running on the Host Configuration's disks.
    fn close(&self, hc: &HostConfiguration, _previous: &HostStatus) -> Result<(), TridentError> {
        let kernel = Kernel::host();
        let sys = &kernel.sys;
        let ours: BTreeSet<String> = hc
            .storage
            .disks
            .iter()
            .filter(|d| members::is_block_device(&d.device))
            .filter_map(|d| sysfs::kernel_name(Path::new(&d.device)))
            .collect();
        if ours.is_empty() {
            return Ok(());
        }
        for md in sysfs::arrays(sys) {
            let disks: BTreeSet<String> = sysfs::slaves(sys, &md)
                .iter()
                .filter_map(|s| sysfs::disk_of(sys, s))
                .collect();
            if disks.is_disjoint(&ours) {
                continue;
            }
            if !disks.is_subset(&ours) {
                return Err(TridentError::new(
                    Subkind::CleanupRaid,
                    format!(
                        "Could not stop RAID array '{md}': it has members on disks that are not part of the Host Configuration (its disks: {}; the configuration's: {})",
                        join(&disks),
                        join(&ours)
                    ),
                ));
            }
            mdadm::run(
                Subkind::CleanupRaid,
                &["--stop".to_owned(), format!("/dev/{md}")],
            )?;
            tracing::info!(array = %md, disks = %join(&disks), "pre-existing RAID array stopped");
        }
        Ok(())
    }

    fn resolve(&self, id: &str, status: &HostStatus) -> Result<ResolvedDevice, BlockDeviceError> {
        match status.raid_arrays.get(id) {
            Some(array) => Ok(ResolvedDevice::RaidArray {
                id: id.to_owned(),
                path: array.path(),
                size: array.size,
            }),
            None => Err(BlockDeviceError::NotRecorded {
                id: id.to_owned(),
                kind: DeviceKind::RaidArray,
            }),
        }
    }
}

/// Phase id of the wait for the initial sync.
pub const RAID_SYNC_PHASE: &str = "raid-sync";

/// Each recorded array's state as the kernel reports it now (`gone` when
/// the array is not running).
pub fn refresh_states(kernel: &Kernel, status: &mut HostStatus) {
    for array in status.raid_arrays.values_mut() {
        array.state = kernel
            .array(&array.name)
            .map_or_else(|| "not running".to_owned(), |s| s.summary());
    }
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// The disks of `hc` that hold a RAID member.
fn member_disks(hc: &HostConfiguration) -> Vec<&trident_host::config::Disk> {
    let members: BTreeSet<&str> = hc
        .storage
        .raid
        .software
        .iter()
        .flat_map(|a| a.devices.iter().map(String::as_str))
        .collect();
    hc.storage
        .disks
        .iter()
        .filter(|d| d.partitions.iter().any(|p| members.contains(p.id.as_str())))
        .collect()
}

/// Member partition id → its recorded layout.
fn member_layouts(
    hc: &HostConfiguration,
    status: &HostStatus,
    subkind: Subkind,
) -> Result<BTreeMap<String, PartitionLayout>, TridentError> {
    let mut out = BTreeMap::new();
    for array in &hc.storage.raid.software {
        for member in &array.devices {
            let layout = status.layout.get(member).ok_or_else(|| {
                TridentError::new(
                    subkind,
                    format!("RAID array '{}': member '{member}' is not a partition the partition layer created", array.id),
                )
            })?;
            out.insert(member.clone(), layout.clone());
        }
    }
    Ok(out)
}

/// Waits for `/dev/md/<name>` (udev links it after the kernel adds it).
fn wait_for_link(path: &Path) -> Result<(), TridentError> {
    let deadline = Instant::now() + LINK_TIMEOUT;
    while !path.exists() {
        if Instant::now() > deadline {
            return Err(TridentError::new(
                Subkind::CreateRaid,
                format!("{} did not appear within {LINK_TIMEOUT:?}", path.display()),
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}
