//! The shape every layer of the block-device stack has
//! ([`BlockDeviceLayer`]), what a device resolves to ([`ResolvedDevice`])
//! and why it may not ([`BlockDeviceError`]).

use trident_host::config::HostConfiguration;
use trident_host::config::storage_graph::DeviceKind;
use trident_host::status::{HostStatus, PartitionLayout};
use trident_host::{Subkind, TridentError};

/// Where the engine reaches one block device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolvedDevice {
    /// A partition: a byte range of its disk (a disk-image file or a whole
    /// block device), as the partition layer recorded it. Disk-image files
    /// have no per-partition device nodes, so every partition is reached
    /// this way; where a tool needs a node, a loop device is attached over
    /// the range (`new_root::tools::LoopDevice`).
    Partition { id: String, layout: PartitionLayout },
    /// A software RAID array: `/dev/md/<name>` from offset 0, `size`
    /// usable bytes, as the RAID layer recorded it.
    RaidArray { id: String, path: String, size: u64 },
    /// An encrypted volume, opened: `/dev/mapper/<deviceName>` from offset
    /// 0, `size` bytes (its device less the LUKS2 header), as the
    /// encryption layer recorded it.
    EncryptedVolume { id: String, path: String, size: u64 },
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
            Self::Partition { id, .. }
            | Self::RaidArray { id, .. }
            | Self::EncryptedVolume { id, .. } => id,
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
            Self::RaidArray { path, size, .. } | Self::EncryptedVolume { path, size, .. } => {
                Extent {
                    backing: path,
                    offset: 0,
                    size: *size,
                }
            }
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

    /// Whether devices of `kind` resolve through this layer (by default,
    /// its own kind only).
    fn provides(&self, kind: DeviceKind) -> bool {
        self.kind() == kind
    }

    /// Install, before anything is written: whether this host can create
    /// this kind's devices of `hc` (tools, kinds of disks). Blocking.
    fn preflight(&self, _hc: &HostConfiguration) -> Result<(), TridentError> {
        Ok(())
    }

    /// Install: creates this kind's devices of `hc` on the devices below
    /// (created by the layers before it) and records them in `status`.
    /// Blocking.
    fn create(&self, hc: &HostConfiguration, status: &mut HostStatus) -> Result<(), TridentError>;

    /// Update: makes the devices recorded in `status` reachable (assemble
    /// an array, open a volume). Blocking.
    fn open(&self, status: &HostStatus) -> Result<(), TridentError>;

    /// Before an install re-creates the storage of `hc`: stops what runs
    /// on its disks (an earlier install, recorded in `status`, or not).
    /// Blocking.
    fn close(&self, hc: &HostConfiguration, status: &HostStatus) -> Result<(), TridentError>;

    /// Device `id` (of this layer's kind) as recorded in `status`.
    fn resolve(&self, id: &str, status: &HostStatus) -> Result<ResolvedDevice, BlockDeviceError>;
}
