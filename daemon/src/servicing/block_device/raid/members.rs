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
/// How long the kernel may take to show a reread partition.
const NODE_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `device` (a disk of the Host Configuration) is a block device:
/// md arrays need real partitions, a disk-image file has none.
pub fn is_block_device(device: &str) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(device).is_ok_and(|m| m.file_type().is_block_device())
}

/// Zeroes the first and last [`WIPE_BYTES`] of `layout`'s byte range.
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

/// Asks the kernel to reread the partition table of `device`.
pub fn reread_partition_table(device: &str, subkind: Subkind) -> Result<(), TridentError> {
    let output = Command::new("blockdev")
        .args(["--rereadpt", device])
        .output()
        .structured_msg(subkind, "Cannot run blockdev (util-linux)")?;
    if !output.status.success() {
        return Err(TridentError::new(
            subkind,
            format!(
                "The kernel did not reread the partition table of {device} (a partition of it is in use?): {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        ));
    }
    Ok(())
}

/// The device node of partition `layout` (`/dev/vda2`), waiting for the
/// kernel to show it.
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
        if let Some(name) = sysfs::partition_name(sys, &disk, layout.number) {
            let node = Path::new("/dev").join(&name);
            if node.exists() {
                return Ok(node);
            }
        }
        if Instant::now() > deadline {
            return Err(TridentError::new(
                subkind,
                format!(
                    "Partition {} of {} did not appear within {NODE_TIMEOUT:?}",
                    layout.number, layout.device
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
