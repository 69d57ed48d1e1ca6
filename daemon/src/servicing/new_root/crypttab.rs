//! `/etc/crypttab` of the new root (upstream's `subsystems/storage/
//! encryption.rs::configure`): one line per encrypted volume the install
//! created, named by its LUKS2 UUID, unlocked at boot by the TPM 2.0
//! (`tpm2-device=auto`; when the TPM refuses, systemd-cryptsetup asks for
//! the recovery key on the console). A volume under swap is set up as
//! upstream does it: a fresh random key every boot, formatted as swap
//! (plain dm-crypt, so it is named by its partition's PARTUUID: the LUKS2
//! header does not survive the first boot). Without encrypted volumes, an
//! image's crypttab is removed, as upstream does.

use trident_host::{ResultExt, Subkind, TridentError};

use super::volume::VolumeRoot;
use crate::servicing::block_device::encryption::{CIPHER, KEY_SIZE};

/// The file's text, or `None` without encrypted volumes.
pub fn render(root: &VolumeRoot<'_>) -> Result<Option<String>, TridentError> {
    let volumes = root.devices.encrypted_volumes();
    if volumes.is_empty() {
        return Ok(None);
    }
    let mut text = String::from(
        "# Written by Trident from the Host Configuration (storage.encryption).\n\
         # <name> <device> <key file> <options>\n",
    );
    for (id, volume) in volumes {
        let under_swap = root.hc.storage.swap.iter().any(|s| &s.device_id == id);
        if under_swap {
            let part = root.partitions.get(&volume.device_id).ok_or_else(|| {
                TridentError::new(
                    Subkind::CreateCrypttab,
                    format!(
                        "Encrypted swap '{id}': its device '{}' is not a partition on disk",
                        volume.device_id
                    ),
                )
            })?;
            text.push_str(&format!(
                "{}\tPARTUUID={}\t/dev/urandom\tswap,cipher={CIPHER},size={KEY_SIZE}\n",
                volume.device_name, part.part_uuid
            ));
        } else {
            text.push_str(&format!(
                "{}\tUUID={}\tnone\tluks,tpm2-device=auto\n",
                volume.device_name, volume.luks_uuid
            ));
        }
    }
    Ok(Some(text))
}

/// Configure step: writes (or removes) NEW_ROOT/etc/crypttab.
pub fn write_crypttab(root: &VolumeRoot<'_>) -> Result<(), TridentError> {
    let path = root.path.join("etc/crypttab");
    match render(root)? {
        Some(text) => {
            std::fs::create_dir_all(root.path.join("etc")).structured(Subkind::CreateCrypttab)?;
            std::fs::write(&path, text)
                .structured_msg(Subkind::CreateCrypttab, "Cannot write /etc/crypttab")?;
            tracing::info!(
                volumes = root.devices.encrypted_volumes().len(),
                "crypttab written into the new root"
            );
        }
        None if path.exists() => {
            std::fs::remove_file(&path)
                .structured_msg(Subkind::CreateCrypttab, "Cannot remove /etc/crypttab")?;
            tracing::info!("crypttab removed: no encrypted volumes");
        }
        None => {}
    }
    Ok(())
}
