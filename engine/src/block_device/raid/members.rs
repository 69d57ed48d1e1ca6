//! The member partitions of arrays as the kernel sees them. The partition
//! layer writes GPTs as bytes (no kernel involved); `mdadm` needs device
//! nodes, so the disks that hold members get their partition table reread
//! (`blockdev --rereadpt`) and each member is found by disk and entry
//! number in sysfs. Before the reread, the first and last MiB of each
//! member's byte range are zeroed: an earlier install's RAID superblock
//! (metadata 1.0 sits at the end) or filesystem would otherwise be
//! assembled again by udev the moment the partition appears, or make
//! `mdadm --create` ask whether to go on.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use trident_host::status::PartitionLayout;
use trident_host::{ResultExt, Subkind, TridentError};

use super::sysfs;

/// Bytes zeroed at each end of a member before it is shown to the kernel.
const WIPE_BYTES: u64 = 1 << 20;
/// Rereads asked before leaving it to udev's.
const REREAD_ATTEMPTS: u32 = 6;
/// How long the kernel may take to show a reread partition.
const NODE_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `device` (a disk of the Host Configuration) is a block device:
/// md arrays need real partitions, a disk-image file has none.
pub fn is_block_device(device: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(device).is_ok_and(|m| m.file_type().is_block_device())
}

/// Zeroes the first and last `WIPE_BYTES` of `layout`'s byte range.
pub fn wipe_signatures(layout: &PartitionLayout) -> Result<(), TridentError> {
    let file = OpenOptions::new()
        .write(true)
        .open(&layout.device)
        .structured_msg(
            Subkind::CreateRaid,
            format!("Cannot open {}", layout.device),
        )?;
    let len = WIPE_BYTES.min(layout.size);
    let zeros = vec![0u8; len as usize];
    for at in [layout.offset, layout.offset + layout.size - len] {
        file.write_all_at(&zeros, at).structured_msg(
            Subkind::CreateRaid,
            format!("Cannot clear old signatures on {}", layout.path()),
        )?;
    }
    file.sync_all().structured(Subkind::CreateRaid)
}

/// Asks the kernel to reread the partition table of `device`. udev does
/// the same on its own when a writer of the disk closes it, and the
/// kernel refuses a second reread while one runs (EBUSY): retried a few
/// times, then left to [`node_of`], which waits until the kernel shows
/// each partition where the new table puts it.
pub fn reread_partition_table(device: &str, subkind: Subkind) -> Result<(), TridentError> {
    let mut last = String::new();
    for attempt in 1..=REREAD_ATTEMPTS {
        let output = Command::new("blockdev")
            .args(["--rereadpt", device])
            .output()
            .structured_msg(subkind, "Cannot run blockdev (util-linux)")?;
        if output.status.success() {
            return Ok(());
        }
        last = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        tracing::debug!(%device, attempt, error = %last, "partition table reread refused");
        std::thread::sleep(Duration::from_millis(500));
    }
    tracing::warn!(%device, error = %last,
        "the kernel refused to reread the partition table (udev may be rereading it): waiting for the partitions to show");
    Ok(())
}

/// Waits until udev has handled every queued event (`udevadm settle`).
/// Rereading a partition table removes and adds its partitions; udev
/// handles the removal of a partition that holds an md superblock with
/// `mdadm --incremental --fail`, so an event still queued when an array
/// is created over the new partition would fail its member out of it.
pub fn settle_udev() {
    match Command::new("udevadm")
        .args(["settle", "--timeout=120"])
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => tracing::warn!(error = %String::from_utf8_lossy(&out.stderr).trim(),
            "udevadm settle did not finish"),
        Err(error) => tracing::debug!(%error, "no udevadm: nothing to wait for"),
    }
}

/// The device node of partition `layout` (`/dev/vda2`), waiting for the
/// kernel to show it at the recorded byte range (a partition of the old
/// table under the same number is not it).
pub fn node_of(
    sys: &Path,
    layout: &PartitionLayout,
    subkind: Subkind,
) -> Result<PathBuf, TridentError> {
    let disk = sysfs::kernel_name(Path::new(&layout.device)).ok_or_else(|| {
        TridentError::new(subkind, format!("Cannot resolve disk {}", layout.device))
    })?;
    let deadline = Instant::now() + NODE_TIMEOUT;
    loop {
        if let Some(name) = sysfs::partition_name(sys, &disk, layout.number)
            && sysfs::partition_range(sys, &name) == Some((layout.offset, layout.size))
        {
            let node = Path::new("/dev").join(&name);
            if node.exists() {
                return Ok(node);
            }
        }
        if Instant::now() > deadline {
            return Err(TridentError::new(
                subkind,
                format!(
                    "Partition {} of {} did not appear at bytes {}+{} within {NODE_TIMEOUT:?} (the kernel did not reread the partition table: is a partition of the disk in use?)",
                    layout.number, layout.device, layout.offset, layout.size
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
