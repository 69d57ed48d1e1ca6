//! `/etc/crypttab` of the new root (upstream's `subsystems/storage/
//! encryption.rs::configure`): one line per encrypted volume the install
//! created, named by its LUKS2 UUID, unlocked at boot by the TPM 2.0
//! (`tpm2-device=auto`; when the TPM refuses, systemd-cryptsetup asks for
//! the recovery key on the console). A volume under swap is set up as
//! upstream does it: a fresh random key every boot, formatted as swap
//! (plain dm-crypt, so it is named by its partition's PARTUUID: the LUKS2
//! header does not survive the first boot). Without encrypted volumes, an
//! image's crypttab is removed, as upstream does.

use std::path::Path;

use trident_host::{ResultExt, Subkind, TridentError};

use super::volume::VolumeRoot;
use crate::block_device::encryption::{CIPHER, KEY_SIZE};

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
/// Resolved inside the new root; removing removes a symlink, never its
/// target.
pub fn write_crypttab(root: &VolumeRoot<'_>) -> Result<(), TridentError> {
    let path = Path::new("/etc/crypttab");
    match render(root)? {
        Some(text) => {
            root.dir
                .write_file(path, text.as_bytes(), 0o600)
                .structured_msg(Subkind::CreateCrypttab, "Cannot write /etc/crypttab")?;
            tracing::info!(
                volumes = root.devices.encrypted_volumes().len(),
                "crypttab written into the new root"
            );
        }
        None => {
            let removed = root
                .dir
                .remove_file(path)
                .structured_msg(Subkind::CreateCrypttab, "Cannot remove /etc/crypttab")?;
            if removed {
                tracing::info!("crypttab removed: no encrypted volumes");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests fail loudly on purpose

    use std::collections::BTreeMap;
    use std::path::Path;

    use trident_host::status::{AbVolume, EncryptedVolumeStatus, HostStatus, PartitionLayout};

    use super::{render, write_crypttab};
    use crate::block_device::BlockDevices;
    use crate::new_root::fstab::write_fstab;
    use crate::new_root::hostile_root::HostileRoot;
    use crate::new_root::partitions::PartitionInfo;
    use crate::new_root::root_dir::RootDir;
    use crate::new_root::volume::VolumeRoot;

    const YAML: &str = r#"
image: { url: "file:///img.cosi", sha384: ignored }
storage:
  disks:
  - id: os
    device: /tmp/disk.img
    partitionTableType: gpt
    partitions:
    - { id: esp, type: esp, size: 8M }
    - { id: root, type: root, size: 16M }
    - { id: secret, type: linux-generic, size: 32M }
    - { id: swp, type: swap, size: 8M }
  encryption:
    pcrs: [7]
    volumes:
    - { id: srv-crypt, deviceName: srv, deviceId: secret }
    - { id: swap-crypt, deviceName: cswap, deviceId: swp }
  filesystems:
  - { deviceId: esp, mountPoint: /boot/efi }
  - { deviceId: root, mountPoint: / }
  - { deviceId: srv-crypt, source: new, type: ext4, mountPoint: /srv }
  swap: [swap-crypt]
"#;

    fn volume(name: &str, device: &str, uuid: &str) -> EncryptedVolumeStatus {
        EncryptedVolumeStatus {
            device_name: name.into(),
            device_id: device.into(),
            luks_uuid: uuid.into(),
            size: 1 << 20,
            pcrs: vec![7],
            recovery_key: true,
        }
    }

    /// The configuration, its devices (two encrypted volumes recorded)
    /// and every partition's identity.
    fn host() -> (
        trident_host::config::HostConfiguration,
        BlockDevices,
        BTreeMap<String, PartitionInfo>,
    ) {
        let hc = trident_host::config::parse(YAML).unwrap();
        let mut status = HostStatus::default();
        for (id, number) in [("esp", 1), ("root", 2), ("secret", 3), ("swp", 4)] {
            let layout = PartitionLayout {
                disk_id: "os".into(),
                device: "/tmp/disk.img".into(),
                number,
                offset: u64::from(number) << 20,
                size: 1 << 20,
            };
            status.layout.insert(id.into(), layout);
        }
        status.encrypted_volumes.insert(
            "srv-crypt".into(),
            volume("srv", "secret", "11111111-2222-4333-8444-555555555555"),
        );
        status.encrypted_volumes.insert(
            "swap-crypt".into(),
            volume("cswap", "swp", "66666666-7777-4888-9999-000000000000"),
        );
        let devices = BlockDevices::new(&hc, &status).unwrap();
        let mut partitions = BTreeMap::new();
        for (id, n) in [("esp", 1), ("root", 2), ("secret", 3), ("swp", 4)] {
            partitions.insert(
                id.to_owned(),
                PartitionInfo {
                    id: id.into(),
                    layout: status.layout[id].clone(),
                    part_uuid: format!("aaaaaaaa-bbbb-4ccc-8ddd-{n:012}"),
                },
            );
        }
        (hc, devices, partitions)
    }

    #[test]
    fn volumes_unlock_with_the_tpm_and_swap_gets_a_fresh_key_every_boot() {
        let (hc, devices, partitions) = host();
        let dir = tempfile::tempdir().unwrap();
        let root_dir = RootDir::open(dir.path()).unwrap();
        let root = VolumeRoot {
            path: dir.path(),
            dir: &root_dir,
            hc: &hc,
            volume: AbVolume::VolumeA,
            devices: &devices,
            partitions: &partitions,
        };
        let text = render(&root).unwrap().unwrap();
        assert!(
            text.contains(
                "srv\tUUID=11111111-2222-4333-8444-555555555555\tnone\tluks,tpm2-device=auto\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "cswap\tPARTUUID=aaaaaaaa-bbbb-4ccc-8ddd-000000000004\t/dev/urandom\tswap,cipher=aes-xts-plain64,size=512\n"
            ),
            "{text}"
        );
        write_crypttab(&root).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("etc/crypttab")).unwrap(),
            text
        );

        // Without encrypted volumes an image's crypttab goes.
        let plain = BlockDevices::new(&hc, &HostStatus::default()).unwrap();
        let root = VolumeRoot {
            devices: &plain,
            ..root
        };
        assert!(render(&root).unwrap().is_none());
        write_crypttab(&root).unwrap();
        assert!(!Path::new(&dir.path().join("etc/crypttab")).exists());
    }

    /// Issue 37: crypttab, written and removed, stays inside a root whose
    /// symlinks point out of it; removing a link never removes its target.
    #[test]
    fn crypttab_stays_inside_a_root_whose_links_point_out() {
        let (hc, devices, partitions) = host();
        let plain = BlockDevices::new(&hc, &HostStatus::default()).unwrap();
        for hostile in HostileRoot::variants("/etc/crypttab") {
            let root_dir = hostile.dir();
            let root = VolumeRoot {
                path: &hostile.root,
                dir: &root_dir,
                hc: &hc,
                volume: AbVolume::VolumeA,
                devices: &devices,
                partitions: &partitions,
            };
            write_crypttab(&root).unwrap();
            hostile.assert_outside_untouched();
            assert!(
                hostile.landed().contains("luks,tpm2-device=auto"),
                "{}",
                hostile.variant
            );
            write_crypttab(&VolumeRoot {
                devices: &plain,
                ..root
            })
            .unwrap();
            hostile.assert_outside_untouched();
        }
    }

    /// Issue 37: fstab stays inside a root whose symlinks point out of it.
    #[test]
    fn fstab_stays_inside_a_root_whose_links_point_out() {
        let (hc, devices, partitions) = host();
        for hostile in HostileRoot::variants("/etc/fstab") {
            let root_dir = hostile.dir();
            let root = VolumeRoot {
                path: &hostile.root,
                dir: &root_dir,
                hc: &hc,
                volume: AbVolume::VolumeA,
                devices: &devices,
                partitions: &partitions,
            };
            write_fstab(&root).unwrap();
            hostile.assert_outside_untouched();
            assert!(hostile.landed().contains(" / "), "{}", hostile.variant);
        }
    }
}
