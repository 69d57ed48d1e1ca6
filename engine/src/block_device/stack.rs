//! The layers in order: created and opened bottom-up, closed top-down.

use trident_host::TridentError;
use trident_host::config::HostConfiguration;
use trident_host::config::storage_graph::DeviceKind;
use trident_host::status::HostStatus;

use super::encryption::EncryptionLayer;
use super::layer::BlockDeviceLayer;
use super::partition::PartitionLayer;
use super::raid::RaidLayer;

/// Every layer, bottom-up: created and opened in this order, closed in
/// the reverse one.
pub const LAYERS: &[&dyn BlockDeviceLayer] = &[&PartitionLayer, &RaidLayer, &EncryptionLayer];

/// The layer providing devices of `kind`.
pub(super) fn layer_of(kind: DeviceKind) -> Option<&'static dyn BlockDeviceLayer> {
    LAYERS.iter().copied().find(|l| l.provides(kind))
}

/// Install: checks every layer can create its devices (before anything
/// is touched), closes what runs on the disks (top-down), then creates
/// every layer's devices (bottom-up) into `status`. Blocking.
pub fn create_all(
    hc: &HostConfiguration,
    previous: &HostStatus,
    status: &mut HostStatus,
) -> Result<(), TridentError> {
    for layer in LAYERS {
        layer.preflight(hc)?;
    }
    for layer in LAYERS.iter().rev() {
        layer.close(hc, previous)?;
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
