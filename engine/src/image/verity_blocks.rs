//! The block size of a verity filesystem, checked before anything is
//! written: dm-verity maps its data device in 4 KiB blocks (the verity
//! device's logical block size), so an image's ext filesystem with smaller
//! blocks (what mke2fs picks for an image under 512 MiB) installs and then
//! cannot be mounted at boot. Only the image's bytes tell the block size:
//! its superblock, in the first 2 KiB of the filesystem's region.

use trident_cosi::{CosiSource, ExpectedHash, SourceOptions};
use trident_host::config::HostConfiguration;
use trident_host::{Subkind, TridentError};

use super::cosi_error::CosiResultExt;
use crate::new_root::probe;

/// dm-verity's data block size for the trees this daemon installs
/// (`veritysetup format`'s default, which Image Customizer and `mkcosi`
/// use).
pub const VERITY_DATA_BLOCK_SIZE: u64 = 4096;

/// A filesystem the Host Configuration puts on a verity device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerityFilesystem {
    pub mount_point: String,
    /// The verity device's id.
    pub device_id: String,
    /// Its Host Configuration key path (`storage.verity[0]`).
    pub key: String,
}

/// The filesystems `hc` mounts from a verity device.
pub fn verity_filesystems(hc: &HostConfiguration) -> Vec<VerityFilesystem> {
    hc.storage
        .verity
        .iter()
        .enumerate()
        .flat_map(|(i, verity)| {
            hc.storage
                .filesystems
                .iter()
                .filter(move |fs| fs.device_id == verity.id && !fs.mount_point.is_none())
                .map(move |fs| VerityFilesystem {
                    mount_point: fs.mount_point.path().to_owned(),
                    device_id: verity.id.clone(),
                    key: format!("storage.verity[{i}]"),
                })
        })
        .collect()
}

/// Bytes of a filesystem image that hold its superblock.
const SUPERBLOCK_HEAD: usize = 2048;

/// Refuses, before anything is written, an image whose filesystem for a
/// verity device in `filesystems` has ext blocks smaller than
/// [`VERITY_DATA_BLOCK_SIZE`]: it would install, then fail to mount at
/// boot. The archive is read front to back, so this reads (and
/// hash-checks) the regions before each such filesystem's and the first
/// 2 KiB of it, then stops: those 2 KiB are not hash-checked here (that
/// takes the whole region); the write step checks every byte it writes.
/// Filesystems the image lacks are left to the write step's checks.
/// Blocking.
pub fn check_block_sizes(
    url: &str,
    sha384: &str,
    sources: &SourceOptions,
    filesystems: &[VerityFilesystem],
) -> Result<(), TridentError> {
    if filesystems.is_empty() {
        return Ok(());
    }
    let expected = ExpectedHash::parse(sha384).cosi()?;
    let mut source = CosiSource::open(url, &expected, sources).cosi()?;
    check_source_block_sizes(&mut source, filesystems)
}

/// [`check_block_sizes`] on an image already opened: reads it from where
/// it stands (its first region) up to the last verity filesystem's
/// superblock.
pub fn check_source_block_sizes(
    source: &mut CosiSource,
    filesystems: &[VerityFilesystem],
) -> Result<(), TridentError> {
    let mut left: Vec<&VerityFilesystem> = filesystems.iter().collect();
    while !left.is_empty() {
        let Some(mut region) = source.next_region().cosi()? else {
            break;
        };
        let Some(at) = left
            .iter()
            .position(|fs| region.info().mount_point.as_deref() == Some(fs.mount_point.as_str()))
        else {
            continue;
        };
        let fs = left.swap_remove(at);
        let mut head = vec![0u8; SUPERBLOCK_HEAD];
        let mut filled = 0;
        while filled < head.len() {
            match region.read_chunk(&mut head[filled..]).cosi()? {
                0 => break,
                n => filled += n,
            }
        }
        let Some(block_size) = probe::ext_block_size(&head[..filled]) else {
            continue; // not ext2/3/4: its block size is not read here
        };
        tracing::debug!(mount_point = %fs.mount_point, block_size, "verity filesystem block size");
        if block_size < VERITY_DATA_BLOCK_SIZE {
            return Err(TridentError::new(
                Subkind::ImageDoesNotMatchConfiguration,
                format!(
                    "Host Configuration key '{}' (verity device '{}'): the image's '{}' filesystem \
                 has {block_size}-byte ext4 blocks, but a filesystem on a verity device needs \
                 blocks of at least {VERITY_DATA_BLOCK_SIZE} bytes (dm-verity's data block \
                 size; smaller ones cannot be mounted from it): rebuild the image with \
                 `mkfs.ext4 -b {VERITY_DATA_BLOCK_SIZE}`",
                    fs.key, fs.device_id, fs.mount_point
                ),
            ));
        }
    }
    Ok(())
}
