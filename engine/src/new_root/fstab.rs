//! `/etc/fstab` of the new root, from the Host Configuration's
//! filesystems: each by what it lands on for the serviced volume (the
//! block-device stack resolves its `deviceId`): a partition by PARTUUID,
//! a RAID array by `/dev/md/<name>`, an encrypted volume by its mapping
//! (`/dev/mapper/<deviceName>`), one on a verity device by its
//! `/dev/mapper/<name>`, with `mountPoint.options`; then `storage.swap`.

use std::path::Path;

use trident_host::config::FileSystemType;
use trident_host::{ResultExt, Subkind, TridentError};

use super::probe::probe_device;
use super::volume::VolumeRoot;
use crate::block_device::ResolvedDevice;

/// The device `device_id` (named at `key`) lands on, and how fstab
/// names it.
fn source(
    root: &VolumeRoot<'_>,
    key: &str,
    device_id: &str,
) -> Result<(ResolvedDevice, String), TridentError> {
    let device = root
        .devices
        .device_of(device_id, root.volume)
        .map_err(|e| TridentError::new(Subkind::ConfigureNewRoot, format!("{key}: {e}")))?;
    match root.source_of(&device) {
        Some(source) => Ok((device, source)),
        None => Err(TridentError::new(
            Subkind::ConfigureNewRoot,
            format!("{key}: partition '{}' is not on disk", device.id()),
        )),
    }
}

/// Renders the fstab text (no I/O except probing filesystem types that the
/// configuration leaves open).
pub fn render(root: &VolumeRoot<'_>) -> Result<String, TridentError> {
    let mut out = String::from(
        "# Written by Trident from the Host Configuration (storage.filesystems).\n\
         # <file system> <mount point> <type> <options> <dump> <pass>\n",
    );
    for (i, fs) in root.hc.storage.filesystems.iter().enumerate() {
        if fs.mount_point.is_none() {
            continue;
        }
        let key = format!("storage.filesystems[{i}]");
        let (device, source) = source(root, &key, &fs.device_id)?;
        let fs_type = match fs.fs_type {
            Some(FileSystemType::Ext4) => "ext4",
            Some(FileSystemType::Xfs) => "xfs",
            Some(FileSystemType::Vfat) => "vfat",
            Some(FileSystemType::Ntfs) => "ntfs",
            Some(FileSystemType::Tmpfs) => "tmpfs",
            Some(FileSystemType::Auto) | None => {
                probe_device(&device).map(|k| k.as_str()).unwrap_or("auto")
            }
        };
        let path = fs.mount_point.path();
        let options = fs.mount_point.options().unwrap_or("defaults");
        let pass = if path == "/" { 1 } else { 2 };
        // A filesystem on a verity device is mounted from the device the
        // initrd opened (`/dev/mapper/<name>`), never from its data.
        let source = match root.hc.storage.verity.iter().find(|v| v.id == fs.device_id) {
            Some(verity) => format!("/dev/mapper/{}", verity.name),
            None => source,
        };
        out.push_str(&format!("{source} {path} {fs_type} {options} 0 {pass}\n"));
    }
    for (i, swap) in root.hc.storage.swap.iter().enumerate() {
        let (_, source) = source(root, &format!("storage.swap[{i}]"), &swap.device_id)?;
        out.push_str(&format!("{source} none swap defaults 0 0\n"));
    }
    Ok(out)
}

/// Configure step: writes NEW_ROOT/etc/fstab (replacing the image's),
/// resolved inside the new root.
pub fn write_fstab(root: &VolumeRoot<'_>) -> Result<(), TridentError> {
    let text = render(root)?;
    root.dir
        .write_file(Path::new("/etc/fstab"), text.as_bytes(), 0o644)
        .structured_msg(Subkind::ConfigureNewRoot, "Cannot write /etc/fstab")
}
