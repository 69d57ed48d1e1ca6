//! `rebuild-raid`: after a failed disk was replaced by a blank one, the
//! configuration's partitions are recreated on it and re-added to each
//! degraded array, and the recovery is followed to its end.
//!
//! A replaced disk is told as upstream tells it: its GPT disk GUID is not
//! the one recorded when the install wrote it (a blank disk has none).
//! Everything is checked before anything is touched ([`plan`]); each
//! refusal is `validate-rebuild-raid` naming what is wrong: no disk was
//! replaced (every disk still carries its recorded table), the
//! replacement is too small for the configuration's partitions, an array
//! with a member on it is not degraded (the kernel still runs it whole),
//! an array lost every copy of its data, or a partition of the disk holds
//! something else than a RAID member (upstream's rule: nothing else can
//! be rebuilt from the other disks).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use trident_host::config::raid::redundancy;
use trident_host::config::{Disk, HostConfiguration};
use trident_host::status::{HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};

use super::super::disk_guids::disk_guid;
use super::super::partition::{check_fits, create_table};
use super::sysfs::{self, Kernel};
use super::{mdadm, members, sync};

/// Phase id of the recovery.
pub const RECOVERY_PHASE: &str = "raid-recovery";
/// How long an added member may wait before md starts recovering onto it.
const RECOVERY_START: Duration = Duration::from_secs(60);

/// One member to re-add: array id, its device, the member partition id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReAdd {
    pub array: String,
    pub path: String,
    pub member: String,
}

/// What a rebuild will do.
#[derive(Debug, Clone)]
pub struct RebuildPlan {
    /// The replaced disks of the configuration, with their index in
    /// `storage.disks`.
    pub disks: Vec<(usize, Disk)>,
    /// The members they hold, in the arrays' order.
    pub re_adds: Vec<ReAdd>,
}

fn refuse(message: String) -> TridentError {
    TridentError::new(Subkind::ValidateRebuildRaid, message)
}

/// States a rebuild may run in (upstream's list, of those this daemon has).
fn may_rebuild(state: ServicingState) -> bool {
    matches!(
        state,
        ServicingState::Provisioned
            | ServicingState::AbUpdateStaged
            | ServicingState::AbUpdateFinalized
    )
}

/// Decides what to rebuild, reading the disks and the kernel's arrays
/// and touching nothing.
pub fn plan(
    hc: &HostConfiguration,
    status: &HostStatus,
    kernel: &Kernel,
) -> Result<RebuildPlan, TridentError> {
    if status.raid_arrays.is_empty() {
        return Err(refuse(
            "This host has no software RAID arrays (storage.raid.software was empty at install): nothing to rebuild".to_owned(),
        ));
    }
    if !may_rebuild(status.servicing_state) {
        return Err(TridentError::new(
            Subkind::InvalidServicingState,
            format!(
                "rebuild-raid is not allowed while the host is '{}'",
                status.servicing_state
            ),
        ));
    }
    let replaced: Vec<(usize, &Disk)> = hc
        .storage
        .disks
        .iter()
        .enumerate()
        .filter(|(_, d)| {
            let recorded = status.disk_uuids.get(&d.id);
            recorded.is_some() && disk_guid(&d.device).ok().as_ref() != recorded
        })
        .collect();
    if replaced.is_empty() {
        return Err(refuse(
            "No disk was replaced: every disk carries the partition table the install wrote (its disk GUID is the recorded one); nothing to rebuild".to_owned(),
        ));
    }
    let mut re_adds = Vec::new();
    for &(d, disk) in &replaced {
        if let Err(e) = check_fits(d, disk) {
            return Err(match e.subkind() {
                Subkind::TargetDiskTooSmall | Subkind::TargetDiskMissing => refuse(format!(
                    "The replacement of disk '{}' cannot hold the configuration's partitions: {}",
                    disk.id,
                    e.message()
                )),
                _ => e,
            });
        }
        re_adds.extend(members_on(hc, disk)?);
    }
    let lost: BTreeSet<&str> = replaced
        .iter()
        .flat_map(|(_, d)| d.partitions.iter().map(|p| p.id.as_str()))
        .collect();
    let replaced_names: BTreeSet<String> = replaced
        .iter()
        .filter_map(|(_, d)| sysfs::kernel_name(Path::new(&d.device)))
        .collect();
    let sys = &kernel.sys;
    for (id, array) in &status.raid_arrays {
        let missing = array
            .members
            .iter()
            .filter(|m| lost.contains(m.as_str()))
            .count();
        if missing == 0 {
            continue;
        }
        if missing > redundancy(array.level, array.members.len()) {
            return Err(refuse(format!(
                "Array '{id}' ({}) cannot be recovered: {missing} of its {} members were on the replaced disks",
                trident_host::config::raid::level_name(array.level),
                array.members.len()
            )));
        }
        let Some(state) = kernel.array(&array.name) else {
            return Err(refuse(format!(
                "Array '{id}' ({}) is not running: assemble it (degraded) before rebuilding",
                array.path()
            )));
        };
        let on_replaced = state
            .members
            .iter()
            .any(|m| sysfs::disk_of(sys, m).is_some_and(|disk| replaced_names.contains(&disk)));
        if state.degraded == 0 || on_replaced {
            return Err(refuse(format!(
                "Array '{id}' ({}) is not degraded (state: {}, members: {}): a member on the disk to rebuild is still in use, nothing was touched",
                array.path(),
                state.summary(),
                state.members.join(" ")
            )));
        }
    }
    // Last, so every refusal above can be checked on disk-image files.
    if let Some((_, disk)) = replaced
        .iter()
        .find(|(_, d)| !members::is_block_device(&d.device))
    {
        return Err(refuse(format!(
            "Disk '{}' ({}) is not a block device: md arrays cannot be rebuilt on it",
            disk.id, disk.device
        )));
    }
    Ok(RebuildPlan {
        disks: replaced
            .into_iter()
            .map(|(d, disk)| (d, disk.clone()))
            .collect(),
        re_adds,
    })
}

/// The RAID members on `disk`; a partition that is not one but holds
/// something (a filesystem, swap, a volume) cannot be rebuilt.
fn members_on(hc: &HostConfiguration, disk: &Disk) -> Result<Vec<ReAdd>, TridentError> {
    let mut out = Vec::new();
    for part in &disk.partitions {
        let array = hc
            .storage
            .raid
            .software
            .iter()
            .find(|a| a.devices.contains(&part.id));
        match array {
            Some(array) => out.push(ReAdd {
                array: array.id.clone(),
                path: format!("/dev/md/{}", array.name),
                member: part.id.clone(),
            }),
            None if is_used(hc, &part.id) => {
                return Err(refuse(format!(
                    "Partition '{}' of disk '{}' is neither a member of a software RAID array nor an unformatted partition: it cannot be rebuilt, refusing",
                    part.id, disk.id
                )));
            }
            None => {}
        }
    }
    Ok(out)
}

/// Whether anything of the configuration sits on device `id`.
fn is_used(hc: &HostConfiguration, id: &str) -> bool {
    let s = &hc.storage;
    s.filesystems.iter().any(|f| f.device_id == id)
        || s.swap.iter().any(|w| w.device_id == id)
        || hc
            .volume_pairs()
            .iter()
            .any(|p| p.volume_a_id == id || p.volume_b_id == id)
        || s.encryption
            .as_ref()
            .is_some_and(|e| e.volumes.iter().any(|v| v.device_id == id))
        || s.verity
            .iter()
            .any(|v| v.data_device_id == id || v.hash_device_id == id)
}

/// Partitions the replaced disks as the configuration says, re-adds their
/// members and follows the recovery to its end (the `partition` and
/// [`RECOVERY_PHASE`] phases); records the new tables and the arrays'
/// states in `status`.
pub fn run(
    plan: &RebuildPlan,
    kernel: &Kernel,
    status: &mut HostStatus,
) -> Result<(), TridentError> {
    let sys = &kernel.sys;
    let partition = trident_telemetry::progress::Phase::start(
        "partition",
        "Recreate the partitions of the replaced disks",
        trident_telemetry::progress::Unit::Items,
        Some(plan.disks.len() as u64),
    );
    for (d, disk) in &plan.disks {
        let table = create_table(*d, disk)?;
        for (id, layout) in &table.partitions {
            status.partition_paths.insert(id.clone(), layout.path());
        }
        // A used disk may carry an old array's superblock that udev would
        // assemble the moment its partitions appear.
        for add in plan.re_adds.iter() {
            if let Some(layout) = table.partitions.get(&add.member) {
                members::wipe_signatures(layout)?;
            }
        }
        status.layout.extend(table.partitions);
        status.disk_uuids.insert(disk.id.clone(), table.disk_guid);
        members::reread_partition_table(&disk.device, Subkind::RebuildRaid)?;
        members::settle_udev();
        partition.add(1);
    }
    partition.done();
    let mut followed = Vec::new();
    for add in &plan.re_adds {
        let layout = status.layout.get(&add.member).ok_or_else(|| {
            TridentError::new(
                Subkind::RebuildRaid,
                format!("member '{}' was not laid out", add.member),
            )
        })?;
        let node = members::node_of(sys, layout, Subkind::RebuildRaid)?;
        mdadm::run(
            Subkind::RebuildRaid,
            &[
                add.path.clone(),
                "--add".to_owned(),
                node.display().to_string(),
            ],
        )?;
        tracing::info!(array = %add.array, member = %add.member, node = %node.display(), "member re-added");
        // An array not written since it was assembled is auto-read-only
        // (Debian's md_mod start_ro=1) and defers recovery until written.
        let name = add.path.trim_start_matches("/dev/md/");
        if kernel
            .array(name)
            .is_some_and(|s| s.array_state == "read-auto")
        {
            mdadm::run(
                Subkind::RebuildRaid,
                &["--readwrite".to_owned(), add.path.clone()],
            )?;
        }
        if !followed.iter().any(|(id, _, _)| id == &add.array) {
            let (name, size) = status
                .raid_arrays
                .get(&add.array)
                .map_or((String::new(), 0), |a| (a.name.clone(), a.size));
            followed.push((add.array.clone(), name, size));
        }
    }
    let arrays = sync::md_names(kernel, &followed, Subkind::RebuildRaid)?;
    sync::follow(
        sys,
        &arrays,
        sync::Limit::StartWithin(RECOVERY_START),
        RECOVERY_PHASE,
        "Recover the RAID arrays onto the new disks",
        Subkind::RebuildRaid,
    )?;
    super::refresh_states(kernel, status);
    Ok(())
}
