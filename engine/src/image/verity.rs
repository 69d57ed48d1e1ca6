//! The image's side of a verity filesystem, checked before anything is
//! written: every filesystem the Host Configuration puts on a verity
//! device must come with its hash tree as a region of the image's disk
//! (Image Customizer's layout: the tree is a partition), the tree must fit
//! the hash device, and its root hash is what boot control hands the
//! kernel. Its filesystem's blocks must be at least dm-verity's data
//! blocks, which only the image's bytes tell (`verity_blocks`).

use std::collections::BTreeMap;

use trident_cosi::metadata::Metadata;
use trident_host::{Subkind, TridentError};

use crate::block_device::ResolvedDevice;

#[track_caller]
fn mismatch(message: String) -> TridentError {
    TridentError::new(Subkind::ImageDoesNotMatchConfiguration, message)
}

/// Checks the image's hash tree of each mount point in `hash_trees`;
/// returns mount point → root hash.
pub fn check_hash_trees(
    metadata: &Metadata,
    hash_trees: &BTreeMap<String, ResolvedDevice>,
) -> Result<BTreeMap<String, String>, TridentError> {
    let mut root_hashes = BTreeMap::new();
    for (mount_point, device) in hash_trees {
        let Some(verity) = metadata
            .filesystem_by_mount_point(mount_point)
            .and_then(|fs| fs.verity.as_ref())
        else {
            return Err(mismatch(format!(
                "The Host Configuration puts '{mount_point}' on a verity device, \
                 but the image's '{mount_point}' filesystem has no verity hash tree"
            )));
        };
        let is_region = metadata
            .disk
            .as_ref()
            .is_some_and(|d| d.gpt_regions.iter().any(|r| r.image == verity.image));
        if !is_region {
            return Err(mismatch(format!(
                "The hash tree of '{mount_point}' ({}) is not a partition of the image's \
                 disk (disk.gptRegions): this daemon streams only the disk's regions",
                verity.image.path
            )));
        }
        let size = device.extent().size;
        if verity.image.uncompressed_size > size {
            return Err(mismatch(format!(
                "The hash tree of '{mount_point}' ({} bytes) does not fit hash device '{}' \
                 ({size} bytes)",
                verity.image.uncompressed_size,
                device.id()
            )));
        }
        root_hashes.insert(mount_point.clone(), verity.roothash.clone());
    }
    Ok(root_hashes)
}

/// The bytes of the hash trees written into `hash_trees`.
pub fn tree_bytes(metadata: &Metadata, hash_trees: &BTreeMap<String, ResolvedDevice>) -> u64 {
    hash_trees
        .keys()
        .filter_map(|mp| metadata.filesystem_by_mount_point(mp)?.verity.as_ref())
        .map(|v| v.image.uncompressed_size)
        .sum()
}
