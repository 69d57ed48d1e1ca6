//! The partition the running root filesystem is on, read from the running
//! system: `/proc/self/mountinfo` gives the root's device number, sysfs
//! its disk and partition number. And when the running kernel booted
//! (`/proc/stat`), to tell a host that rebooted from one that has not yet.

use std::path::{Path, PathBuf};

use trident_host::{ResultExt, Subkind, TridentError};

/// A partition of a block device: `/dev/<disk>` and its 1-based number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockPartition {
    pub disk: PathBuf,
    pub number: u32,
}

/// `major:minor` of the filesystem mounted at `/` in a mountinfo text.
pub fn root_device_number(mountinfo: &str) -> Option<String> {
    // Fields: id parent major:minor root mount-point ...; the last "/" wins
    // (an overmount).
    mountinfo.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(4) == Some(&"/")).then(|| fields.get(2).map(|s| (*s).to_owned()))?
    })
}

/// The partition behind device number `dev` (`major:minor`), from sysfs
/// (`/sys/dev/block/M:m` links to `.../<disk>/<partition>`).
pub fn partition_of_device(sys: &Path, dev: &str) -> Result<Option<BlockPartition>, TridentError> {
    let link = sys.join("dev/block").join(dev);
    let Ok(number) = std::fs::read_to_string(link.join("partition")) else {
        return Ok(None); // not a partition (overlay, tmpfs, whole disk)
    };
    let number: u32 = number
        .trim()
        .parse()
        .structured_msg(Subkind::BootControl, "sysfs partition number")?;
    let real = std::fs::canonicalize(&link).structured(Subkind::BootControl)?;
    let disk = real
        .parent()
        .and_then(Path::file_name)
        .map(|name| Path::new("/dev").join(name))
        .ok_or_else(|| TridentError::new(Subkind::BootControl, "sysfs partition has no disk"))?;
    Ok(Some(BlockPartition { disk, number }))
}

/// The running root's partition (`None`: the root is no partition).
pub fn root_partition() -> Result<Option<BlockPartition>, TridentError> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .structured_msg(Subkind::BootControl, "Cannot read /proc/self/mountinfo")?;
    let Some(dev) = root_device_number(&mountinfo) else {
        return Ok(None);
    };
    partition_of_device(Path::new("/sys"), &dev)
}

/// The md array the running root is on (`/dev/md127`), if it is one
/// (`/sys/dev/block/M:m/md` exists).
pub fn root_md_array() -> Result<Option<PathBuf>, TridentError> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .structured_msg(Subkind::BootControl, "Cannot read /proc/self/mountinfo")?;
    let Some(dev) = root_device_number(&mountinfo) else {
        return Ok(None);
    };
    Ok(md_array_of_device(Path::new("/sys"), &dev))
}

/// `/dev/<md>` of device number `dev` if it is an md array.
pub fn md_array_of_device(sys: &Path, dev: &str) -> Option<PathBuf> {
    let link = sys.join("dev/block").join(dev);
    if !link.join("md").is_dir() {
        return None;
    }
    let real = std::fs::canonicalize(&link).ok()?;
    Some(Path::new("/dev").join(real.file_name()?))
}

/// Whether device number `dev` is mounted somewhere; where.
pub fn mount_point_of(mountinfo: &str, dev: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(2) == Some(&dev) && fields.get(3) == Some(&"/"))
            .then(|| fields.get(4).map(PathBuf::from))?
    })
}

/// When the running kernel booted: `btime` (seconds since the epoch) of
/// a `/proc/stat` text.
pub fn boot_time(proc_stat: &str) -> Option<std::time::SystemTime> {
    let seconds: u64 = proc_stat
        .lines()
        .find_map(|line| line.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 1 254:2 / / rw,relatime shared:1 - ext4 /dev/vda2 rw
23 22 0:5 / /dev rw shared:2 - devtmpfs udev rw
30 22 254:1 / /boot/efi rw shared:9 - vfat /dev/vda1 rw,umask=0077
";

    #[test]
    fn the_boot_time_is_procs_btime() {
        let stat = "cpu  1 2 3\nintr 5\nbtime 1764201600\nprocesses 7\n";
        assert_eq!(
            boot_time(stat),
            Some(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_764_201_600))
        );
        assert_eq!(boot_time("cpu 1 2 3\n"), None);
        // This machine's own is in the past.
        let own = std::fs::read_to_string("/proc/stat").unwrap();
        assert!(boot_time(&own).unwrap() < std::time::SystemTime::now());
    }

    #[test]
    fn root_and_esp_are_found_by_device_number() {
        assert_eq!(root_device_number(MOUNTINFO).as_deref(), Some("254:2"));
        assert_eq!(
            mount_point_of(MOUNTINFO, "254:1"),
            Some(PathBuf::from("/boot/efi"))
        );
        assert_eq!(mount_point_of(MOUNTINFO, "254:3"), None);
    }

    #[test]
    fn sysfs_names_the_disk_and_partition_number() {
        let sys = std::env::temp_dir().join(format!("sysfs-{}", uuid::Uuid::new_v4()));
        let part = sys.join("devices/pci0/virtio1/block/vda/vda2");
        std::fs::create_dir_all(&part).unwrap();
        std::fs::write(part.join("partition"), "2\n").unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&part, sys.join("dev/block/254:2")).unwrap();
        assert_eq!(
            partition_of_device(&sys, "254:2").unwrap(),
            Some(BlockPartition {
                disk: PathBuf::from("/dev/vda"),
                number: 2
            })
        );
        assert_eq!(partition_of_device(&sys, "0:5").unwrap(), None);
        std::fs::remove_dir_all(sys).unwrap();
    }
}
