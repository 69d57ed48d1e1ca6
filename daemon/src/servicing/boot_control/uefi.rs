//! The UEFI backend: systemd-boot Type 1 entries on the ESP, one per
//! volume, the one-shot `LoaderEntryOneShot` EFI variable for a trial
//! boot, and `loader.conf`'s default plus the fallback loader
//! `EFI/BOOT/BOOTX64.EFI` as `os.uefiFallback` says (`fallback`).

use std::path::{Path, PathBuf};

use trident_host::config::{HostConfiguration, PartitionType};
use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};

use super::BootControl;
use super::booted::root_partition;
use super::efivars;
use super::esp::Esp;
use super::fallback::{self, Moment};
use crate::servicing::block_device::{BlockDevices, ResolvedDevice};
use crate::servicing::new_root::volume::VolumeRoot;

/// Where images ship systemd-boot (Debian's systemd-boot-efi).
const SYSTEMD_BOOT_EFI: &str = "usr/lib/systemd/boot/efi/systemd-bootx64.efi";

/// The entry file name (and systemd-boot entry id) of `volume`.
pub fn entry_id(volume: AbVolume) -> String {
    format!("trident-{volume}.conf")
}

/// The volume of a Trident entry id (`trident-volume-b.conf`).
fn volume_of_entry(entry: &str) -> Option<AbVolume> {
    [AbVolume::VolumeA, AbVolume::VolumeB]
        .into_iter()
        .find(|v| entry_id(*v) == entry)
}

/// `loader/loader.conf` booting `volume` by default.
pub fn loader_conf(volume: AbVolume) -> String {
    format!(
        "# Written by Trident: the volume booted without EFI variables.\n\
         default {}\ntimeout 0\neditor no\n",
        entry_id(volume)
    )
}

#[derive(Debug)]
pub struct UefiBootControl {
    /// efivarfs (`/sys/firmware/efi/efivars`).
    pub efivars: PathBuf,
}

impl UefiBootControl {
    pub fn new(efivars: &Path) -> Self {
        Self {
            efivars: efivars.to_path_buf(),
        }
    }

    /// Applies `os.uefiFallback`'s plan for `moment` (see `fallback`).
    fn apply_plan(&self, status: &HostStatus, moment: Moment) -> Result<(), TridentError> {
        let hc = spec(status)?;
        let plan = fallback::plan(hc.os.uefi_fallback, moment);
        if let Some(var) = plan.default_var {
            match var {
                Some(volume) => efivars::set(&self.efivars, efivars::DEFAULT, &entry_id(volume))?,
                None => efivars::clear(&self.efivars, efivars::DEFAULT)?,
            }
        }
        if plan.loader.is_none() && plan.loader_conf.is_none() {
            return Ok(());
        }
        let esp = Esp::open(&esp_device(hc, &BlockDevices::new(hc, status)?)?)?;
        if let Some(volume) = plan.loader_conf {
            esp.write("loader/loader.conf", loader_conf(volume).as_bytes())?;
            tracing::info!(entry = %entry_id(volume), "loader.conf default set");
        }
        if let Some(volume) = plan.loader {
            match esp.read(&fallback::volume_loader(volume))? {
                Some(loader) => {
                    esp.write(fallback::FALLBACK_LOADER, &loader)?;
                    tracing::info!(%volume, mode = ?hc.os.uefi_fallback,
                        "UEFI fallback loader is the volume's systemd-boot");
                }
                // A volume written before loaders were kept per volume.
                None => tracing::warn!(%volume,
                    "the volume has no systemd-boot on the ESP: UEFI fallback loader left as it is"),
            }
        }
        Ok(())
    }
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

fn esp_device(
    hc: &HostConfiguration,
    devices: &BlockDevices,
) -> Result<ResolvedDevice, TridentError> {
    esp_device_id(hc)
        .and_then(|id| devices.device_of(&id, AbVolume::VolumeA).ok())
        .ok_or_else(|| {
            TridentError::new(
                Subkind::InvalidHostConfiguration,
                "The UEFI boot control needs an ESP: a filesystem at /boot/efi or a partition of type esp",
            )
        })
}

impl BootControl for UefiBootControl {
    fn prepare_volume(&self, root: &VolumeRoot<'_>, install: bool) -> Result<(), TridentError> {
        let esp = esp_device_id(root.hc)
            .and_then(|id| root.devices.device_of(&id, AbVolume::VolumeA).ok())
            .filter(|device| root.partitions.contains_key(device.id()));
        let (Some(esp), Some(root_part)) = (esp, root.partition_of("/")) else {
            return Err(TridentError::new(
                Subkind::InvalidHostConfiguration,
                "The UEFI boot control needs an ESP and a filesystem mounted at '/'",
            ));
        };
        let esp = Esp::open(&esp)?;
        let kernel = super::uefi_entry::Kernel::find(root.path)?;
        let dir = format!("trident/{}", root.volume);
        esp.copy_in(&kernel.vmlinuz, &format!("{dir}/vmlinuz"))?;
        if let Some(initrd) = &kernel.initrd {
            esp.copy_in(initrd, &format!("{dir}/initrd.img"))?;
        }
        let entry = super::uefi_entry::entry_text(root, &kernel, &root_part.part_uuid, &dir);
        esp.write(
            &format!("loader/entries/{}", entry_id(root.volume)),
            entry.as_bytes(),
        )?;
        tracing::info!(volume = %root.volume, kernel = %kernel.release, "boot entry written on the ESP");
        // The volume's own systemd-boot, for the UEFI fallback path.
        let loader = systemd_boot_of(root.path)?;
        esp.copy_in(&loader, &fallback::volume_loader(root.volume))?;
        if install {
            esp.copy_in(&loader, "EFI/systemd/systemd-bootx64.efi")?;
            esp.write("loader/loader.conf", loader_conf(root.volume).as_bytes())?;
            tracing::info!(source = %loader.display(), "systemd-boot installed on the ESP");
        }
        Ok(())
    }

    fn set_next_boot(
        &self,
        status: &HostStatus,
        volume: AbVolume,
        _operation_id: &str,
    ) -> Result<(), TridentError> {
        match status.ab_active_volume {
            // Install: nothing older to fall back to.
            None => self.apply_plan(status, Moment::InstallFinalize),
            Some(active) => {
                let moment = if status.servicing_state == ServicingState::ManualRollbackAbStaged {
                    Moment::RollbackFinalize {
                        active,
                        target: volume,
                    }
                } else {
                    Moment::TrialFinalize {
                        active,
                        target: volume,
                    }
                };
                self.apply_plan(status, moment)?;
                efivars::set(&self.efivars, efivars::ONE_SHOT, &entry_id(volume))?;
                tracing::info!(entry = %entry_id(volume), "one-shot trial boot set (LoaderEntryOneShot)");
                Ok(())
            }
        }
    }

    fn point_next_boot(
        &self,
        status: &HostStatus,
        volume: AbVolume,
        _operation_id: &str,
    ) -> Result<(), TridentError> {
        efivars::clear(&self.efivars, efivars::ONE_SHOT)?;
        self.apply_plan(status, Moment::PointBack { volume })
    }

    fn booted(&self, status: &HostStatus) -> Result<Option<AbVolume>, TridentError> {
        let Some(hc) = status.spec.as_ref() else {
            return Ok(None); // nothing installed
        };
        let Some(running) = root_partition()? else {
            // The root is no partition (a container, a test on a
            // disk-image file): the entry systemd-boot says it booted.
            return Ok(efivars::get(&self.efivars, efivars::SELECTED)
                .as_deref()
                .and_then(volume_of_entry));
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
        for volume in [AbVolume::VolumeA, AbVolume::VolumeB] {
            let Some(device) = on_root(volume) else {
                continue;
            };
            // Partitions are matched by disk and entry number (sysfs).
            let ResolvedDevice::Partition { layout: place, .. } = device;
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
        self.apply_plan(status, Moment::Commit { volume })?;
        efivars::clear(&self.efivars, efivars::ONE_SHOT)
    }
}

/// The systemd-boot binary of the new root, else this host's.
fn systemd_boot_of(new_root: &Path) -> Result<PathBuf, TridentError> {
    let from_image = new_root.join(SYSTEMD_BOOT_EFI);
    if from_image.exists() {
        return Ok(from_image);
    }
    let from_host = Path::new("/").join(SYSTEMD_BOOT_EFI);
    if from_host.exists() {
        return Ok(from_host);
    }
    Err(TridentError::new(
        Subkind::BootControl,
        format!(
            "No systemd-boot to install: neither the image nor this host has /{SYSTEMD_BOOT_EFI}"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_conf_names_the_committed_volume() {
        assert!(loader_conf(AbVolume::VolumeA).contains("\ndefault trident-volume-a.conf\n"));
    }

    #[test]
    fn entry_ids_name_their_volume() {
        assert_eq!(
            volume_of_entry("trident-volume-b.conf"),
            Some(AbVolume::VolumeB)
        );
        assert_eq!(volume_of_entry("debian.conf"), None);
    }
}
