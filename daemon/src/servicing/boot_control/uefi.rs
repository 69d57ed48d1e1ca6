//! The UEFI backend: systemd-boot Type 1 entries on the ESP, one per
//! volume, `loader.conf`'s default for the committed volume and the
//! one-shot `LoaderEntryOneShot` EFI variable for a trial boot.

use std::path::{Path, PathBuf};

use trident_host::config::{HostConfiguration, PartitionType};
use trident_host::status::{AbVolume, HostStatus, PartitionLayout};
use trident_host::{ResultExt, Subkind, TridentError};

use super::BootControl;
use super::booted::root_partition;
use super::esp::Esp;
use crate::servicing::new_root::NewRoot;
use crate::servicing::new_root::partitions::partition_for;

/// systemd-boot's vendor GUID for its EFI variables.
const LOADER_GUID: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";
/// EFI_VARIABLE_NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS.
const EFI_VAR_ATTRIBUTES: u32 = 0x7;
/// Where images ship systemd-boot (Debian's systemd-boot-efi).
const SYSTEMD_BOOT_EFI: &str = "usr/lib/systemd/boot/efi/systemd-bootx64.efi";

/// The entry file name (and systemd-boot entry id) of `volume`.
pub fn entry_id(volume: AbVolume) -> String {
    format!("trident-{volume}.conf")
}

/// `loader/loader.conf` booting `volume` by default.
pub fn loader_conf(volume: AbVolume) -> String {
    format!(
        "# Written by Trident: the committed volume boots by default.\n\
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

    fn one_shot_path(&self) -> PathBuf {
        self.efivars
            .join(format!("LoaderEntryOneShot-{LOADER_GUID}"))
    }

    /// Sets `LoaderEntryOneShot`: systemd-boot boots `entry` once, then
    /// deletes the variable.
    fn set_one_shot(&self, entry: &str) -> Result<(), TridentError> {
        self.clear_one_shot()?;
        let mut data = EFI_VAR_ATTRIBUTES.to_le_bytes().to_vec();
        for unit in entry.encode_utf16().chain(std::iter::once(0)) {
            data.extend_from_slice(&unit.to_le_bytes());
        }
        std::fs::write(self.one_shot_path(), data).structured_msg(
            Subkind::BootControl,
            format!(
                "Cannot set LoaderEntryOneShot in {}",
                self.efivars.display()
            ),
        )?;
        tracing::info!(entry, "one-shot trial boot set (LoaderEntryOneShot)");
        Ok(())
    }

    fn clear_one_shot(&self) -> Result<(), TridentError> {
        let path = self.one_shot_path();
        if !path.exists() {
            return Ok(());
        }
        // efivarfs files are immutable until told otherwise.
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&path)
            .status();
        std::fs::remove_file(&path)
            .structured_msg(Subkind::BootControl, "Cannot clear LoaderEntryOneShot")
    }

    fn set_default(&self, status: &HostStatus, volume: AbVolume) -> Result<(), TridentError> {
        let esp = Esp::open(&esp_layout(spec(status)?, &status.layout)?)?;
        esp.write("loader/loader.conf", loader_conf(volume).as_bytes())?;
        tracing::info!(entry = %entry_id(volume), "default boot entry set (loader.conf)");
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

/// The ESP: the filesystem mounted at /boot/efi or /efi, else the
/// partition of type `esp`.
fn esp_partition_id(hc: &HostConfiguration) -> Option<String> {
    hc.storage
        .filesystems
        .iter()
        .find(|f| matches!(f.mount_point.path(), "/boot/efi" | "/efi"))
        .map(|f| partition_for(hc, &f.device_id, AbVolume::VolumeA))
        .or_else(|| {
            hc.storage
                .disks
                .iter()
                .flat_map(|d| &d.partitions)
                .find(|p| p.partition_type == PartitionType::Esp)
                .map(|p| p.id.clone())
        })
}

fn esp_layout(
    hc: &HostConfiguration,
    layout: &std::collections::BTreeMap<String, PartitionLayout>,
) -> Result<PartitionLayout, TridentError> {
    esp_partition_id(hc)
        .and_then(|id| layout.get(&id).cloned())
        .ok_or_else(|| {
            TridentError::new(
                Subkind::InvalidHostConfiguration,
                "The UEFI boot control needs an ESP: a filesystem at /boot/efi or a partition of type esp",
            )
        })
}

impl BootControl for UefiBootControl {
    fn prepare_volume(&self, root: &NewRoot, install: bool) -> Result<(), TridentError> {
        let esp_id = esp_partition_id(&root.hc);
        let esp_part = esp_id.as_ref().and_then(|id| root.partitions.get(id));
        let (Some(esp_part), Some(root_part)) = (esp_part, root.partition_of("/")) else {
            return Err(TridentError::new(
                Subkind::InvalidHostConfiguration,
                "The UEFI boot control needs an ESP and a filesystem mounted at '/'",
            ));
        };
        let esp = Esp::open(&esp_part.layout)?;
        let kernel = super::uefi_entry::Kernel::find(&root.path)?;
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
        if install {
            install_systemd_boot(&esp, &root.path)?;
            esp.write("loader/loader.conf", loader_conf(root.volume).as_bytes())?;
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
            // Install: nothing older to fall back to; loader.conf already
            // names the new volume.
            None => self.set_default(status, volume),
            Some(_) => self.set_one_shot(&entry_id(volume)),
        }
    }

    fn point_next_boot(
        &self,
        status: &HostStatus,
        volume: AbVolume,
        _operation_id: &str,
    ) -> Result<(), TridentError> {
        self.clear_one_shot()?;
        self.set_default(status, volume)
    }

    fn booted(&self, status: &HostStatus) -> Result<Option<AbVolume>, TridentError> {
        let (Some(running), Some(hc)) = (root_partition()?, status.spec.as_ref()) else {
            return Ok(None); // not on a partition, or nothing installed
        };
        let on_root = |volume| {
            hc.storage
                .filesystems
                .iter()
                .find(|f| f.mount_point.path() == "/")
                .map(|f| partition_for(hc, &f.device_id, volume))
        };
        for volume in [AbVolume::VolumeA, AbVolume::VolumeB] {
            let Some(place) = on_root(volume).and_then(|id| status.layout.get(&id).cloned()) else {
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
        self.set_default(status, volume)?;
        self.clear_one_shot()
    }
}

/// systemd-boot from the new root (else this host) as the removable-media
/// default loader and under EFI/systemd.
fn install_systemd_boot(esp: &Esp, new_root: &Path) -> Result<(), TridentError> {
    let from_image = new_root.join(SYSTEMD_BOOT_EFI);
    let source = if from_image.exists() {
        from_image
    } else {
        Path::new("/").join(SYSTEMD_BOOT_EFI)
    };
    if !source.exists() {
        return Err(TridentError::new(
            Subkind::BootControl,
            format!(
                "No systemd-boot to install: neither the image nor this host has /{SYSTEMD_BOOT_EFI}"
            ),
        ));
    }
    esp.copy_in(&source, "EFI/BOOT/BOOTX64.EFI")?;
    esp.copy_in(&source, "EFI/systemd/systemd-bootx64.efi")?;
    tracing::info!(source = %source.display(), "systemd-boot installed on the ESP");
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_shot_is_the_entry_id_in_utf16_after_the_attributes_and_clears() {
        let dir = std::env::temp_dir().join(format!("efivars-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let uefi = UefiBootControl::new(&dir);
        uefi.set_one_shot(&entry_id(AbVolume::VolumeB)).unwrap();
        let bytes = std::fs::read(uefi.one_shot_path()).unwrap();
        assert_eq!(&bytes[..4], &[7, 0, 0, 0]);
        let units: Vec<u16> = bytes[4..]
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(
            String::from_utf16(&units).unwrap(),
            "trident-volume-b.conf\0"
        );
        uefi.clear_one_shot().unwrap();
        assert!(!uefi.one_shot_path().exists());
        uefi.clear_one_shot().unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn loader_conf_names_the_committed_volume() {
        assert!(loader_conf(AbVolume::VolumeA).contains("\ndefault trident-volume-a.conf\n"));
    }
}
