//! Upstream's rules for `storage.verity` (trident_api's
//! `validate_verity_devices`), each error naming the key path: at most one
//! verity device; a filesystem on it, mounted read-only at `/` or `/usr`;
//! its name is `root` or `usr` (what the initrd's
//! `systemd-veritysetup` opens); a verity root also needs a separate
//! `/boot` (the kernel command line carries the verity arguments) and the
//! writable `/var/lib/trident-overlay` that backs the `/etc` overlay (on an
//! A/B volume pair when the host has A/B update, not read-only, not the
//! verity data device). The storage graph already checked that the data
//! and hash devices exist and that their partition types go together.

use super::{Filesystem, HostConfiguration};
use crate::error::{Subkind, TridentError};

/// Where the `/etc` overlay of a verity root keeps its upper and work
/// directories (upstream's `TRIDENT_OVERLAY_PATH`).
pub const ETC_OVERLAY_MOUNT_POINT: &str = "/var/lib/trident-overlay";
/// The overlay's upper and work directories under it (upstream's
/// `TRIDENT_OVERLAY_{UPPER,WORK}_RELATIVE_PATH`).
pub const ETC_OVERLAY_UPPER: &str = "etc/upper";
pub const ETC_OVERLAY_WORK: &str = "etc/work";
/// The verity device names upstream requires for `/` and `/usr`.
pub const ROOT_VERITY_NAME: &str = "root";
pub const USR_VERITY_NAME: &str = "usr";

#[track_caller]
fn invalid(path: &str, what: impl std::fmt::Display) -> TridentError {
    TridentError::new(
        Subkind::InvalidHostConfiguration,
        format!("Host Configuration key '{path}': {what}"),
    )
}

/// Whether mount options `options` make the mount read-only.
pub fn is_read_only(options: Option<&str>) -> bool {
    options.is_some_and(|o| o.split(',').any(|opt| opt.trim() == "ro"))
}

fn mounted_at<'a>(hc: &'a HostConfiguration, path: &str) -> Option<(usize, &'a Filesystem)> {
    hc.storage
        .filesystems
        .iter()
        .enumerate()
        .find(|(_, f)| f.mount_point.path() == path)
}

/// Checks `storage.verity` as upstream does.
pub fn validate(hc: &HostConfiguration) -> Result<(), TridentError> {
    let storage = &hc.storage;
    let Some(verity) = storage.verity.first() else {
        return Ok(());
    };
    if storage.verity.len() > 1 {
        return Err(invalid(
            "storage.verity",
            "at most one verity device is supported (for / or /usr)",
        ));
    }
    let Some((i, fs)) = storage
        .filesystems
        .iter()
        .enumerate()
        .find(|(_, f)| f.device_id == verity.id)
    else {
        return Err(invalid(
            "storage.verity[0].id",
            format!("no filesystem is on verity device '{}'", verity.id),
        ));
    };
    let mount_point = &fs.mount_point;
    if !is_read_only(mount_point.options()) {
        return Err(invalid(
            &format!("storage.filesystems[{i}].mountPoint.options"),
            format!(
                "the filesystem on verity device '{}' must be mounted read-only ('ro')",
                verity.id
            ),
        ));
    }
    match mount_point.path() {
        "/" => validate_root(hc, &verity.name, &verity.data_device_id),
        "/usr" => check_name(&verity.name, USR_VERITY_NAME),
        other => Err(invalid(
            &format!("storage.filesystems[{i}].mountPoint.path"),
            format!("verity protects / or /usr, not '{other}'"),
        )),
    }
}

fn check_name(name: &str, expected: &str) -> Result<(), TridentError> {
    if name == expected {
        return Ok(());
    }
    Err(invalid(
        "storage.verity[0].name",
        format!("'{name}' must be '{expected}' (the name the initrd opens the device by)"),
    ))
}

fn validate_root(hc: &HostConfiguration, name: &str, data_id: &str) -> Result<(), TridentError> {
    if mounted_at(hc, "/boot").is_none() {
        return Err(invalid(
            "storage.filesystems",
            "a verity root needs a separate /boot filesystem \
             (the kernel command line is updated there)",
        ));
    }
    let Some((i, overlay)) = mounted_at(hc, ETC_OVERLAY_MOUNT_POINT) else {
        return Err(invalid(
            "storage.filesystems",
            format!(
                "a verity root needs a filesystem at {ETC_OVERLAY_MOUNT_POINT} \
                 (it backs the writable /etc overlay)"
            ),
        ));
    };
    if let Some(ab) = &hc.storage.ab_update
        && !ab.volume_pairs.iter().any(|p| p.id == overlay.device_id)
    {
        return Err(invalid(
            &format!("storage.filesystems[{i}].deviceId"),
            format!(
                "{ETC_OVERLAY_MOUNT_POINT} must be on an A/B volume pair when the host has \
                 abUpdate ('{}' is not one)",
                overlay.device_id
            ),
        ));
    }
    if is_read_only(overlay.mount_point.options()) {
        return Err(invalid(
            &format!("storage.filesystems[{i}].mountPoint.options"),
            format!("{ETC_OVERLAY_MOUNT_POINT} backs the writable /etc overlay: not 'ro'"),
        ));
    }
    if overlay.device_id == data_id {
        return Err(invalid(
            &format!("storage.filesystems[{i}].deviceId"),
            format!("{ETC_OVERLAY_MOUNT_POINT} must not be on the verity data device '{data_id}'"),
        ));
    }
    check_name(name, ROOT_VERITY_NAME)
}
