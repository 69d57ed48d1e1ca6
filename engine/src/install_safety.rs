//! The clean-install safety check (upstream's `clean_install_safety_check`):
//! a clean install repartitions its disks, so one onto the disk that holds
//! the running OS's root filesystem is refused, naming the disk, unless the
//! daemon runs from installer media (upstream's test of the kernel command
//! line: `root=/dev/ram0`, no `root=` at all, or `root=live:`) or the
//! operator said so (`--allow-install-on-running-disk`).
//!
//! Unlike upstream, which refuses any clean install from an installed OS
//! (short of its multiboot options), this refuses only the disk of the
//! running root: an installer booted from its own disk (the VM scenario's
//! installer media, a USB stick) may install onto another disk.

use std::collections::BTreeSet;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use trident_host::{Subkind, TridentError};

use super::settings::InstallSafety;

/// A block device number, `major:minor`.
type DevNum = (u64, u64);

/// How deep stacked devices (dm, md, loop partitions) are followed down to
/// their disks.
const MAX_STACK_DEPTH: usize = 8;

/// Refuses a clean install onto `disks` (`(id, device path)`) when one of
/// them holds the running root, unless exempt.
pub fn check(safety: &InstallSafety, disks: &[(String, String)]) -> Result<(), TridentError> {
    if safety.allow_running_disk {
        tracing::warn!("clean-install safety check disabled (--allow-install-on-running-disk)");
        return Ok(());
    }
    let cmdline = std::fs::read_to_string(&safety.cmdline).unwrap_or_default();
    if let Some(media) = installer_media(&cmdline) {
        tracing::info!(
            media,
            "running from installer media: any disk may be installed onto"
        );
        return Ok(());
    }
    let Some((root_source, root_disks)) = root_disks(&safety.mountinfo, &safety.sysfs) else {
        tracing::info!("the running root is on no block device: no disk holds it");
        return Ok(());
    };
    for (id, device) in disks {
        let Some(target) = block_device_number(Path::new(device)) else {
            // A disk-image file (or a path that does not exist yet) is
            // never the running root's disk.
            continue;
        };
        let target_disks = whole_disks(&safety.sysfs, target, 0);
        if target_disks.iter().any(|d| root_disks.contains(d)) {
            return Err(TridentError::new(
                Subkind::CleanInstallSafetyCheck,
                format!(
                    "Refusing a clean install onto disk '{id}' ({device}): it holds the running OS's root filesystem (/ is {root_source}). Install from installer media, or start tridentd with --allow-install-on-running-disk"
                ),
            ));
        }
    }
    Ok(())
}

/// Upstream's installer-media test of the kernel command line: a RAM disk
/// (`root=/dev/ram0`, or no `root=` at all) or live media (`root=live:`).
fn installer_media(cmdline: &str) -> Option<&'static str> {
    let roots: Vec<&str> = cmdline
        .split_whitespace()
        .filter_map(|arg| arg.strip_prefix("root="))
        .collect();
    match roots.last() {
        None if !cmdline.trim().is_empty() => Some("ram disk (no root=)"),
        None => None,
        Some(&"/dev/ram0") => Some("ram disk (root=/dev/ram0)"),
        Some(root) if root.starts_with("live:") => Some("live media (root=live:)"),
        Some(_) => None,
    }
}

/// The root's source (as mountinfo says) and the whole disks under it;
/// `None` when `/` is on no block device (tmpfs, overlay, NFS...).
fn root_disks(mountinfo: &Path, sysfs: &Path) -> Option<(String, BTreeSet<DevNum>)> {
    let text = std::fs::read_to_string(mountinfo).ok()?;
    // The last "/" mount is the visible one (later mounts cover earlier).
    let line = text
        .lines()
        .rfind(|l| l.split_whitespace().nth(4) == Some("/"))?;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let source = line
        .split(" - ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().nth(1))
        .unwrap_or_default();
    // The source device when it is one (btrfs reports an anonymous 0:N
    // number), else the mount's own device number.
    let devnum = block_device_number(Path::new(source)).or_else(|| {
        let (major, minor) = fields.get(2)?.split_once(':')?;
        let devnum = (major.parse().ok()?, minor.parse().ok()?);
        (devnum.0 != 0).then_some(devnum)
    })?;
    let disks = whole_disks(sysfs, devnum, 0);
    (!disks.is_empty()).then(|| (source.to_owned(), disks))
}

/// The device number of `path` if it is a block device.
fn block_device_number(path: &Path) -> Option<DevNum> {
    if !path.starts_with("/dev") {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    if !meta.file_type().is_block_device() {
        return None;
    }
    let rdev = meta.rdev();
    Some((nix::sys::stat::major(rdev), nix::sys::stat::minor(rdev)))
}

/// The whole disks under `devnum`: its own disk for a partition, the disks
/// of its slaves for a stacked device (dm, md), itself for a disk.
fn whole_disks(sysfs: &Path, devnum: DevNum, depth: usize) -> BTreeSet<DevNum> {
    let mut disks = BTreeSet::new();
    let dir = sysfs.join(format!("dev/block/{}:{}", devnum.0, devnum.1));
    let Ok(dir) = std::fs::canonicalize(&dir) else {
        // No sysfs entry: take the number as the disk itself.
        disks.insert(devnum);
        return disks;
    };
    let slaves: Vec<PathBuf> = std::fs::read_dir(dir.join("slaves"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    if !slaves.is_empty() && depth < MAX_STACK_DEPTH {
        for slave in slaves {
            if let Some(slave_num) = read_devnum(&slave.join("dev")) {
                disks.extend(whole_disks(sysfs, slave_num, depth + 1));
            }
        }
        return disks;
    }
    let disk_dir = if dir.join("partition").exists() {
        dir.parent().map(Path::to_path_buf).unwrap_or(dir)
    } else {
        dir
    };
    disks.insert(read_devnum(&disk_dir.join("dev")).unwrap_or(devnum));
    disks
}

/// A sysfs `dev` file: `major:minor`.
fn read_devnum(path: &Path) -> Option<DevNum> {
    let text = std::fs::read_to_string(path).ok()?;
    let (major, minor) = text.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installer_media_follows_upstreams_command_line_test() {
        assert!(installer_media("BOOT_IMAGE=/vmlinuz root=/dev/ram0 quiet").is_some());
        assert!(installer_media("BOOT_IMAGE=/vmlinuz quiet").is_some());
        assert!(installer_media("root=live:CDLABEL=installer rd.live.image").is_some());
        assert!(installer_media("root=PARTUUID=1234 ro").is_none());
        assert!(installer_media("root=/dev/sda2 ro").is_none());
        assert!(
            installer_media("").is_none(),
            "unreadable: not installer media"
        );
    }
}
