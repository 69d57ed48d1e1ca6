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
//! bottom-up. Today's only layer is the partition layer ([`partition`]);
//! RAID, encryption and verity are refused by validation
//! (`trident_host::config::unsupported`) before any layer runs, and land
//! as modules beside it with their issues.
//!
//! Image writing, new storage, mounting, fstab, boot control and the
//! datastore handoff never compute where a device is: they ask
//! [`BlockDevices::device_of`] for "the device of id X on this host" (for
//! an A/B volume pair, its member of the serviced volume).
//!
//! A leaf of the servicing tree: it names no other servicing module.

pub mod partition;
mod resolver;

#[cfg(test)]
mod tests;

use trident_host::config::HostConfiguration;
use trident_host::config::storage_graph::DeviceKind;
use trident_host::status::{HostStatus, PartitionLayout};
use trident_host::{Subkind, TridentError};

pub use self::partition::PartitionLayer;
pub use self::resolver::{BlockDevices, Targets};

/// Where the engine reaches one block device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedDevice {
    /// A partition: a byte range of its disk (a disk-image file or a whole
    /// block device), as the partition layer recorded it. Disk-image files
    /// have no per-partition device nodes, so every partition is reached
    /// this way; where a tool needs a node, a loop device is attached over
    /// the range (`new_root::tools::LoopDevice`).
    Partition { id: String, layout: PartitionLayout },
}

/// The bytes of a device: `size` bytes at `offset` of `backing` (a file
/// or a block device).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent<'a> {
    pub backing: &'a str,
    pub offset: u64,
    pub size: u64,
}

impl ResolvedDevice {
    /// The id of the device itself (for an A/B volume pair, the member's).
    pub fn id(&self) -> &str {
        match self {
            Self::Partition { id, .. } => id,
        }
    }

    /// Where its bytes are.
    pub fn extent(&self) -> Extent<'_> {
        match self {
            Self::Partition { layout, .. } => Extent {
                backing: &layout.device,
                offset: layout.offset,
                size: layout.size,
            },
        }
    }
}

/// Why a device id does not resolve on this host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockDeviceError {
    #[error("no block device has id '{id}' in the Host Configuration's storage")]
    UnknownDevice { id: String },
    #[error(
        "{kind} '{id}' is not in the recorded layout; \
         the Host Configuration's storage differs from the installed one"
    )]
    NotRecorded { id: String, kind: DeviceKind },
    #[error("'{id}' is a {kind}: this daemon has no layer for it")]
    NoLayer { id: String, kind: DeviceKind },
}

impl BlockDeviceError {
    /// The error model's subkind: a device missing from the record means
    /// the host is not in the state the configuration describes.
    pub fn subkind(&self) -> Subkind {
        match self {
            Self::NotRecorded { .. } => Subkind::InvalidServicingState,
            Self::NoLayer { .. } => Subkind::UnsupportedFeature,
            Self::UnknownDevice { .. } => Subkind::InvalidHostConfiguration,
        }
    }

    /// The structured error, its message prefixed with where the id was
    /// named (`storage.filesystems[0]`).
    #[track_caller]
    pub fn at(self, key: &str) -> TridentError {
        TridentError::new(self.subkind(), format!("{key}: {self}"))
    }
}

/// One kind of block device the engine creates and reaches.
pub trait BlockDeviceLayer: Sync {
    /// The kind of device it provides.
    fn kind(&self) -> DeviceKind;

    /// Install: creates this kind's devices of `hc` on the devices below
    /// (created by the layers before it) and records them in `status`.
    /// Blocking.
    fn create(&self, hc: &HostConfiguration, status: &mut HostStatus) -> Result<(), TridentError>;

    /// Update: makes the devices recorded in `status` reachable (assemble
    /// an array, open a volume). Blocking.
    fn open(&self, status: &HostStatus) -> Result<(), TridentError>;

    /// Before an install re-creates the storage: stops what an earlier
    /// install recorded in `status` left running on the disks. Blocking.
    fn close(&self, status: &HostStatus) -> Result<(), TridentError>;

    /// Device `id` (of this layer's kind) as recorded in `status`.
    fn resolve(&self, id: &str, status: &HostStatus) -> Result<ResolvedDevice, BlockDeviceError>;
}

/// Every layer, bottom-up: created and opened in this order, closed in
/// the reverse one.
pub const LAYERS: &[&dyn BlockDeviceLayer] = &[&PartitionLayer];

/// The layer providing devices of `kind`.
fn layer_of(kind: DeviceKind) -> Option<&'static dyn BlockDeviceLayer> {
    LAYERS.iter().copied().find(|l| l.kind() == kind)
}

/// Install: closes what an earlier install left running (top-down),
/// then creates every layer's devices (bottom-up) into `status`. Blocking.
pub fn create_all(
    hc: &HostConfiguration,
    previous: &HostStatus,
    status: &mut HostStatus,
) -> Result<(), TridentError> {
    for layer in LAYERS.iter().rev() {
        layer.close(previous)?;
    }
    for layer in LAYERS {
        layer.create(hc, status)?;
    }
    Ok(())
}

/// Update: opens every layer's recorded devices, bottom-up. Blocking.
pub fn open_all(status: &HostStatus) -> Result<(), TridentError> {
    LAYERS.iter().try_for_each(|layer| layer.open(status))
}
