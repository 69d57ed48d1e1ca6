//! The systemd-boot backends' files: each volume has a Type 1 entry on the
//! ESP (`loader/entries/trident-volume-a.conf`) booting either the kernel
//! and initrd copied from the volume's `/boot` (an image whose first
//! systemd-boot entry is `config`) or the image's UKI (`uki-standalone`),
//! copied from the image's ESP to `trident/<volume>/linux.efi`, with the
//! volume's command line as the entry's options (systemd-stub takes them
//! over its built-in ones when Secure Boot is off). Install puts
//! systemd-boot on the ESP and makes volume A the `loader.conf` default;
//! each volume's systemd-boot is kept for the UEFI fallback path.

use std::path::Path;

use trident_host::status::AbVolume;
use trident_host::{Subkind, TridentError};

use super::esp::Esp;
use super::fallback;
use super::image_boot::BootKind;
use super::uefi_entry::{EntryFiles, Kernel, command_line, entry_text, image_cmdline, root_args};
use super::verity::check_uki_root_hash;
use crate::new_root::volume::VolumeRoot;

/// Where images ship systemd-boot (Debian's systemd-boot-efi).
const SYSTEMD_BOOT_EFI: &str = "usr/lib/systemd/boot/efi/systemd-bootx64.efi";
/// Where an image's ESP has it.
const ESP_SYSTEMD_BOOT_EFI: &str = "EFI/systemd/systemd-bootx64.efi";

/// The entry file name (and systemd-boot entry id) of `volume`.
pub fn entry_id(volume: AbVolume) -> String {
    format!("trident-{volume}.conf")
}

/// The ESP path of `volume`'s entry.
pub fn entry_path(volume: AbVolume) -> String {
    format!("loader/entries/{}", entry_id(volume))
}

/// The volume of a Trident entry id (`trident-volume-b.conf`).
pub fn volume_of_entry(entry: &str) -> Option<AbVolume> {
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

/// Writes `root.volume`'s entry and its files (`kind`: Type 1 or UKI;
/// the UKI from `image_esp`, checked to carry `root_hash` when the root is
/// a verity device); on `install`, systemd-boot itself. Returns what was
/// written (ESP paths).
pub fn prepare(
    root: &VolumeRoot<'_>,
    esp: &Esp,
    kind: &BootKind,
    image_esp: &Esp,
    install: bool,
    root_hash: Option<&str>,
) -> Result<Vec<String>, TridentError> {
    let root_args = root_args(root, root_hash)?;
    let dir = format!("trident/{}", root.volume);
    let mut written = Vec::new();
    let files = match kind {
        BootKind::Uki {
            esp_path,
            cmdline,
            kernel,
        } => {
            let Some(uki) = image_esp.read(esp_path)? else {
                return Err(TridentError::new(
                    Subkind::BootControl,
                    format!(
                        "The image's ESP has no UKI at {esp_path} (bootloader.systemdBoot.entries[0].path)"
                    ),
                ));
            };
            if let Some(hash) = root_hash {
                // A verity root: the UKI's own command line opens it.
                check_uki_root_hash(&uki, hash)?;
            }
            let linux = format!("{dir}/linux.efi");
            esp.write(&linux, &uki)?;
            written.push(linux.clone());
            EntryFiles {
                version: kernel.clone(),
                linux,
                initrd: None,
                options: command_line(root.hc, &root_args, cmdline),
            }
        }
        BootKind::Type1 | BootKind::Grub => {
            let kernel = Kernel::find(root.path)?;
            let linux = format!("{dir}/vmlinuz");
            esp.copy_in(&kernel.vmlinuz, &linux)?;
            written.push(linux.clone());
            let initrd = match &kernel.initrd {
                Some(initrd) => {
                    let path = format!("{dir}/initrd.img");
                    esp.copy_in(initrd, &path)?;
                    written.push(path.clone());
                    Some(path)
                }
                None => None,
            };
            EntryFiles {
                version: kernel.release,
                linux,
                initrd,
                options: command_line(root.hc, &root_args, &image_cmdline(root.path)),
            }
        }
    };
    let entry = entry_path(root.volume);
    esp.write(&entry, entry_text(root, &files).as_bytes())?;
    written.push(entry);
    tracing::info!(volume = %root.volume, backend = kind.name(), "boot entry written on the ESP");
    // The volume's own systemd-boot, for the UEFI fallback path.
    let loader = systemd_boot_of(root.path, image_esp)?;
    esp.write(&fallback::volume_loader(root.volume), &loader)?;
    written.push(fallback::volume_loader(root.volume));
    if install {
        esp.write(ESP_SYSTEMD_BOOT_EFI, &loader)?;
        esp.write("loader/loader.conf", loader_conf(root.volume).as_bytes())?;
        written.extend([
            ESP_SYSTEMD_BOOT_EFI.to_owned(),
            "loader/loader.conf".to_owned(),
        ]);
        tracing::info!("systemd-boot installed on the ESP");
    }
    Ok(written)
}

/// The systemd-boot binary of the new root, else the image's ESP's, else
/// this host's.
fn systemd_boot_of(new_root: &Path, image_esp: &Esp) -> Result<Vec<u8>, TridentError> {
    let read = |path: &Path| std::fs::read(path).ok();
    if let Some(bytes) = read(&new_root.join(SYSTEMD_BOOT_EFI)) {
        return Ok(bytes);
    }
    if let Some(bytes) = image_esp.read(ESP_SYSTEMD_BOOT_EFI)? {
        return Ok(bytes);
    }
    if let Some(bytes) = read(&Path::new("/").join(SYSTEMD_BOOT_EFI)) {
        return Ok(bytes);
    }
    Err(TridentError::new(
        Subkind::BootControl,
        format!(
            "No systemd-boot to install: neither the image (/{SYSTEMD_BOOT_EFI} or its ESP's \
             {ESP_SYSTEMD_BOOT_EFI}) nor this host has one"
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
