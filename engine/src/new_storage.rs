//! Storage the image does not carry: filesystems with `source: new` are
//! created (`mkfs.ext4`, `mkfs.xfs`, `mkfs.vfat`) on their partitions and
//! `storage.swap` partitions formatted (`mkswap`), after the images are
//! written and before the new root is mounted, so the new filesystems are
//! mounted in it and its fstab names them. Each runs on a loop device over
//! the device's byte range (disk-image files and block devices alike), as
//! the block-device stack resolves it.

use std::collections::BTreeMap;

use trident_host::config::{FileSystemType, FilesystemSource, HostConfiguration};
use trident_host::status::AbVolume;
use trident_host::{ContextExt, Subkind, TridentError};

use super::block_device::{BlockDevices, ResolvedDevice};
use super::new_root::tools::{LoopDevice, run_tool};

/// The targets whose content comes from the image (`targets` minus the
/// filesystems created here).
pub fn image_targets(
    hc: &HostConfiguration,
    targets: &BTreeMap<String, ResolvedDevice>,
) -> BTreeMap<String, ResolvedDevice> {
    targets
        .iter()
        .filter(|(mount_point, _)| new_filesystem_type(hc, mount_point).is_none())
        .map(|(m, t)| (m.clone(), t.clone()))
        .collect()
}

/// The type of the `source: new` filesystem mounted at `mount_point`.
fn new_filesystem_type(hc: &HostConfiguration, mount_point: &str) -> Option<FileSystemType> {
    hc.storage
        .filesystems
        .iter()
        .find(|f| f.mount_point.path() == mount_point)
        .filter(|f| f.effective_source() == FilesystemSource::New)
        .and_then(|f| f.fs_type)
}

/// The mkfs command line for `fs_type` (validation admits only these).
fn mkfs_command(fs_type: FileSystemType) -> Option<(&'static str, &'static [&'static str])> {
    match fs_type {
        FileSystemType::Ext4 => Some(("mkfs.ext4", &["-q", "-F"])),
        FileSystemType::Xfs => Some(("mkfs.xfs", &["-q", "-f"])),
        FileSystemType::Vfat => Some(("mkfs.vfat", &[])),
        FileSystemType::Ntfs | FileSystemType::Tmpfs | FileSystemType::Auto => None,
    }
}

/// Creates every `source: new` filesystem of `targets`, and formats the
/// swap partitions when `format_swap` (install: an A/B update leaves them
/// alone). Blocking.
pub fn create(
    hc: &HostConfiguration,
    devices: &BlockDevices,
    targets: &BTreeMap<String, ResolvedDevice>,
    format_swap: bool,
) -> Result<(), TridentError> {
    for (mount_point, target) in targets {
        let Some(fs_type) = new_filesystem_type(hc, mount_point) else {
            continue;
        };
        let Some((program, flags)) = mkfs_command(fs_type) else {
            return Err(TridentError::new(
                Subkind::InvalidHostConfiguration,
                format!("'{mount_point}': cannot create a {fs_type:?} filesystem"),
            ));
        };
        format_device(target, program, flags)
            .with_context(|| format!("Creating the filesystem of '{mount_point}'"))?;
        tracing::info!(mount_point, partition = %target.id(), program, "filesystem created");
    }
    if !format_swap {
        return Ok(());
    }
    for (i, swap) in hc.storage.swap.iter().enumerate() {
        // Swap sits on no A/B pair (the graph's rules): the volume is moot.
        let device = devices
            .device_of(&swap.device_id, AbVolume::VolumeA)
            .map_err(|e| e.at(&format!("Host Configuration key 'storage.swap[{i}]'")))?;
        format_device(&device, "mkswap", &["-q"])
            .with_context(|| format!("Formatting swap partition '{}'", swap.device_id))?;
        tracing::info!(partition = %swap.device_id, "swap formatted");
    }
    Ok(())
}

fn format_device(
    target: &ResolvedDevice,
    program: &str,
    flags: &[&str],
) -> Result<(), TridentError> {
    let extent = target.extent();
    let device = LoopDevice::attach(extent.backing, extent.offset, extent.size)?;
    let path = device.path_str();
    let mut args = flags.to_vec();
    args.push(&path);
    run_tool(program, &args, Subkind::WriteImage)?;
    Ok(())
}
