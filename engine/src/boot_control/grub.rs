//! The GRUB backend's files: as upstream (`subsystems/esp.rs`,
//! `engine/boot/grub.rs`), each volume has its own ESP directory
//! (`EFI/AZLA`, `EFI/AZLB`) holding the image's shim as `bootx64.efi`,
//! its GRUB as `grubx64.efi` (shim loads the `grubx64.efi` next to it)
//! and a `grub.cfg` for the volume. The binaries come from the image's
//! ESP (`EFI/BOOT/`, where images ship them for the removable-media
//! path; `grubx64-noprefix.efi` preferred and renamed, as upstream).
//!
//! Unlike upstream, which rewrites the `search` line of the image's ESP
//! `grub.cfg` and edits the volume's `/boot/grub2/grub.cfg` (osmodifier),
//! the volume's `grub.cfg` is rendered whole: it finds the volume's `/boot`
//! by filesystem UUID and boots its kernel with the volume's command line
//! (`uefi_entry::command_line`), at the top level: signed GRUB builds
//! (Debian's) `source` the `grub.cfg` beside them (`$cmdpath`) when their
//! built-in prefix holds none.

use trident_host::status::AbVolume;
use trident_host::{Subkind, TridentError};

use super::esp::Esp;
use super::uefi_entry::{Kernel, command_line, image_cmdline, pretty_name, root_args};
use crate::new_root::probe;
use crate::new_root::volume::VolumeRoot;

/// Upstream's `AZURE_LINUX_INSTALL_ID_PREFIX`.
const INSTALL_ID_PREFIX: &str = "AZL";
/// The shim, under upstream's name (`BOOT_EFI`).
pub const SHIM: &str = "bootx64.efi";
pub const GRUB: &str = "grubx64.efi";
pub const GRUB_CFG: &str = "grub.cfg";
/// Where images ship the loaders (the removable-media path's directory).
const IMAGE_LOADER_DIR: &str = "EFI/BOOT";

/// `AZLA` / `AZLB`: the volume's ESP directory name and boot option label
/// (upstream's `make_esp_dir_name` for the first install on an ESP).
pub fn label(volume: AbVolume) -> String {
    let letter = match volume {
        AbVolume::VolumeA => "A",
        AbVolume::VolumeB => "B",
    };
    format!("{INSTALL_ID_PREFIX}{letter}")
}

/// `EFI/AZLA`.
pub fn esp_dir(volume: AbVolume) -> String {
    format!("EFI/{}", label(volume))
}

/// The loader a boot option starts: `\EFI\AZLA\bootx64.efi`.
pub fn loader_path(volume: AbVolume) -> String {
    format!(r"\EFI\{}\{SHIM}", label(volume))
}

/// Whether `volume` boots with GRUB: its `grub.cfg` is on the ESP.
pub fn is_grub_volume(esp: &Esp, volume: AbVolume) -> Result<bool, TridentError> {
    Ok(esp
        .read(&format!("{}/{GRUB_CFG}", esp_dir(volume)))?
        .is_some())
}

/// Reads `name` from the image's loader directory.
fn image_loader(image_esp: &Esp, names: &[&str]) -> Result<Vec<u8>, TridentError> {
    for name in names {
        if let Some(bytes) = image_esp.read(&format!("{IMAGE_LOADER_DIR}/{name}"))? {
            return Ok(bytes);
        }
    }
    Err(TridentError::new(
        Subkind::BootControl,
        format!(
            "The image's ESP has no {} in {IMAGE_LOADER_DIR}/ (a grub image ships shim and GRUB there)",
            names.join(" or ")
        ),
    ))
}

/// Writes `root.volume`'s directory: shim and GRUB from `image_esp`, the
/// rendered `grub.cfg` (`root_hash`: the image's, for a verity root).
/// Returns what was written (ESP paths).
pub fn prepare(
    root: &VolumeRoot<'_>,
    esp: &Esp,
    image_esp: &Esp,
    root_hash: Option<&str>,
) -> Result<Vec<String>, TridentError> {
    let shim = image_loader(image_esp, &["BOOTX64.EFI", SHIM])?;
    let grub = image_loader(image_esp, &["grubx64-noprefix.efi", GRUB])?;
    let config = volume_config(root, root_hash)?;
    let dir = esp_dir(root.volume);
    let written = [
        (SHIM, &shim[..]),
        (GRUB, &grub[..]),
        (GRUB_CFG, config.as_bytes()),
    ]
    .into_iter()
    .map(|(name, bytes)| {
        let path = format!("{dir}/{name}");
        esp.write(&path, bytes).map(|()| path)
    })
    .collect::<Result<Vec<_>, _>>()?;
    tracing::info!(volume = %root.volume, dir = %dir, "shim, GRUB and grub.cfg written on the ESP");
    Ok(written)
}

/// The volume's `grub.cfg`: find `/boot` (its own filesystem, else the
/// root's) by UUID, boot the newest kernel with the volume's command line.
fn volume_config(root: &VolumeRoot<'_>, root_hash: Option<&str>) -> Result<String, TridentError> {
    let kernel = Kernel::find(root.path)?;
    let root_args = root_args(root, root_hash)?;
    let separate_boot = root
        .hc
        .storage
        .filesystems
        .iter()
        .any(|f| f.mount_point.path() == "/boot");
    let boot_mount = if separate_boot { "/boot" } else { "/" };
    let boot_fs = root
        .hc
        .storage
        .filesystems
        .iter()
        .find(|f| f.mount_point.path() == boot_mount)
        .and_then(|f| root.device_of(&f.device_id));
    let Some(uuid) = boot_fs.as_ref().and_then(probe::fs_uuid) else {
        return Err(TridentError::new(
            Subkind::BootControl,
            format!(
                "The filesystem at '{boot_mount}' has no UUID GRUB can search for (ext4 or xfs)"
            ),
        ));
    };
    let prefix = if separate_boot { "" } else { "/boot" };
    let file = |path: &std::path::Path| {
        path.file_name()
            .map(|n| format!("{prefix}/{}", n.to_string_lossy()))
    };
    let options = command_line(root.hc, &root_args, &image_cmdline(root.path));
    Ok(render(&ConfigParts {
        title: format!("{} ({})", pretty_name(root.path), root.volume),
        boot_uuid: uuid,
        linux: file(kernel.vmlinuz.as_path()).unwrap_or_default(),
        initrd: kernel.initrd.as_deref().and_then(file),
        options,
    }))
}

/// What a volume's `grub.cfg` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigParts {
    pub title: String,
    pub boot_uuid: String,
    pub linux: String,
    pub initrd: Option<String>,
    pub options: String,
}

/// The config runs its commands at the top level, no menu: signed GRUB
/// builds `source` it from their built-in config before normal mode (and
/// normal mode may read it again), and a top-level `boot` boots either way.
pub fn render(parts: &ConfigParts) -> String {
    let initrd = parts
        .initrd
        .as_ref()
        .map(|i| format!("initrd {i}\n"))
        .unwrap_or_default();
    format!(
        "# Written by Trident: {title}. Finds this volume's /boot by filesystem\n\
         # UUID and boots its kernel with the volume's command line.\n\
         search --no-floppy --fs-uuid --set=root {uuid}\n\
         echo 'Booting {title}'\n\
         linux {linux} {options}\n{initrd}boot\n",
        uuid = parts.boot_uuid,
        title = parts.title.replace(['\'', '\n'], ""),
        linux = parts.linux,
        options = parts.options,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_are_named_as_upstream_names_them() {
        assert_eq!(esp_dir(AbVolume::VolumeA), "EFI/AZLA");
        assert_eq!(label(AbVolume::VolumeB), "AZLB");
        assert_eq!(loader_path(AbVolume::VolumeB), r"\EFI\AZLB\bootx64.efi");
    }

    #[test]
    fn the_config_searches_boot_by_uuid_and_carries_the_command_line() {
        let text = render(&ConfigParts {
            title: "Trident's OS (volume-b)".to_owned(),
            boot_uuid: "0b1e6d2c-0000-4000-a000-000000000001".to_owned(),
            linux: "/boot/vmlinuz-6.1.0-9-cloud-amd64".to_owned(),
            initrd: Some("/boot/initrd.img-6.1.0-9-cloud-amd64".to_owned()),
            options: "root=PARTUUID=abcd rw console=ttyS0".to_owned(),
        });
        assert!(text.contains(
            "search --no-floppy --fs-uuid --set=root 0b1e6d2c-0000-4000-a000-000000000001\n"
        ));
        assert!(text.contains("echo 'Booting Tridents OS (volume-b)'\n"));
        assert!(text.ends_with(
            "linux /boot/vmlinuz-6.1.0-9-cloud-amd64 root=PARTUUID=abcd rw console=ttyS0\n\
             initrd /boot/initrd.img-6.1.0-9-cloud-amd64\nboot\n"
        ));
    }
}
