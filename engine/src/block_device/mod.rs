//! The block-device stack of the servicing engine: the storage of a Host
//! Configuration as upstream models it (`trident_host::config::
//! storage_graph`: disks → partitions → RAID arrays → encrypted volumes →
//! verity devices → filesystems, A/B volume pairs over any of them), with
//! one layer per kind of device that the engine creates and reaches.
//!
//! Each layer ([`BlockDeviceLayer`]) has the same shape: *create* at
//! install (and record what it made in the Host Status), *open* at update
//! (make the recorded devices reachable), *close* before an install
//! re-creates the storage, and *resolve* one of its devices to where the
//! engine reads and writes it ([`ResolvedDevice`]). [`LAYERS`] lists them
//! bottom-up: partitions ([`partition`], which also keeps adopted
//! partitions: [`adoption`]), then software RAID arrays over them
//! ([`raid`], which also repairs a host after a disk was replaced:
//! [`raid::rebuild`]), then LUKS2 volumes sealed to the TPM 2.0 over
//! partitions or arrays ([`encryption`]). Verity devices resolve to their
//! data device, their hash trees to their hash device (`verity`: nothing
//! to create, the kernel opens them). Verity is refused by validation
//! (`trident_host::config::unsupported`) before any layer runs, and land
//! as modules beside them with their issues.
//!
//! A host upstream Trident installed has its partitions named by partition
//! UUID and no layout of ours: [`partuuid`] finds them on the disks.
//!
//! Image writing, new storage, mounting, fstab, boot control and the
//! datastore handoff never compute where a device is: they ask
//! [`BlockDevices::device_of`] for "the device of id X on this host" (for
//! an A/B volume pair, its member of the serviced volume).
//!
//! A leaf of the servicing tree: it names no other servicing module.

pub mod adoption;
mod disk_guids;
pub mod encryption;
mod layer;
pub mod partition;
pub mod partuuid;
pub mod raid;
mod resolver;
mod stack;
mod verity;

#[cfg(test)]
mod tests;

pub use self::disk_guids::read_disk_guids;
pub use self::encryption::EncryptionLayer;
pub use self::layer::{BlockDeviceError, BlockDeviceLayer, Extent, ResolvedDevice};
pub use self::partition::PartitionLayer;
pub use self::raid::RaidLayer;
pub use self::resolver::{BlockDevices, Targets};
pub use self::stack::{LAYERS, create_all, open_all};
