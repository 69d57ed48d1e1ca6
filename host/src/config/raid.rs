//! What a software RAID array needs beyond upstream's storage graph (which
//! already checks members: partitions only, at least two, used once, of
//! like size and type, an ESP array mirrored): `mdadm --create`'s own
//! minimum member count per level, checked here so `trident validate`
//! names the key instead of an install failing half-way; and, as a
//! warning, a redundant array whose members share a disk (one dead disk
//! takes more than one member).

use std::collections::BTreeMap;

use super::{HostConfiguration, RaidLevel, spans};
use crate::error::{Subkind, TridentError};

/// The level's name as written in the Host Configuration.
pub fn level_name(level: RaidLevel) -> &'static str {
    match level {
        RaidLevel::Raid0 => "raid0",
        RaidLevel::Raid1 => "raid1",
        RaidLevel::Raid5 => "raid5",
        RaidLevel::Raid6 => "raid6",
        RaidLevel::Raid10 => "raid10",
    }
}

/// The fewest members `mdadm --create` accepts for `level` (mdadm's
/// Create.c: four for raid6, two for every other level).
pub fn min_members(level: RaidLevel) -> usize {
    match level {
        RaidLevel::Raid6 => 4,
        _ => 2,
    }
}

/// How many members of an array may be lost with its data intact.
pub fn redundancy(level: RaidLevel, members: usize) -> usize {
    match level {
        RaidLevel::Raid0 => 0,
        RaidLevel::Raid1 => members.saturating_sub(1),
        RaidLevel::Raid5 | RaidLevel::Raid10 => 1,
        RaidLevel::Raid6 => 2,
    }
}

/// Each array has at least the members its level needs.
pub(super) fn validate_raid(hc: &HostConfiguration) -> Result<(), TridentError> {
    for (i, array) in hc.storage.raid.software.iter().enumerate() {
        let needed = min_members(array.level);
        if array.devices.len() < needed {
            return Err(TridentError::new(
                Subkind::InvalidHostConfiguration,
                format!(
                    "Host Configuration key 'storage.raid.software[{i}].devices': a {} array needs at least {needed} devices, '{}' has {}",
                    level_name(array.level),
                    array.id,
                    array.devices.len()
                ),
            ));
        }
    }
    Ok(())
}

/// Redundant arrays with two members on one disk: valid, but a failure of
/// that disk loses both.
pub(super) fn shared_disk_warnings(hc: &HostConfiguration, yaml: &str) -> Vec<String> {
    let disk_of: BTreeMap<&str, &str> = hc
        .storage
        .disks
        .iter()
        .flat_map(|d| {
            d.partitions
                .iter()
                .map(move |p| (p.id.as_str(), d.id.as_str()))
        })
        .collect();
    let mut out = Vec::new();
    for (i, array) in hc.storage.raid.software.iter().enumerate() {
        if redundancy(array.level, array.devices.len()) == 0 {
            continue;
        }
        let mut seen: BTreeMap<&str, &str> = BTreeMap::new();
        for member in &array.devices {
            let Some(disk) = disk_of.get(member.as_str()) else {
                continue;
            };
            if let Some(first) = seen.insert(disk, member) {
                let key = format!("storage.raid.software[{i}].devices");
                out.push(format!(
                    "Host Configuration key '{key}'{}: members '{first}' and '{member}' of {} array '{}' are both on disk '{disk}': a failure of that disk loses both",
                    spans::describe(yaml, &key),
                    level_name(array.level),
                    array.id,
                ));
                break;
            }
        }
    }
    out
}
