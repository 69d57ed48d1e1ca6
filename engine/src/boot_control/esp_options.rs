//! Where a GRUB volume's `Boot####` options point: the ESP's partition,
//! or, for an ESP on a RAID1 mirror, each member partition. A mirror is
//! created with metadata 1.0 (superblock at the end), so the firmware reads
//! every member as a plain FAT; one option per member, all with the
//! volume's label, lets it boot from whichever disk is left, as upstream
//! (`engine/bootentries.rs`: `EspDevice::Raid`, one entry per member with
//! the same label).

use trident_host::config::HostConfiguration;
use trident_host::status::HostStatus;
use trident_host::{Subkind, TridentError};

use super::load_option::HardDrive;
use crate::block_device::ResolvedDevice;
use crate::block_device::partition::LBA_SIZE;
use crate::new_root::partitions::read_partitions;

/// The `HD()` node of every partition holding the ESP `device`: the
/// partition itself, or each member of its mirror in the configuration's
/// order. A member whose disk's GPT does not have it (a replaced disk not
/// rebuilt yet) is left out; at least one must be there.
pub fn esp_partitions(
    hc: &HostConfiguration,
    status: &HostStatus,
    device: &ResolvedDevice,
) -> Result<Vec<HardDrive>, TridentError> {
    let ids: Vec<&str> = match device {
        ResolvedDevice::Partition { id, .. } => vec![id.as_str()],
        ResolvedDevice::RaidArray { id, .. } => hc
            .storage
            .raid
            .software
            .iter()
            .find(|array| &array.id == id)
            .map(|array| array.devices.iter().map(String::as_str).collect())
            .unwrap_or_default(),
        // The ESP is never encrypted (the storage graph's rule): no
        // partition to name, which the caller reports.
        ResolvedDevice::EncryptedVolume { .. } => Vec::new(),
    };
    let mut found = Vec::new();
    for id in &ids {
        let Some(layout) = status.layout.get(*id) else {
            continue;
        };
        let one = [((*id).to_owned(), layout.clone())].into_iter().collect();
        let part_uuid = match read_partitions(&one) {
            Ok(info) => info.get(*id).and_then(|p| p.part_uuid.parse().ok()),
            Err(e) if ids.len() > 1 => {
                tracing::warn!(member = %id, error = %e,
                    "an ESP mirror member is not on its disk: no boot option for it");
                continue;
            }
            Err(e) => return Err(e),
        };
        let Some(part_uuid) = part_uuid else {
            continue;
        };
        found.push(HardDrive {
            number: layout.number,
            start_lba: layout.offset / LBA_SIZE,
            size_lba: layout.size / LBA_SIZE,
            part_uuid,
        });
    }
    if found.is_empty() {
        return Err(TridentError::new(
            Subkind::BootControl,
            format!(
                "The ESP '{}' has no partition with a known GUID",
                device.id()
            ),
        ));
    }
    Ok(found)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::block_device::partition::create_table;

    /// Two disk-image files whose ESPs are a mirror, partitioned as an
    /// install partitions them.
    fn mirrored(dir: &std::path::Path) -> (HostConfiguration, HostStatus) {
        let disks = [dir.join("d1.img"), dir.join("d2.img")];
        for disk in &disks {
            std::fs::File::create(disk)
                .unwrap()
                .set_len(64 << 20)
                .unwrap();
        }
        let yaml = format!(
            r#"
image: {{ url: "file:///img.cosi", sha384: ignored }}
storage:
  disks:
  - {{ id: d1, device: {}, partitions: [{{ id: esp1, type: esp, size: 16M }}, {{ id: root1, type: root, size: 16M }}] }}
  - {{ id: d2, device: {}, partitions: [{{ id: esp2, type: esp, size: 16M }}, {{ id: root2, type: root, size: 16M }}] }}
  raid:
    software:
    - {{ id: esp, name: esp, level: raid1, devices: [esp1, esp2] }}
    - {{ id: root, name: root, level: raid1, devices: [root1, root2] }}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
"#,
            disks[0].display(),
            disks[1].display()
        );
        let hc = trident_host::config::parse(&yaml).unwrap();
        let mut status = HostStatus::default();
        for (d, disk) in hc.storage.disks.iter().enumerate() {
            status
                .layout
                .extend(create_table(d, disk).unwrap().partitions);
        }
        (hc, status)
    }

    fn array() -> ResolvedDevice {
        ResolvedDevice::RaidArray {
            id: "esp".to_owned(),
            path: "/dev/md/esp".to_owned(),
            size: 16 << 20,
        }
    }

    #[test]
    fn an_esp_mirror_has_one_boot_partition_per_member_present() {
        let dir = tempfile::tempdir().unwrap();
        let (hc, status) = mirrored(dir.path());
        let partitions = read_partitions(&status.layout).unwrap();
        let guid = |id: &str| partitions[id].part_uuid.parse::<uuid::Uuid>().unwrap();
        let found = esp_partitions(&hc, &status, &array()).unwrap();
        assert_eq!(
            found.iter().map(|hd| hd.part_uuid).collect::<Vec<_>>(),
            vec![guid("esp1"), guid("esp2")],
            "the members in the configuration's order"
        );
        assert_eq!(found[1].number, status.layout["esp2"].number);
        assert_eq!(found[1].start_lba * LBA_SIZE, status.layout["esp2"].offset);
        // A plain ESP partition: itself.
        let plain = ResolvedDevice::Partition {
            id: "esp1".to_owned(),
            layout: status.layout["esp1"].clone(),
        };
        assert_eq!(
            esp_partitions(&hc, &status, &plain).unwrap(),
            vec![found[0].clone()]
        );

        // The second disk replaced by a blank one: its member is left out.
        std::fs::File::create(dir.path().join("d2.img"))
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let left = esp_partitions(&hc, &status, &array()).unwrap();
        assert_eq!(left, vec![found[0].clone()]);
        // Both gone: an error, no option without a partition.
        std::fs::File::create(dir.path().join("d1.img"))
            .unwrap()
            .set_len(64 << 20)
            .unwrap();
        let error = esp_partitions(&hc, &status, &array()).unwrap_err();
        assert!(error.to_string().contains("no partition"), "{error}");
    }
}
