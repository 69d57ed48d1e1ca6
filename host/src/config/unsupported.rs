//! THE list of upstream Host Configuration keys this daemon parses but does
//! not apply yet. Using one (with a value other than its default) is an
//! unsupported-configuration error naming the key path, its line and, where
//! there is one, what to use instead. When the engine learns to apply a
//! feature, delete its rule here (and update the key table in
//! docs/host-configuration.md).

use super::storage_graph::ESP_MOUNT_POINT;
use super::{FileSystemType, FilesystemSource, HostConfiguration, OverrideEspMount, spans};
use crate::error::{Subkind, TridentError};

/// One refused feature.
#[derive(Debug)]
pub struct Rule {
    /// The key as documented (`[]` stands for any index).
    pub key: &'static str,
    /// What is not applied.
    pub what: &'static str,
    /// What to use instead, if anything.
    pub instead: Option<&'static str>,
    /// The concrete key paths of `hc` that use the feature.
    used: fn(&HostConfiguration) -> Vec<String>,
}

fn when(cond: bool, path: &str) -> Vec<String> {
    if cond {
        vec![path.to_owned()]
    } else {
        Vec::new()
    }
}

fn each<T>(items: &[T], base: &str, suffix: &str, uses: impl Fn(&T) -> bool) -> Vec<String> {
    items
        .iter()
        .enumerate()
        .filter(|(_, item)| uses(item))
        .map(|(i, _)| format!("{base}[{i}]{suffix}"))
        .collect()
}

/// Every refused feature, in document order of the keys.
pub const RULES: &[Rule] = &[
    Rule {
        key: "storage.encryption.clearTpmOnInstall",
        what: "clearing the TPM at install",
        instead: Some("clear the TPM before the install (tpm2_clear, or the firmware's setup)"),
        used: |hc| {
            when(
                hc.storage
                    .encryption
                    .as_ref()
                    .is_some_and(|e| e.clear_tpm_on_install == Some(true)),
                "storage.encryption.clearTpmOnInstall",
            )
        },
    },
    Rule {
        key: "storage.filesystems[].type: ntfs | tmpfs | auto (source: new)",
        what: "creating a filesystem of this type",
        instead: Some("ext4, xfs or vfat"),
        used: |hc| {
            each(
                &hc.storage.filesystems,
                "storage.filesystems",
                ".type",
                |f| {
                    f.source == Some(FilesystemSource::New)
                        && matches!(
                            f.fs_type,
                            Some(
                                FileSystemType::Ntfs | FileSystemType::Tmpfs | FileSystemType::Auto
                            )
                        )
                },
            )
        },
    },
    Rule {
        key: "storage.filesystems[].deviceId: the ESP on an adopted partition",
        what: "sharing an existing ESP (upstream's multiboot)",
        instead: Some("give the ESP a new partition (source: image)"),
        used: |hc| {
            each(
                &hc.storage.filesystems,
                "storage.filesystems",
                ".deviceId",
                |f| {
                    f.mount_point.path() == ESP_MOUNT_POINT
                        && hc
                            .storage
                            .disks
                            .iter()
                            .any(|d| d.adopted_partitions.iter().any(|a| a.id == f.device_id))
                },
            )
        },
    },
    Rule {
        key: "storage.filesystems[].overrideEspMount",
        what: "overriding which filesystem is the ESP",
        instead: Some("mount the ESP at /boot/efi"),
        used: |hc| {
            each(
                &hc.storage.filesystems,
                "storage.filesystems",
                ".overrideEspMount",
                |f| f.override_esp_mount != OverrideEspMount::UseDefault,
            )
        },
    },
    Rule {
        key: "storage.filesystems[] without mountPoint (source: new)",
        what: "creating a filesystem that is not mounted",
        instead: Some("give it a mountPoint, or leave the filesystem out"),
        used: |hc| {
            each(&hc.storage.filesystems, "storage.filesystems", "", |f| {
                f.mount_point.is_none() && f.effective_source() == FilesystemSource::New
            })
        },
    },
    Rule {
        key: "managementOs.users",
        what: "adding users to the running installer OS",
        instead: Some("log in with the installer media's own users"),
        used: |hc| when(!hc.management_os.users.is_empty(), "managementOs.users"),
    },
    Rule {
        key: "internalParams",
        what: "internal parameters",
        instead: None,
        used: |hc| when(hc.internal_params.is_some(), "internalParams"),
    },
];

/// Fails on the first refused feature that `hc` uses. `yaml` is the text
/// `hc` came from, to name the line.
pub(super) fn check(hc: &HostConfiguration, yaml: &str) -> Result<(), TridentError> {
    for rule in RULES {
        if let Some(path) = (rule.used)(hc).into_iter().next() {
            let instead = rule
                .instead
                .map(|i| format!("; instead: {i}"))
                .unwrap_or_default();
            return Err(TridentError::new(
                Subkind::UnsupportedFeature,
                format!(
                    "Host Configuration key '{path}'{}: {} is not supported by this daemon yet{instead}",
                    spans::describe(yaml, &path),
                    rule.what,
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::RULES;

    /// The key table of docs/host-configuration.md names every refused key,
    /// so the two cannot drift apart when a rule is added or removed.
    #[test]
    fn the_key_table_in_the_docs_lists_every_refused_key() {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/host-configuration.md"
        ))
        .unwrap();
        let start = doc.find("| key | status |").unwrap();
        let table = &doc[start..];
        for rule in RULES {
            // "storage.filesystems[].source: new" → "storage.filesystems[].source"
            let key = rule.key.split([':', ' ']).next().unwrap();
            assert!(
                table.contains(&format!("`{key}")),
                "docs/host-configuration.md's key table does not mention `{key}` ({})",
                rule.key
            );
        }
    }
}
