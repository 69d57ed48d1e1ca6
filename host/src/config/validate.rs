//! Semantic checks of a parsed Host Configuration: references, uniqueness,
//! image URL/hash, a root filesystem. Each error names the key path.

use std::collections::{HashMap, HashSet};

use super::{Disk, FilesystemSource, HASH_IGNORED, HostConfiguration, PartitionSize, VolumePair};
use crate::error::{Subkind, TridentError};

#[track_caller]
fn invalid(subkind: Subkind, path: &str, what: String) -> TridentError {
    TridentError::new(subkind, format!("Host Configuration key '{path}': {what}"))
}

/// Checks everything that the types alone cannot.
pub fn validate(hc: &HostConfiguration) -> Result<(), TridentError> {
    validate_image(hc)?;
    validate_storage(hc)?;
    validate_scripts(hc)?;
    validate_kernel_command_line(hc)?;
    Ok(())
}

/// Each extra kernel argument is one word of the boot entry's options.
fn validate_kernel_command_line(hc: &HostConfiguration) -> Result<(), TridentError> {
    let args = &hc.os.kernel_command_line.extra_command_line;
    match args
        .iter()
        .position(|a| a.is_empty() || a.chars().any(char::is_whitespace))
    {
        Some(i) => Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("os.kernelCommandLine.extraCommandLine[{i}]"),
            format!("'{}' is not one kernel argument (no spaces)", args[i]),
        )),
        None => Ok(()),
    }
}

fn validate_image(hc: &HostConfiguration) -> Result<(), TridentError> {
    let Some(image) = &hc.image else {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            "image",
            "required: the COSI image to install (url and sha384)".into(),
        ));
    };
    let scheme_ok = ["file://", "http://", "https://"]
        .iter()
        .any(|s| image.url.starts_with(s) && image.url.len() > s.len());
    if !scheme_ok {
        return Err(invalid(
            Subkind::InvalidImageUrl,
            "image.url",
            format!("'{}' must be a file://, http:// or https:// URL", image.url),
        ));
    }
    check_sha384("image.sha384", &image.sha384)
}

/// `sha384` is 96 lowercase hex digits or `ignored`.
pub fn check_sha384(path: &str, value: &str) -> Result<(), TridentError> {
    let hex_ok = value.len() == 96
        && value
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    if value == HASH_IGNORED || hex_ok {
        Ok(())
    } else {
        Err(invalid(
            Subkind::InvalidImageHash,
            path,
            format!(
                "'{value}' is not a SHA-384 hash: expected 96 lowercase hex digits or '{HASH_IGNORED}'"
            ),
        ))
    }
}

fn validate_storage(hc: &HostConfiguration) -> Result<(), TridentError> {
    let storage = &hc.storage;
    if storage.disks.is_empty() {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            "storage.disks",
            "at least one disk is required".into(),
        ));
    }
    // All ids (disks, partitions, volume pairs) share one namespace.
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut claim = |id: &str, path: String| -> Result<(), TridentError> {
        if id.is_empty() {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &path,
                "id must not be empty".into(),
            ));
        }
        if let Some(first) = ids.get(id) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &path,
                format!("id '{id}' is already used at '{first}'"),
            ));
        }
        ids.insert(id.to_owned(), path);
        Ok(())
    };
    let mut partitions: HashSet<&str> = HashSet::new();
    let mut devices: HashSet<&str> = HashSet::new();
    let mut guids: HashMap<uuid::Uuid, String> = HashMap::new();
    for (d, disk) in storage.disks.iter().enumerate() {
        claim(&disk.id, format!("storage.disks[{d}].id"))?;
        if disk.device.is_empty() || !disk.device.starts_with('/') {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("storage.disks[{d}].device"),
                format!(
                    "'{}' must be an absolute path to a block device or disk-image file",
                    disk.device
                ),
            ));
        }
        if !devices.insert(&disk.device) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("storage.disks[{d}].device"),
                format!("device '{}' is used by two disks", disk.device),
            ));
        }
        for (p, part) in disk.partitions.iter().enumerate() {
            claim(&part.id, format!("storage.disks[{d}].partitions[{p}].id"))?;
            partitions.insert(&part.id);
            check_gpt_identity(
                &format!("storage.disks[{d}].partitions[{p}]"),
                part,
                &mut guids,
            )?;
        }
        check_sizes(d, disk)?;
    }
    let mut paired: HashMap<&str, String> = HashMap::new();
    for (i, pair) in hc.volume_pairs().iter().enumerate() {
        let base = format!("storage.abUpdate.volumePairs[{i}]");
        claim(&pair.id, format!("{base}.id"))?;
        check_pair_members(hc, &base, pair)?;
        for (key, member) in [
            ("volumeAId", &pair.volume_a_id),
            ("volumeBId", &pair.volume_b_id),
        ] {
            let path = format!("{base}.{key}");
            if !partitions.contains(member.as_str()) {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &path,
                    format!("references unknown partition '{member}'"),
                ));
            }
            if let Some(first) = paired.insert(member, path.clone()) {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &path,
                    format!("partition '{member}' is already in a volume pair at '{first}'"),
                ));
            }
        }
    }
    validate_filesystems(hc, &partitions, &paired)?;
    validate_swap(hc, &partitions, &paired)
}

/// Each swap device is a partition of its own: not paired, not holding a
/// filesystem, listed once.
fn validate_swap(
    hc: &HostConfiguration,
    partitions: &HashSet<&str>,
    paired: &HashMap<&str, String>,
) -> Result<(), TridentError> {
    let mut seen = HashSet::new();
    for (i, swap) in hc.storage.swap.iter().enumerate() {
        let path = format!("storage.swap[{i}].deviceId");
        let dev = swap.device_id.as_str();
        let problem = if !partitions.contains(dev) {
            Some(format!("references unknown partition '{dev}'"))
        } else if paired.contains_key(dev) {
            Some(format!("partition '{dev}' is in a volume pair"))
        } else if hc.storage.filesystems.iter().any(|f| f.device_id == dev) {
            Some(format!("partition '{dev}' holds a filesystem"))
        } else if !seen.insert(dev) {
            Some(format!("partition '{dev}' is listed twice"))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(invalid(Subkind::InvalidHostConfiguration, &path, problem));
        }
    }
    Ok(())
}

fn validate_filesystems(
    hc: &HostConfiguration,
    partitions: &HashSet<&str>,
    paired: &HashMap<&str, String>,
) -> Result<(), TridentError> {
    let mut mounts: HashMap<&str, usize> = HashMap::new();
    let mut devices: HashMap<&str, usize> = HashMap::new();
    for (i, fs) in hc.storage.filesystems.iter().enumerate() {
        let base = format!("storage.filesystems[{i}]");
        let dev = fs.device_id.as_str();
        if fs.fs_type.is_some() && fs.effective_source() == FilesystemSource::Image {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.type"),
                "a filesystem from the image has the image's type; 'type' is only for \
                 new or adopted filesystems"
                    .into(),
            ));
        }
        if fs.effective_source() == FilesystemSource::New && fs.fs_type.is_none() {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.type"),
                "required for a new filesystem (ext4, xfs or vfat)".into(),
            ));
        }
        if dev.is_empty() {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.deviceId"),
                "required: the partition or volume pair the filesystem is on".into(),
            ));
        }
        let is_pair = hc.find_volume_pair(dev).is_some();
        if !is_pair && !partitions.contains(dev) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.deviceId"),
                format!("references unknown partition or volume pair '{dev}'"),
            ));
        }
        if let Some(pair_path) = paired.get(dev) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.deviceId"),
                format!(
                    "partition '{dev}' is a member of the volume pair at '{pair_path}'; use the pair id"
                ),
            ));
        }
        if let Some(first) = devices.insert(dev, i) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.deviceId"),
                format!("device '{dev}' already holds storage.filesystems[{first}]"),
            ));
        }
        let path = fs.mount_point.path();
        if !path.starts_with('/') {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.mountPoint.path"),
                format!("'{path}' must be an absolute path"),
            ));
        }
        if let Some(first) = mounts.insert(path, i) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.mountPoint.path"),
                format!("'{path}' is already mounted by storage.filesystems[{first}]"),
            ));
        }
    }
    if !mounts.contains_key("/") {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            "storage.filesystems",
            "a root filesystem (mountPoint '/') is required".into(),
        ));
    }
    Ok(())
}

fn validate_scripts(hc: &HostConfiguration) -> Result<(), TridentError> {
    let groups = [
        ("scripts.preServicing", &hc.scripts.pre_servicing),
        ("scripts.postProvision", &hc.scripts.post_provision),
        ("scripts.postConfigure", &hc.scripts.post_configure),
    ];
    for (group, scripts) in groups {
        let mut names = HashSet::new();
        for (i, s) in scripts.iter().enumerate() {
            let base = format!("{group}[{i}]");
            check_runnable(&base, s.content.is_some(), s.path.as_deref())?;
            if !s.name.is_empty() && !names.insert(s.name.as_str()) {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &format!("{base}.name"),
                    format!("script name '{}' is used twice in {group}", s.name),
                ));
            }
        }
    }
    let mut names = HashSet::new();
    for (i, c) in hc.health.checks.iter().enumerate() {
        let base = format!("health.checks[{i}]");
        match &c.systemd_services {
            Some(units) => check_systemd_check(&base, c, units)?,
            None => check_runnable(&base, c.content.is_some(), c.path.as_deref())?,
        }
        if c.timeout_seconds == Some(0) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.timeoutSeconds"),
                "must be greater than zero".into(),
            ));
        }
        if !c.name.is_empty() && !names.insert(c.name.as_str()) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.name"),
                format!("health check name '{}' is used twice", c.name),
            ));
        }
    }
    Ok(())
}

/// A `systemdServices` check names units and runs nothing itself.
fn check_systemd_check(
    base: &str,
    c: &super::HealthCheck,
    units: &[String],
) -> Result<(), TridentError> {
    if c.content.is_some() || c.path.is_some() {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            base,
            "a systemdServices check takes no 'content' or 'path'".into(),
        ));
    }
    if let Some(u) = units
        .iter()
        .position(|u| u.trim().is_empty() || u.starts_with('-'))
    {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{base}.systemdServices[{u}]"),
            format!("'{}' is not a unit name", units[u]),
        ));
    }
    if units.is_empty() {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{base}.systemdServices"),
            "name at least one unit".into(),
        ));
    }
    Ok(())
}

/// GPT limits of a partition's `uuid` (a GUID, unique on the host) and
/// `label` (at most 36 UTF-16 units).
fn check_gpt_identity(
    base: &str,
    part: &super::Partition,
    guids: &mut HashMap<uuid::Uuid, String>,
) -> Result<(), TridentError> {
    if let Some(text) = &part.uuid {
        let path = format!("{base}.uuid");
        let Ok(guid) = uuid::Uuid::parse_str(text) else {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &path,
                format!("'{text}' is not a GUID"),
            ));
        };
        if let Some(first) = guids.insert(guid, path.clone()) {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &path,
                format!("GUID '{text}' is already used at '{first}'"),
            ));
        }
    }
    if let Some(label) = &part.label
        && label.encode_utf16().count() > 36
    {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{base}.label"),
            format!("'{label}' is longer than a GPT name (36 UTF-16 units)"),
        ));
    }
    Ok(())
}

fn check_runnable(base: &str, has_content: bool, path: Option<&str>) -> Result<(), TridentError> {
    if let Some(path) = path
        && !path.starts_with('/')
    {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{base}.path"),
            format!("'{path}' must be an absolute path"),
        ));
    }
    match (has_content, path) {
        (true, Some(_)) => Err(invalid(
            Subkind::InvalidHostConfiguration,
            base,
            "set either 'content' or 'path', not both".into(),
        )),
        (false, None) => Err(invalid(
            Subkind::InvalidHostConfiguration,
            base,
            "one of 'content' or 'path' is required".into(),
        )),
        _ => Ok(()),
    }
}

/// Upstream's block size: every fixed partition size is a multiple of it.
const SIZE_ALIGNMENT: u64 = 4096;

/// Sizes that can be laid out: non-zero multiples of 4 KiB, `grow` only
/// last, and a total that does not overflow.
fn check_sizes(d: usize, disk: &Disk) -> Result<(), TridentError> {
    let last = disk.partitions.len().saturating_sub(1);
    let mut total: u64 = 0;
    for (p, part) in disk.partitions.iter().enumerate() {
        let path = format!("storage.disks[{d}].partitions[{p}].size");
        match part.size {
            PartitionSize::Grow if p != last => {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &path,
                    "'grow' is only allowed for the last partition of a disk".into(),
                ));
            }
            PartitionSize::Grow => {}
            PartitionSize::Bytes(bytes) => {
                if bytes == 0 || bytes % SIZE_ALIGNMENT != 0 {
                    return Err(invalid(
                        Subkind::InvalidHostConfiguration,
                        &path,
                        format!("{bytes} bytes is not a non-zero multiple of {SIZE_ALIGNMENT}"),
                    ));
                }
                total = total.checked_add(bytes).ok_or_else(|| {
                    invalid(
                        Subkind::InvalidHostConfiguration,
                        &path,
                        "the partitions of this disk add up to more than 16 EiB".into(),
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// The two volumes of a pair are different partitions of the same type
/// and size, so either can hold the image.
fn check_pair_members(
    hc: &HostConfiguration,
    base: &str,
    pair: &VolumePair,
) -> Result<(), TridentError> {
    if pair.volume_a_id == pair.volume_b_id {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{base}.volumeBId"),
            format!(
                "'{}' is also volume A; a pair needs two partitions",
                pair.volume_b_id
            ),
        ));
    }
    let (Some((_, a)), Some((_, b))) = (
        hc.find_partition(&pair.volume_a_id),
        hc.find_partition(&pair.volume_b_id),
    ) else {
        return Ok(());
    };
    if a.size != b.size {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{base}.volumeBId"),
            format!(
                "partitions '{}' ({}) and '{}' ({}) must have the same size",
                a.id, a.size, b.id, b.size
            ),
        ));
    }
    if a.partition_type != b.partition_type {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            &format!("{base}.volumeBId"),
            format!(
                "partitions '{}' ({}) and '{}' ({}) must have the same type",
                a.id,
                a.partition_type.name(),
                b.id,
                b.partition_type.name()
            ),
        ));
    }
    Ok(())
}
