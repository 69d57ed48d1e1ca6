//! How an image boots, read from its COSI bootloader metadata
//! (`metadata.json` `bootloader`, COSI 1.2): the boot-control backend a
//! volume gets. Checked when the image is opened, before any byte is
//! written: metadata naming a setup this daemon does not do is refused
//! with `unsupported-bootloader`, naming the key.
//!
//! | `bootloader` | backend |
//! |---|---|
//! | `type: grub` | shim + GRUB from the image's ESP (`EFI/BOOT/`), per volume in `EFI/AZLA`, `EFI/AZLB` |
//! | `type: systemd-boot`, first entry `config` | systemd-boot Type 1 entry (kernel + initrd from the volume's `/boot`) |
//! | `type: systemd-boot`, first entry `uki-standalone` | systemd-boot, the volume's UKI (from the image's ESP at the entry's `path`) |
//!
//! As upstream (`osimage/cosi/metadata.rs`, `is_uki`), only the first
//! systemd-boot entry decides.

use std::path::PathBuf;

use trident_cosi::metadata::{BootloaderType, Metadata, OsArch, SystemdBootEntryType};
use trident_host::{Subkind, TridentError};

/// The ESP mount points an image's UKI path may be under.
const ESP_MOUNT_POINTS: [&str; 2] = ["/boot/efi", "/efi"];

/// The backend an image's volume boots with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootKind {
    /// shim + GRUB.
    Grub,
    /// systemd-boot with a Type 1 entry (kernel and initrd).
    Type1,
    /// systemd-boot with the image's UKI at `esp_path` (relative to the
    /// ESP root, e.g. `EFI/Linux/azurelinux-uki.efi`); the entry's
    /// `cmdline` gives the image's kernel arguments, `kernel` its release.
    Uki {
        esp_path: String,
        cmdline: String,
        kernel: String,
    },
}

impl BootKind {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Grub => "grub",
            Self::Type1 => "systemd-boot (Type 1 entry)",
            Self::Uki { .. } => "systemd-boot (UKI)",
        }
    }

    /// Whether the boot files come from the image's ESP (shim, GRUB, the
    /// UKI) rather than from the volume's root.
    pub fn needs_image_esp(&self) -> bool {
        !matches!(self, Self::Type1)
    }
}

fn unsupported(key: &str, message: String) -> TridentError {
    TridentError::new(
        Subkind::UnsupportedBootloader,
        format!("metadata.json: {key}: {message}"),
    )
}

/// The backend `metadata` asks for, or why it is refused.
pub fn boot_kind(metadata: &Metadata) -> Result<BootKind, TridentError> {
    if metadata.os_arch != OsArch::X86_64 {
        return Err(unsupported(
            "osArch",
            format!(
                "{} is not supported: the boot backends install x64 UEFI loaders",
                metadata.os_arch
            ),
        ));
    }
    let boot = &metadata.bootloader;
    match boot.bootloader_type {
        BootloaderType::Grub => Ok(BootKind::Grub),
        BootloaderType::SystemdBoot => {
            let key = "bootloader.systemdBoot.entries[0]";
            let Some(entry) = boot.systemd_boot.as_ref().and_then(|s| s.entries.first()) else {
                return Err(unsupported(key, "is required for systemd-boot".to_owned()));
            };
            match entry.entry_type {
                SystemdBootEntryType::Config => Ok(BootKind::Type1),
                SystemdBootEntryType::UkiStandalone => Ok(BootKind::Uki {
                    cmdline: entry.cmdline.clone(),
                    kernel: entry.kernel.clone(),
                    esp_path: esp_relative(&entry.path)
                        .ok_or_else(|| {
                            unsupported(
                                &format!("{key}.path"),
                                format!(
                                    "{:?} is not on the ESP (under {}): the UKI is copied from the image's ESP",
                                    entry.path,
                                    ESP_MOUNT_POINTS.join(" or ")
                                ),
                            )
                        })?,
                }),
                SystemdBootEntryType::UkiConfig => Err(unsupported(
                    &format!("{key}.type"),
                    "uki-config (a UKI started through a config entry) is not supported: \
                     use uki-standalone or config"
                        .to_owned(),
                )),
            }
        }
    }
}

/// `path` relative to the ESP root, if it is under an ESP mount point.
fn esp_relative(path: &str) -> Option<String> {
    ESP_MOUNT_POINTS.iter().find_map(|mp| {
        let rest = path.strip_prefix(mp)?.strip_prefix('/')?;
        (!rest.is_empty() && !rest.split('/').any(|c| c == ".." || c.is_empty()))
            .then(|| rest.to_owned())
    })
}

/// What boot control gets of the image of the volume it prepares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBoot {
    pub kind: BootKind,
    /// The image's ESP filesystem, copied out of the COSI when the ESP
    /// itself was not written (an A/B update) and `kind` needs it; `None`:
    /// the host's ESP holds the image's (an install wrote it).
    pub esp_copy: Option<PathBuf>,
    /// The root hash of the image's `/` when it went to a verity device
    /// (the kernel command line opens the root with it).
    pub verity_root_hash: Option<String>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Our vector mirroring upstream's grub-simple, `bootloader` replaced.
    fn metadata(bootloader: &str) -> Metadata {
        let text = include_str!("../../../cosi/tests/vectors/v1.2/valid/grub-two-partitions.json");
        let mut json: serde_json::Value = serde_json::from_str(text).unwrap();
        json["bootloader"] = serde_json::from_str(bootloader).unwrap();
        Metadata::from_json(json.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn upstreams_own_vectors_reach_the_grub_and_uki_backends_whole() {
        let grub = include_str!("../../../cosi/tests/vectors/upstream/v1.2/valid/grub-simple.json");
        let grub = Metadata::from_json(grub.as_bytes()).unwrap();
        assert_eq!(boot_kind(&grub).unwrap(), BootKind::Grub);
        let uki = include_str!(
            "../../../cosi/tests/vectors/upstream/v1.2/valid/verity-uki-systemd-boot.json"
        );
        let uki = Metadata::from_json(uki.as_bytes()).unwrap();
        assert_eq!(
            boot_kind(&uki).unwrap(),
            BootKind::Uki {
                // The entry's path, relative to the ESP it is copied to.
                esp_path: "EFI/Linux/azurelinux-uki.efi".to_owned(),
                cmdline: "root=/dev/disk/by-partuuid/88d2fa9b-7a32-450a-a9f8-aa9c3de79298 ro"
                    .to_owned(),
                kernel: "6.6.78.1-3.azl3".to_owned(),
            }
        );
    }

    #[test]
    fn the_vectors_mirroring_upstreams_choose_grub_and_the_uki() {
        assert_eq!(
            boot_kind(&metadata(r#"{"type": "grub"}"#)).unwrap(),
            BootKind::Grub
        );
        let uki =
            include_str!("../../../cosi/tests/vectors/v1.2/valid/systemd-boot-uki-verity.json");
        let uki = Metadata::from_json(uki.as_bytes()).unwrap();
        assert_eq!(
            boot_kind(&uki).unwrap(),
            BootKind::Uki {
                esp_path: "EFI/Linux/edge-6.6.58.efi".to_owned(),
                cmdline: "ro console=ttyS0 rd.systemd.verity=1".to_owned(),
                kernel: "6.6.58-2.ex7".to_owned(),
            }
        );
    }

    /// The refusal of a systemd-boot image whose one entry has `entry_type`
    /// and `path`: its message.
    fn refused(entry_type: &str, path: &str) -> String {
        let error = boot_kind(&metadata(&format!(
            r#"{{"type": "systemd-boot", "systemdBoot": {{"entries": [
                {{"type": "{entry_type}", "path": "{path}", "cmdline": "", "kernel": "6.6"}}]}}}}"#
        )))
        .unwrap_err();
        assert_eq!(error.subkind(), Subkind::UnsupportedBootloader);
        error.message().to_owned()
    }

    #[test]
    fn a_uki_through_a_config_entry_is_refused_naming_the_key() {
        let message = refused("uki-config", "/boot/efi/loader/entries/a.conf");
        assert!(
            message
                .starts_with("metadata.json: bootloader.systemdBoot.entries[0].type: uki-config"),
            "{message}"
        );
    }

    #[test]
    fn a_uki_off_the_esp_is_refused_naming_its_path() {
        let message = refused("uki-standalone", "/usr/lib/os.efi");
        assert!(
            message.contains("bootloader.systemdBoot.entries[0].path"),
            "{message}"
        );
        assert_eq!(esp_relative("/boot/efi/../etc/x"), None);
        assert_eq!(
            esp_relative("/efi/EFI/Linux/a.efi").as_deref(),
            Some("EFI/Linux/a.efi")
        );
    }
}
