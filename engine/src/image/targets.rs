//! Where an image is written, and which local volumes an adaptive update
//! may copy from: plain data shared by `write` and `adaptive`, in a leaf
//! module so that neither names the other.

use std::collections::BTreeMap;

use crate::block_device::ResolvedDevice;

/// Where `write_image` writes: mount point → the device its filesystem
/// image goes into, and, for a filesystem on a verity device, mount point
/// → the device its hash tree goes into.
#[derive(Debug, Clone, Copy)]
pub struct ImageTargets<'a> {
    pub filesystems: &'a BTreeMap<String, ResolvedDevice>,
    pub hash_trees: &'a BTreeMap<String, ResolvedDevice>,
}

/// The active volume's devices of an A/B update (mount point → device,
/// as [`ImageTargets`]), whose blocks an indexed image's chunks are
/// copied from instead of fetched.
#[derive(Debug, Clone)]
pub struct LocalVolumes {
    pub filesystems: BTreeMap<String, ResolvedDevice>,
    pub hash_trees: BTreeMap<String, ResolvedDevice>,
}
