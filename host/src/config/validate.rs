//! Semantic checks of a parsed Host Configuration: the block-device graph
//! (`storage_graph`: ids, references, which device sits on which), GPT
//! identities and sizes, image URL/hash, a root filesystem. Each error
//! names the key path.

use std::collections::{HashMap, HashSet};

use super::storage_graph::StorageGraph;
use super::{
    Disk, FileSystemType, FilesystemSource, HASH_IGNORED, HostConfiguration, PartitionSize,
    ValidatedConfig,
};
use crate::error::{Subkind, TridentError};

#[track_caller]
fn invalid(subkind: Subkind, path: &str, what: String) -> TridentError {
    TridentError::new(subkind, format!("Host Configuration key '{path}': {what}"))
}

/// Checks everything that the types alone cannot.
pub fn validate(hc: &HostConfiguration) -> Result<(), TridentError> {
    validate_with_graph(hc, None).map(drop)
}

/// [`validate`], handing back the configuration with the storage graph
/// the checks built.
pub fn validated(hc: HostConfiguration) -> Result<ValidatedConfig, TridentError> {
    let graph = validate_with_graph(&hc, None)?;
    Ok(ValidatedConfig::new(hc, graph))
}

/// The checks of [`validate`]; `graph` is `hc`'s storage graph when the
/// caller built (and checked) it already. Returns the graph.
pub(super) fn validate_with_graph(
    hc: &HostConfiguration,
    graph: Option<StorageGraph>,
) -> Result<StorageGraph, TridentError> {
    super::document_rules::validate_document_rules(hc)?;
    validate_image(hc)?;
    let graph = validate_storage(hc, graph)?;
    validate_scripts(hc)?;
    validate_kernel_command_line(hc)?;
    validate_extensions(hc)?;
    Ok(graph)
}

/// `os.sysexts[]` and `os.confexts[]`: a URL we can fetch, the hash of
/// the image, a path in one of the kind's directories; no image twice.
fn validate_extensions(hc: &HostConfiguration) -> Result<(), TridentError> {
    let kinds: [(&str, &[super::Extension], &[&str]); 2] = [
        ("os.sysexts", &hc.os.sysexts, &super::SYSEXT_DIRECTORIES),
        ("os.confexts", &hc.os.confexts, &super::CONFEXT_DIRECTORIES),
    ];
    for (key, extensions, dirs) in kinds {
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (i, ext) in extensions.iter().enumerate() {
            let base = format!("{key}[{i}]");
            if !url_scheme_ok(&ext.url) {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &format!("{base}.url"),
                    "must be a file://, http://, https:// or oci:// URL".into(),
                ));
            }
            let sha = ext.sha384.to_ascii_lowercase();
            if sha.len() != 96 || !sha.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &format!("{base}.sha384"),
                    "must be the SHA-384 of the image file (96 hex digits)".into(),
                ));
            }
            if let Some(first) = seen.insert(sha, i) {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &format!("{base}.sha384"),
                    format!("the same image as {key}[{first}]"),
                ));
            }
            if let Some(path) = &ext.path {
                let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
                let file = path.rsplit('/').next().unwrap_or_default();
                if !dirs.contains(&dir) || file.len() <= ".raw".len() || !file.ends_with(".raw") {
                    return Err(invalid(
                        Subkind::InvalidHostConfiguration,
                        &format!("{base}.path"),
                        format!("'{path}' must be NAME.raw in one of {}", dirs.join(", ")),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A URL of a scheme the daemon fetches, with something after the scheme.
fn url_scheme_ok(url: &str) -> bool {
    ["file://", "http://", "https://", "oci://"]
        .iter()
        .any(|s| url.starts_with(s) && url.len() > s.len())
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
    if !url_scheme_ok(&image.url) {
        return Err(invalid(
            Subkind::InvalidImageUrl,
            "image.url",
            format!(
                "'{}' must be a file://, http://, https:// or oci:// URL",
                image.url
            ),
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

/// The block-device graph (ids, references, which device sits on which:
/// `storage_graph`), then what it does not cover: disk devices, GPT
/// identities and sizes, filesystems' sources, types and mount points.
fn validate_storage(
    hc: &HostConfiguration,
    graph: Option<StorageGraph>,
) -> Result<StorageGraph, TridentError> {
    let storage = &hc.storage;
    if storage.disks.is_empty() {
        return Err(invalid(
            Subkind::InvalidHostConfiguration,
            "storage.disks",
            "at least one disk is required".into(),
        ));
    }
    let graph = match graph {
        Some(graph) => graph,
        None => StorageGraph::build(hc)?,
    };
    super::raid::validate_raid(hc)?;
    super::encryption::validate_encryption(hc)?;
    let mut devices: HashSet<&str> = HashSet::new();
    let mut guids: HashMap<uuid::Uuid, String> = HashMap::new();
    for (d, disk) in storage.disks.iter().enumerate() {
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
            check_gpt_identity(
                &format!("storage.disks[{d}].partitions[{p}]"),
                part,
                &mut guids,
            )?;
        }
        for (a, adopted) in disk.adopted_partitions.iter().enumerate() {
            if let Some(text) = &adopted.match_uuid
                && uuid::Uuid::parse_str(text).is_err()
            {
                return Err(invalid(
                    Subkind::InvalidHostConfiguration,
                    &format!("storage.disks[{d}].adoptedPartitions[{a}].matchUuid"),
                    format!("'{text}' is not a GUID"),
                ));
            }
        }
        check_sizes(d, disk)?;
    }
    validate_filesystems(hc)?;
    Ok(graph)
}

fn validate_filesystems(hc: &HostConfiguration) -> Result<(), TridentError> {
    let mut mounts: HashMap<&str, usize> = HashMap::new();
    for (i, fs) in hc.storage.filesystems.iter().enumerate() {
        let base = format!("storage.filesystems[{i}]");
        if fs.fs_type.is_some() && fs.effective_source() == FilesystemSource::Image {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.type"),
                "a filesystem from the image has the image's type; 'type' is only for \
                 new or adopted filesystems"
                    .into(),
            ));
        }
        if fs.effective_source() == FilesystemSource::Adopted
            && fs.fs_type == Some(FileSystemType::Tmpfs)
        {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.type"),
                "an adopted filesystem exists on its partition: ext4, xfs, vfat, ntfs or auto \
                 (detected), not tmpfs"
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
        if fs.device_id.is_empty() {
            return Err(invalid(
                Subkind::InvalidHostConfiguration,
                &format!("{base}.deviceId"),
                "required: the partition or volume pair the filesystem is on".into(),
            ));
        }
        // Not mounted (an image's or adopted filesystem): nothing is
        // written to it or mounted, so no path to check.
        if fs.mount_point.is_none() {
            continue;
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
