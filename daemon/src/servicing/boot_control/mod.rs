//! Boot control: which volume the host boots next, which one it booted,
//! and the boot files of a freshly written volume. Pluggable
//! (`tridentd --boot-control`):
//!
//! * [`record::RecordBootControl`] (default): the boot record file
//!   (`boot_record`), for disk-image targets; nothing boots, a "reboot" is
//!   simulated.
//! * [`uefi::UefiBootControl`]: a real UEFI host with systemd-boot. Each
//!   volume has a Type 1 entry on the ESP (`trident-volume-a.conf`, its
//!   kernel and initrd copied from the volume, `root=PARTUUID=...`);
//!   install puts systemd-boot on the ESP and makes volume A the
//!   `loader.conf` default; an A/B update adds the new volume's entry and
//!   sets the one-shot `LoaderEntryOneShot` EFI variable, so the firmware
//!   tries the new volume once and any later boot (crash, failed health
//!   check, reset) comes back on the old default; Commit alone switches
//!   the default. What boots without EFI variables (the UEFI fallback
//!   loader and `loader.conf`) follows `os.uefiFallback` ([`fallback`]).
//!   The booted volume is the partition of the running root
//!   filesystem (`/proc/self/mountinfo` + sysfs); where the root is on no
//!   partition, the entry systemd-boot booted (`LoaderEntrySelected`).

pub mod booted;
pub mod efivars;
pub mod esp;
pub mod fallback;
pub mod record;
pub mod uefi;
pub mod uefi_entry;

use trident_host::TridentError;
use trident_host::status::{AbVolume, HostStatus};

use super::new_root::volume::VolumeRoot;

/// One boot-control backend.
pub trait BootControl: Send + Sync + std::fmt::Debug {
    /// While a written volume's new root is mounted: put its boot files in
    /// place (`install`: the bootloader too).
    fn prepare_volume(&self, root: &VolumeRoot<'_>, install: bool) -> Result<(), TridentError>;
    /// Finalize: the next boot starts `volume` (a one-shot trial where an
    /// old volume stays the default).
    fn set_next_boot(
        &self,
        status: &HostStatus,
        volume: AbVolume,
        operation_id: &str,
    ) -> Result<(), TridentError>;
    /// A failed commit: the next boot goes back to `volume` (no trial left).
    fn point_next_boot(
        &self,
        status: &HostStatus,
        volume: AbVolume,
        operation_id: &str,
    ) -> Result<(), TridentError>;
    /// The volume the host runs on (`None`: not known / none).
    fn booted(&self, status: &HostStatus) -> Result<Option<AbVolume>, TridentError>;
    /// Commit: `volume` becomes the default boot.
    fn commit(&self, status: &HostStatus, volume: AbVolume) -> Result<(), TridentError>;
    /// Daemon start (the record backend simulates a pending reboot here).
    fn on_start(&self) -> Result<(), TridentError> {
        Ok(())
    }
}
