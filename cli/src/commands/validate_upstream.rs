//! What `trident validate` warns about: documents this daemon accepts but
//! upstream Trident refuses, each named by upstream's rule, so a document
//! checked here is known to work on both (or known not to).
//!
//! Upstream's rules (its `trident_api` crate):
//! - `storage.disks[].partitionTableType` is a required field
//!   (`config/host/storage/disks.rs`); here it defaults to `gpt`.
//! - the datastore (`trident.datastorePath`, default
//!   `/var/lib/trident/datastore.sqlite`) must not be in an A/B update
//!   volume (`validate_datastore_location`,
//!   `DatastorePathInABUpdateVolume`), unless `trident.disable`; here the
//!   datastore is handed over to the volume that boots next.

use std::path::Path;

use serde_json::Value;
use trident_host::config::DEFAULT_DATASTORE_PATH;

/// One warning per upstream rule the document breaks (empty: none).
pub fn upstream_refusals(document: &Value) -> Vec<String> {
    let mut warnings = missing_partition_table_types(document);
    warnings.extend(datastore_in_ab_volume(document));
    warnings
}

fn missing_partition_table_types(document: &Value) -> Vec<String> {
    let disks = document
        .pointer("/storage/disks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    disks
        .iter()
        .enumerate()
        .filter(|(_, disk)| disk.get("partitionTableType").is_none())
        .map(|(index, disk)| {
            let id = disk.get("id").and_then(Value::as_str).unwrap_or("?");
            format!(
                "storage.disks[{index}] (id '{id}'): no partitionTableType; accepted here \
                 (gpt), but upstream Trident refuses it: the field is required there \
                 (partitionTableType: gpt)"
            )
        })
        .collect()
}

/// A filesystem's mount path: `mountPoint: /x` or `mountPoint: {path: /x}`.
fn mount_path(filesystem: &Value) -> Option<&str> {
    let mount = filesystem.get("mountPoint")?;
    mount
        .as_str()
        .or_else(|| mount.get("path").and_then(Value::as_str))
}

fn datastore_in_ab_volume(document: &Value) -> Option<String> {
    let disabled = document
        .pointer("/trident/disable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if disabled {
        return None;
    }
    let datastore = document
        .pointer("/trident/datastorePath")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_DATASTORE_PATH);
    let filesystems = document.pointer("/storage/filesystems")?.as_array()?;
    // The volume holding the datastore: the longest mount path above it.
    let (_, device) = filesystems
        .iter()
        .filter_map(|fs| Some((mount_path(fs)?, fs.get("deviceId")?.as_str()?)))
        .filter(|(mount, _)| Path::new(datastore).starts_with(mount))
        .max_by_key(|(mount, _)| Path::new(mount).components().count())?;
    let pairs = document
        .pointer("/storage/abUpdate/volumePairs")?
        .as_array()?;
    pairs
        .iter()
        .any(|pair| pair.get("id").and_then(Value::as_str) == Some(device))
        .then(|| {
            format!(
                "trident.datastorePath: the datastore '{datastore}' is in A/B update volume \
                 '{device}'; accepted here (the datastore is handed over to the volume that \
                 boots next), but upstream Trident refuses it: \"Datastore path cannot be in \
                 A/B update volume\""
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(yaml: &str) -> Value {
        serde_saphyr::from_str(yaml).expect("yaml")
    }

    #[test]
    fn each_upstream_rule_is_named_once_and_a_clean_document_has_none() {
        let broken = doc(
            "storage:\n  disks:\n  - id: os\n    device: /dev/sda\n  abUpdate:\n    volumePairs:\n    - { id: root, volumeAId: a, volumeBId: b }\n  filesystems:\n  - { deviceId: root, mountPoint: / }\n  - { deviceId: esp, mountPoint: { path: /boot/efi } }\n",
        );
        let warnings = upstream_refusals(&broken);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("storage.disks[0] (id 'os')"));
        assert!(warnings[1].contains("A/B update volume 'root'"));

        let clean = doc(
            "trident:\n  datastorePath: /var/lib/trident/datastore.sqlite\nstorage:\n  disks:\n  - { id: os, device: /dev/sda, partitionTableType: gpt }\n  abUpdate:\n    volumePairs:\n    - { id: root, volumeAId: a, volumeBId: b }\n  filesystems:\n  - { deviceId: root, mountPoint: / }\n  - { deviceId: var, mountPoint: /var/lib/trident }\n",
        );
        assert_eq!(upstream_refusals(&clean), Vec::<String>::new());
    }
}
