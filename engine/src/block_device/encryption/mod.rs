//! The encryption layer (`storage.encryption`), as upstream does it
//! (`engine/storage/encryption.rs`) for images that boot with their PCRs
//! sealed directly (`trident_host::config`'s encryption rules):
//!
//! - *create* (install): on each volume's device (a partition or a RAID
//!   array, through a loop device over it), `cryptsetup luksFormat --type
//!   luks2` with the recovery key file (`recoveryKeyUrl`) or, without one,
//!   a temporary random key; a TPM 2.0 key enrolled with
//!   `systemd-cryptenroll --tpm2-device=auto --tpm2-pcrs=<pcrs>`; the
//!   volume opened as `/dev/mapper/<deviceName>` for the filesystem made
//!   on it; without a recovery key, then the temporary key's slot wiped
//!   (the TPM alone opens the volume); recorded in the Host Status
//!   (`encryptedVolumes`: LUKS UUID, size, PCRs; never a key). The new
//!   root's `/etc/crypttab` (`new_root::crypttab`) unlocks it at boot with
//!   the TPM (`tpm2-device=auto`).
//! - *open* (A/B update, before anything is written): each recorded volume
//!   is opened with the TPM 2.0 alone, or, open already (the boot unlocked
//!   it), the TPM is asked to unseal its key again (`--test-passphrase`):
//!   a TPM whose PCRs changed since the install fails the update
//!   (`tpm-unseal-failed`, naming the volume and the PCRs) instead of
//!   staging an OS that would not unlock its volumes.
//! - *close* (before an install re-creates the storage): the recorded and
//!   configured mappings that are open.
//!
//! Install checks first ([`EncryptionLayer::preflight`], before anything
//! is written) that a TPM 2.0 is there and that the recovery key file is
//! what upstream demands: a regular, non-empty file only its owner may
//! read.

mod luks;
#[cfg(test)]
mod tests;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use trident_host::config::storage_graph::DeviceKind;
use trident_host::config::{Encryption, HostConfiguration};
use trident_host::status::{EncryptedVolumeStatus, HostStatus};
use trident_host::{ContextExt, Subkind, TridentError};

use self::luks::{LoopNode, TempKey};
use super::layer::{BlockDeviceError, BlockDeviceLayer, ResolvedDevice};
use super::partition::PartitionLayer;
use super::raid::RaidLayer;

pub use self::luks::{CIPHER, KEY_SIZE};

/// LUKS2-encrypted volumes, their keys sealed to the TPM 2.0.
#[derive(Debug, Clone, Copy, Default)]
pub struct EncryptionLayer;

/// Where the TPM 2.0 is looked for: the kernel's resource manager, or the
/// device systemd is told to use (`SYSTEMD_TPM2_DEVICE`).
fn tpm2_present() -> bool {
    std::env::var_os("SYSTEMD_TPM2_DEVICE").is_some()
        || std::fs::read_dir("/sys/class/tpmrm")
            .map(|mut entries| entries.next().is_some())
            .unwrap_or(false)
}

/// Upstream's checks of the recovery key file: there, a regular file, not
/// empty, no access for group or others. The key itself is not read.
fn check_recovery_key_file(path: &str) -> Result<(), TridentError> {
    let key = "Host Configuration key 'storage.encryption.recoveryKeyUrl'";
    let bad = |what: String| {
        TridentError::new(
            Subkind::InvalidRecoveryKeyFile,
            format!("{key}: the recovery key file '{path}' {what}"),
        )
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    if meta.len() == 0 {
        return Err(bad("is empty".into()));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(bad(format!(
            "has mode {mode:04o}: only its owner may have access (0400 or 0600)"
        )));
    }
    Ok(())
}

/// The configured and the recorded mapping names.
fn mapping_names(hc: &HostConfiguration, status: &HostStatus) -> Vec<String> {
    let mut names: Vec<String> = status
        .encrypted_volumes
        .values()
        .map(|v| v.device_name.clone())
        .chain(
            hc.storage
                .encryption
                .iter()
                .flat_map(|e| &e.volumes)
                .map(|v| v.device_name.clone()),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The device under an encrypted volume, as the layer below recorded it:
/// a partition or a RAID array (the storage graph allows no other).
fn backing_device(
    device_id: &str,
    status: &HostStatus,
) -> Result<ResolvedDevice, BlockDeviceError> {
    if status.raid_arrays.contains_key(device_id) {
        RaidLayer.resolve(device_id, status)
    } else {
        PartitionLayer.resolve(device_id, status)
    }
}

/// Creates volume `i` of `encryption` on `device`, opened, with `key`.
fn create_volume(
    encryption: &Encryption,
    i: usize,
    device: &ResolvedDevice,
    key: &Path,
) -> Result<EncryptedVolumeStatus, TridentError> {
    let volume = &encryption.volumes[i];
    let extent = device.extent();
    let node = LoopNode::attach(extent.backing, extent.offset, extent.size)?;
    let pcrs = encryption.tpm2_pcrs_arg();
    luks::format(node.path(), key)?;
    luks::enroll_tpm2(node.path(), key, &pcrs, luks::TPM2_AUTO)?;
    luks::open_with_key(node.path(), &volume.device_name, key)?;
    if encryption.recovery_key_path().is_none() {
        // After the open, as upstream: the temporary key was the only
        // passphrase, and from now on the TPM alone opens the volume.
        luks::wipe_passphrase_slots(node.path())?;
    }
    let status = EncryptedVolumeStatus {
        device_name: volume.device_name.clone(),
        device_id: volume.device_id.clone(),
        luks_uuid: luks::uuid(node.path())?,
        size: luks::mapped_size(&volume.device_name)?,
        pcrs: encryption.pcr_numbers(),
        recovery_key: encryption.recovery_key_path().is_some(),
    };
    tracing::info!(volume = %volume.id, device = %volume.device_id, mapping = %status.path(),
        pcrs = %pcrs, recovery_key = status.recovery_key, "encrypted volume created and opened");
    Ok(status)
}

impl BlockDeviceLayer for EncryptionLayer {
    fn kind(&self) -> DeviceKind {
        DeviceKind::EncryptedVolume
    }

    fn preflight(&self, hc: &HostConfiguration) -> Result<(), TridentError> {
        let Some(encryption) = &hc.storage.encryption else {
            return Ok(());
        };
        if let Some(path) = encryption.recovery_key_path() {
            check_recovery_key_file(path)?;
        }
        if !tpm2_present() {
            return Err(TridentError::new(
                Subkind::TpmUnavailable,
                format!(
                    "Host Configuration key 'storage.encryption': {} volume(s) to seal to the \
                     TPM 2.0, but this host has none (no /sys/class/tpmrm/*)",
                    encryption.volumes.len()
                ),
            ));
        }
        Ok(())
    }

    fn create(&self, hc: &HostConfiguration, status: &mut HostStatus) -> Result<(), TridentError> {
        status.encrypted_volumes.clear();
        let Some(encryption) = &hc.storage.encryption else {
            return Ok(());
        };
        let temp_key;
        let key = match encryption.recovery_key_path() {
            Some(path) => Path::new(path),
            None => {
                temp_key = TempKey::new()?;
                temp_key.path()
            }
        };
        for (i, volume) in encryption.volumes.iter().enumerate() {
            let at = format!("storage.encryption.volumes[{i}]");
            let device = backing_device(&volume.device_id, status)
                .map_err(|e| e.at(&format!("Host Configuration key '{at}.deviceId'")))?;
            let created = create_volume(encryption, i, &device, key).with_context(|| {
                format!(
                    "Encrypting '{}' ({at}) on '{}' as /dev/mapper/{}",
                    volume.id, volume.device_id, volume.device_name
                )
            })?;
            status.encrypted_volumes.insert(volume.id.clone(), created);
        }
        Ok(())
    }

    fn open(&self, status: &HostStatus) -> Result<(), TridentError> {
        if status.encrypted_volumes.is_empty() {
            return Ok(());
        }
        for (id, volume) in &status.encrypted_volumes {
            let device = backing_device(&volume.device_id, status).map_err(|e| {
                TridentError::new(
                    Subkind::OpenEncryptedVolume,
                    format!("Encrypted volume '{id}': {e}"),
                )
            })?;
            let extent = device.extent();
            let node = LoopNode::attach(extent.backing, extent.offset, extent.size)?;
            let open_already = luks::is_active(&volume.device_name)?;
            let name = (!open_already).then_some(volume.device_name.as_str());
            if let Err(why) = luks::open_with_tpm2(node.path(), name)? {
                let pcrs: Vec<String> = volume.pcrs.iter().map(u8::to_string).collect();
                return Err(TridentError::new(
                    Subkind::TpmUnsealFailed,
                    format!(
                        "Encrypted volume '{id}' ({}): the TPM 2.0 did not unseal its key, \
                         sealed to PCR {}: the PCRs changed since the install (firmware, \
                         Secure Boot state or keys); nothing was written. Open it with the \
                         recovery key and re-enroll the TPM (systemd-cryptenroll \
                         --wipe-slot=tpm2 --tpm2-device=auto --tpm2-pcrs={}). cryptsetup: {why}",
                        volume.path(),
                        pcrs.join(", "),
                        pcrs.join("+"),
                    ),
                ));
            }
            tracing::info!(volume = %id, mapping = %volume.path(), open_already,
                "encrypted volume unsealed by the TPM 2.0");
        }
        Ok(())
    }

    fn close(&self, hc: &HostConfiguration, status: &HostStatus) -> Result<(), TridentError> {
        for name in mapping_names(hc, status) {
            // No mapping of that name: nothing to ask cryptsetup about.
            if Path::new("/dev/mapper").join(&name).exists() && luks::is_active(&name)? {
                luks::close(&name)?;
                tracing::info!(mapping = %name, "pre-existing encrypted volume closed");
            }
        }
        Ok(())
    }

    fn resolve(&self, id: &str, status: &HostStatus) -> Result<ResolvedDevice, BlockDeviceError> {
        match status.encrypted_volumes.get(id) {
            Some(volume) => Ok(ResolvedDevice::EncryptedVolume {
                id: id.to_owned(),
                path: volume.path(),
                size: volume.size,
            }),
            None => Err(BlockDeviceError::NotRecorded {
                id: id.to_owned(),
                kind: DeviceKind::EncryptedVolume,
            }),
        }
    }
}
