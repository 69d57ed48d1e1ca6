//! Where an image goes: a partition of the layout. A leaf: the engine,
//! the new root and new storage all name it.

use trident_host::status::PartitionLayout;

/// Sector size of the GPTs we create.
pub const LBA_SIZE: u64 = 512;

/// Where the image of one filesystem goes.
#[derive(Debug, Clone)]
pub struct WriteTarget {
    pub partition_id: String,
    pub layout: PartitionLayout,
}
