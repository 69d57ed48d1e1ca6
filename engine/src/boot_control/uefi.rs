//! The UEFI backend. Each volume boots as its image says
//! (`image_boot`): shim + GRUB in the volume's ESP directory with a
//! `Boot####` option of its own (`grub`, `boot_vars`), or systemd-boot
//! with the volume's Type 1 entry (kernel + initrd, or the image's UKI;
//! `systemd_boot`). Which one a volume has is on the ESP: a GRUB volume
//! has `EFI/AZLx/grub.cfg`, written only by the GRUB backend (preparing
//! a volume removes the other backend's marker).
//!
//! The next boot: a GRUB volume's trial is `BootNext` (its option last in
//! `BootOrder`), its commit puts its option first in `BootOrder`, a failed
//! trial leaves `BootOrder` as it was; install and a manual rollback set
//! `BootNext` and put the option first, as upstream. A systemd-boot
//! volume's trial is `LoaderEntryOneShot`, its commit the `loader.conf`
//! default. What boots without EFI variables follows `os.uefiFallback`
//! ([`fallback`]): for a GRUB volume its shim, GRUB and `grub.cfg` become
//! `EFI/BOOT/`'s.

use std::path::{Path, PathBuf};

use trident_host::config::{HostConfiguration, PartitionType};
use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};

use super::boot_vars::{self, Position};
use super::booted::{root_md_array, root_partition};
use super::esp::Esp;
use super::esp_options::esp_partitions;
use super::fallback::{self, Moment};
use super::image_boot::{BootKind, ImageBoot};
use super::load_option::LoadOption;
use super::systemd_boot::{entry_id, entry_path, loader_conf, volume_of_entry};
use super::{BootControl, efivars, grub};
use crate::block_device::{BlockDevices, ResolvedDevice};
use crate::new_root::volume::VolumeRoot;

#[derive(Debug)]
pub struct UefiBootControl {
    /// efivarfs (`/sys/firmware/efi/efivars`).
    pub efivars: PathBuf,
    /// `/proc/stat`, whose `btime` says when the kernel booted.
    pub kernel_stat: PathBuf,
}

/// The host's ESP: where to write, and its partition (`HD()`).
struct HostEsp {
    esp: Esp,
    device: ResolvedDevice,
}

impl UefiBootControl {
    pub fn new(efivars: &Path) -> Self {
        Self {
            efivars: efivars.to_path_buf(),
            kernel_stat: PathBuf::from("/proc/stat"),
        }
    }

    /// Reads when the kernel booted from `kernel_stat` (tests simulate a
    /// reboot with a file of their own).
    pub fn with_kernel_stat(mut self, kernel_stat: &Path) -> Self {
        self.kernel_stat = kernel_stat.to_path_buf();
        self
    }

    /// Applies `os.uefiFallback`'s plan for `moment` (see `fallback`).
    fn apply_plan(
        &self,
        hc: &HostConfiguration,
        esp: &Esp,
        moment: Moment,
    ) -> Result<(), TridentError> {
        let plan = fallback::plan(hc.os.uefi_fallback, moment);
        if let Some(var) = plan.default_var {
            match var {
                Some(volume) => efivars::set(&self.efivars, efivars::DEFAULT, &entry_id(volume))?,
                None => efivars::clear(&self.efivars, efivars::DEFAULT)?,
            }
        }
        if let Some(volume) = plan.loader_conf
            && !grub::is_grub_volume(esp, volume)?
        {
            esp.write("loader/loader.conf", loader_conf(volume).as_bytes())?;
            tracing::info!(entry = %entry_id(volume), "loader.conf default set");
        }
        let Some(volume) = plan.loader else {
            return Ok(());
        };
        let files: Vec<(String, &str)> = if grub::is_grub_volume(esp, volume)? {
            let dir = grub::esp_dir(volume);
            vec![
                (format!("{dir}/{}", grub::SHIM), fallback::FALLBACK_LOADER),
                (format!("{dir}/{}", grub::GRUB), "EFI/BOOT/grubx64.efi"),
                (format!("{dir}/{}", grub::GRUB_CFG), "EFI/BOOT/grub.cfg"),
            ]
        } else {
            vec![(fallback::volume_loader(volume), fallback::FALLBACK_LOADER)]
        };
        for (from, to) in files {
            match esp.read(&from)? {
                Some(bytes) => esp.write(to, &bytes)?,
                // A volume written before loaders were kept per volume.
                None => {
                    tracing::warn!(%volume, file = %from,
                        "the volume's loader is not on the ESP: UEFI fallback left as it is");
                    return Ok(());
                }
            }
        }
        tracing::info!(%volume, mode = ?hc.os.uefi_fallback, "UEFI fallback loader is the volume's");
        Ok(())
    }

    /// `volume`'s `Boot####` options (written, or rewritten in place):
    /// one, or one per member of an ESP mirror, in the configuration's
    /// order.
    fn boot_options(
        &self,
        status: &HostStatus,
        device: &ResolvedDevice,
        volume: AbVolume,
    ) -> Result<Vec<u16>, TridentError> {
        let options: Vec<LoadOption> = esp_partitions(spec(status)?, status, device)?
            .into_iter()
            .map(|partition| {
                LoadOption::new(&grub::label(volume), partition, &grub::loader_path(volume))
            })
            .collect();
        let numbers = boot_vars::upsert_all(&self.efivars, &options)?;
        for number in &numbers {
            tracing::info!(option = format!("Boot{number:04X}"), label = %grub::label(volume),
                loader = %grub::loader_path(volume), "UEFI boot option written");
        }
        Ok(numbers)
    }
}

/// `Boot0001 Boot0002`.
fn option_names(numbers: &[u16]) -> String {
    numbers
        .iter()
        .map(|n| format!("Boot{n:04X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn spec(status: &HostStatus) -> Result<&HostConfiguration, TridentError> {
    status.spec.as_ref().ok_or_else(|| {
        TridentError::new(
            Subkind::InvalidServicingState,
            "No Host Configuration is recorded: nothing was installed",
        )
    })
}

/// The ESP: the filesystem mounted at /boot/efi or /efi (on a pair, its
/// volume A), else the partition of type `esp`.
fn esp_device_id(hc: &HostConfiguration) -> Option<String> {
    hc.storage
        .filesystems
        .iter()
        .find(|f| matches!(f.mount_point.path(), "/boot/efi" | "/efi"))
        .map(|f| f.device_id.clone())
        .or_else(|| {
            hc.storage
                .disks
                .iter()
                .flat_map(|d| &d.partitions)
                .find(|p| p.partition_type == PartitionType::Esp)
                .map(|p| p.id.clone())
        })
}

fn no_esp() -> TridentError {
    TridentError::new(
        Subkind::InvalidHostConfiguration,
        "The UEFI boot control needs an ESP: a filesystem at /boot/efi or a partition of type esp",
    )
}

/// The recorded host's ESP.
fn host_esp(status: &HostStatus) -> Result<(&HostConfiguration, HostEsp), TridentError> {
    let hc = spec(status)?;
    let devices = BlockDevices::new(hc, status)?;
    let device = esp_device_id(hc)
        .and_then(|id| devices.device_of(&id, AbVolume::VolumeA).ok())
        .ok_or_else(no_esp)?;
    let esp = Esp::open(&device)?;
    Ok((hc, HostEsp { esp, device }))
}

/// Whether the two volumes' backends are of one family (both GRUB, or
/// both systemd-boot): the trial and commit of an A/B update need one
/// mechanism for both.
fn same_family(grub_active: bool, kind: &BootKind) -> bool {
    grub_active == (*kind == BootKind::Grub)
}

impl BootControl for UefiBootControl {
    fn wants_image_esp(&self) -> bool {
        true
    }

    fn rebooted_since(&self, instant: std::time::SystemTime) -> bool {
        // Unknown boot time: as before, as if rebooted.
        std::fs::read_to_string(&self.kernel_stat)
            .ok()
            .and_then(|stat| super::booted::boot_time(&stat))
            .is_none_or(|booted| booted > instant)
    }

    fn check_image(&self, status: &HostStatus, kind: &BootKind) -> Result<(), TridentError> {
        let Some(active) = status.ab_active_volume else {
            return Ok(()); // install: nothing to stay compatible with
        };
        let (_, host) = host_esp(status)?;
        let grub_active = grub::is_grub_volume(&host.esp, active)?;
        if same_family(grub_active, kind) {
            return Ok(());
        }
        Err(TridentError::new(
            Subkind::UnsupportedBootloader,
            format!(
                "metadata.json: bootloader.type: the image boots with {}, the running {active} with {}: \
                 an A/B update cannot change the bootloader (install again)",
                kind.name(),
                if grub_active { "grub" } else { "systemd-boot" }
            ),
        ))
    }

    fn prepare_volume(
        &self,
        root: &VolumeRoot<'_>,
        install: bool,
        image: &ImageBoot,
    ) -> Result<Vec<String>, TridentError> {
        let device = esp_device_id(root.hc)
            .and_then(|id| root.devices.device_of(&id, AbVolume::VolumeA).ok())
            .filter(|device| root.source_of(device).is_some())
            .ok_or_else(no_esp)?;
        let esp = Esp::open(&device)?;
        // The image's ESP: copied out of the COSI, or (install) the one
        // written to this ESP.
        let copied = image.esp_copy.as_deref().map(Esp::open_file).transpose()?;
        let image_esp = copied.as_ref().unwrap_or(&esp);
        let (written, other_marker) = match &image.kind {
            BootKind::Grub => (
                grub::prepare(root, &esp, image_esp, image.verity_root_hash.as_deref())?,
                entry_path(root.volume),
            ),
            kind => (
                super::systemd_boot::prepare(
                    root,
                    &esp,
                    kind,
                    image_esp,
                    install,
                    image.verity_root_hash.as_deref(),
                )?,
                format!("{}/{}", grub::esp_dir(root.volume), grub::GRUB_CFG),
            ),
        };
        esp.remove(&other_marker)?;
        tracing::info!(volume = %root.volume, backend = image.kind.name(),
            files = %written.join(" "), "boot files written");
        Ok(written)
    }

    fn set_next_boot(
        &self,
        status: &HostStatus,
        volume: AbVolume,
        _operation_id: &str,
    ) -> Result<(), TridentError> {
        let (hc, host) = host_esp(status)?;
        let moment = match status.ab_active_volume {
            None => Moment::InstallFinalize,
            Some(active) if status.servicing_state == ServicingState::ManualRollbackAbStaged => {
                Moment::RollbackFinalize {
                    active,
                    target: volume,
                }
            }
            Some(active) => Moment::TrialFinalize {
                active,
                target: volume,
            },
        };
        if grub::is_grub_volume(&host.esp, volume)? {
            let numbers = self.boot_options(status, &host.device, volume)?;
            let position = match moment {
                Moment::TrialFinalize { .. } => Position::Last,
                _ => Position::First,
            };
            // BootNext is one option: the first member's (as upstream).
            let number = numbers[0];
            boot_vars::set_boot_next(&self.efivars, number)?;
            boot_vars::place(&self.efivars, &numbers, position)?;
            tracing::info!(
                option = format!("Boot{number:04X}"),
                ?position,
                "next boot set (BootNext)"
            );
            return self.apply_plan(hc, &host.esp, moment);
        }
        self.apply_plan(hc, &host.esp, moment)?;
        if status.ab_active_volume.is_some() {
            efivars::set(&self.efivars, efivars::ONE_SHOT, &entry_id(volume))?;
            tracing::info!(entry = %entry_id(volume), "one-shot trial boot set (LoaderEntryOneShot)");
        }
        Ok(())
    }

    fn point_next_boot(
        &self,
        status: &HostStatus,
        volume: AbVolume,
        _operation_id: &str,
    ) -> Result<(), TridentError> {
        let (hc, host) = host_esp(status)?;
        // BootOrder is left as it was: the failed volume never led it.
        boot_vars::clear_boot_next(&self.efivars)?;
        efivars::clear(&self.efivars, efivars::ONE_SHOT)?;
        self.apply_plan(hc, &host.esp, Moment::PointBack { volume })
    }

    fn booted(&self, status: &HostStatus) -> Result<Option<AbVolume>, TridentError> {
        let Some(hc) = status.spec.as_ref() else {
            return Ok(None); // nothing installed
        };
        let devices = BlockDevices::new(hc, status)?;
        let on_root = |volume| {
            let fs = hc
                .storage
                .filesystems
                .iter()
                .find(|f| f.mount_point.path() == "/")?;
            devices.device_of(&fs.device_id, volume).ok()
        };
        // A root on a RAID array: the array whose device is the root's.
        if let Some(md) = root_md_array()? {
            for volume in [AbVolume::VolumeA, AbVolume::VolumeB] {
                if let Some(ResolvedDevice::RaidArray { path, .. }) = on_root(volume)
                    && std::fs::canonicalize(&path).is_ok_and(|p| p == md)
                {
                    return Ok(Some(volume));
                }
            }
            tracing::warn!(root = %md.display(), "the running root is on no array of the Host Configuration");
            return Ok(None);
        }
        let Some(running) = root_partition()? else {
            // The root is no partition (a container, a test on a
            // disk-image file): the firmware's BootCurrent option, else
            // the entry systemd-boot says it booted.
            let by_option = boot_vars::booted_label(&self.efivars).and_then(|label| {
                [AbVolume::VolumeA, AbVolume::VolumeB]
                    .into_iter()
                    .find(|v| grub::label(*v) == label)
            });
            return Ok(by_option.or_else(|| {
                efivars::get(&self.efivars, efivars::SELECTED)
                    .as_deref()
                    .and_then(volume_of_entry)
            }));
        };
        for volume in [AbVolume::VolumeA, AbVolume::VolumeB] {
            // Partitions are matched by disk and entry number (sysfs).
            let Some(ResolvedDevice::Partition { layout: place, .. }) = on_root(volume) else {
                continue;
            };
            let disk = std::fs::canonicalize(&place.device)
                .unwrap_or_else(|_| place.device.clone().into());
            if disk == running.disk && place.number == running.number {
                return Ok(Some(volume));
            }
        }
        tracing::warn!(disk = %running.disk.display(), number = running.number,
            "the running root is on no volume of the Host Configuration");
        Ok(None)
    }

    fn commit(&self, status: &HostStatus, volume: AbVolume) -> Result<(), TridentError> {
        let (hc, host) = host_esp(status)?;
        if grub::is_grub_volume(&host.esp, volume)? {
            let numbers = self.boot_options(status, &host.device, volume)?;
            boot_vars::place(&self.efivars, &numbers, Position::First)?;
            tracing::info!(
                options = %option_names(&numbers),
                "committed volume first in BootOrder"
            );
        }
        self.apply_plan(hc, &host.esp, Moment::Commit { volume })?;
        efivars::clear(&self.efivars, efivars::ONE_SHOT)
    }

    fn raid_rebuilt(&self, status: &HostStatus) -> Result<(), TridentError> {
        let (_, host) = host_esp(status)?;
        if !matches!(host.device, ResolvedDevice::RaidArray { .. }) {
            return Ok(()); // the ESP was on no array: its option is as it was
        }
        // The volumes that have options (GRUB volumes), the active one
        // first: its options lead BootOrder, the other's are kept in it.
        let mut volumes = [AbVolume::VolumeA, AbVolume::VolumeB];
        if status.ab_active_volume == Some(AbVolume::VolumeB) {
            volumes.reverse();
        }
        for volume in volumes {
            if !grub::is_grub_volume(&host.esp, volume)?
                || boot_vars::find(&self.efivars, &grub::label(volume)).is_none()
            {
                continue;
            }
            let numbers = self.boot_options(status, &host.device, volume)?;
            let position = if status.ab_active_volume == Some(volume) {
                Position::First
            } else {
                Position::Last
            };
            boot_vars::place(&self.efivars, &numbers, position)?;
            tracing::info!(%volume, options = %option_names(&numbers), ?position,
                "boot options of the rebuilt ESP mirror");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_keeps_the_bootloader_family() {
        let uki = BootKind::Uki {
            esp_path: "EFI/Linux/a.efi".to_owned(),
            cmdline: String::new(),
            kernel: String::new(),
        };
        assert!(same_family(true, &BootKind::Grub));
        assert!(same_family(false, &BootKind::Type1));
        assert!(same_family(false, &uki));
        assert!(!same_family(true, &uki));
        assert!(!same_family(false, &BootKind::Grub));
    }
}
