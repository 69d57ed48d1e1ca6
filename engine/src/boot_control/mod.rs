//! Boot control: which volume the host boots next, which one it booted,
//! and the boot files of a freshly written volume. Pluggable
//! (`tridentd --boot-control`):
//!
//! * [`record::RecordBootControl`] (default): the boot record file
//!   (`boot_record`), for disk-image targets; nothing boots, a "reboot" is
//!   simulated.
//! * [`uefi::UefiBootControl`]: a real UEFI host. Each volume boots as its
//!   image's COSI bootloader metadata says ([`image_boot`], refused before
//!   anything is written when it names something not done here):
//!   - `grub`: the image's shim and GRUB in the volume's ESP directory
//!     (`EFI/AZLA`, `EFI/AZLB`, as upstream) with a rendered `grub.cfg`
//!     ([`grub`]) and a `Boot####` option of its own ([`boot_vars`],
//!     [`load_option`]; one per member of an ESP mirror,
//!     [`esp_options`]): the trial boot of an A/B update is `BootNext`,
//!     commit puts the volume first in `BootOrder`;
//!   - `systemd-boot`: a Type 1 entry per volume ([`systemd_boot`]) with
//!     the kernel and initrd from the volume's `/boot`, or the image's UKI;
//!     the trial is the one-shot `LoaderEntryOneShot` EFI variable, commit
//!     switches `loader.conf`'s default.
//!
//!   Any later boot of a failed trial (crash, failed health check, reset)
//!   comes back on the committed volume. What boots without EFI variables
//!   (the UEFI fallback loader) follows `os.uefiFallback` ([`fallback`]).
//!   The booted volume is the partition of the running root filesystem
//!   (`/proc/self/mountinfo` + sysfs); where the root is on no partition,
//!   the firmware's `BootCurrent` option, else the entry systemd-boot
//!   booted (`LoaderEntrySelected`).

pub mod boot_vars;
pub mod booted;
pub mod efivars;
pub mod esp;
pub mod esp_options;
pub mod fallback;
pub mod grub;
pub mod image_boot;
pub mod load_option;
mod pe;
pub mod record;
pub mod systemd_boot;
pub mod uefi;
pub mod uefi_entry;
pub mod verity;
#[cfg(test)]
mod verity_tests;

use trident_host::TridentError;
use trident_host::status::{AbVolume, HostStatus};

use self::image_boot::{BootKind, ImageBoot};
use super::new_root::volume::VolumeRoot;

/// One boot-control backend.
pub trait BootControl: Send + Sync + std::fmt::Debug {
    /// Whether the image's ESP is needed (copied out of the COSI when an
    /// update does not write the ESP): the boot files come from it.
    fn wants_image_esp(&self) -> bool {
        false
    }
    /// Before anything is written: can the image (booting as `kind`) be
    /// serviced onto this host as `status` records it?
    fn check_image(&self, _status: &HostStatus, _kind: &BootKind) -> Result<(), TridentError> {
        Ok(())
    }
    /// While a written volume's new root is mounted: put its boot files in
    /// place (`install`: the bootloader too), as `image` boots. Returns
    /// the files written (paths on the ESP), for the boot-files phase.
    fn prepare_volume(
        &self,
        root: &VolumeRoot<'_>,
        install: bool,
        image: &ImageBoot,
    ) -> Result<Vec<String>, TridentError>;
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
    /// Whether the host has rebooted since `instant` (a finalize). The
    /// record backend's reboots are simulated within one kernel's life,
    /// so for it always; a real host compares its kernel's boot time.
    fn rebooted_since(&self, _instant: std::time::SystemTime) -> bool {
        true
    }
    /// After `rebuild-raid` (recorded in `status`): where the ESP is a
    /// mirror, the boot options of the rebuilt members.
    fn raid_rebuilt(&self, _status: &HostStatus) -> Result<(), TridentError> {
        Ok(())
    }
    /// Daemon start (the record backend simulates a pending reboot here).
    fn on_start(&self) -> Result<(), TridentError> {
        Ok(())
    }
}
