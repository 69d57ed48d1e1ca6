//! `os.netplan`: the network configuration as a netplan file of the new
//! root, mode 0600 (netplan warns about, and newer versions refuse, files
//! others can read: they may hold Wi-Fi keys).

use std::path::Path;

use super::root_fs::{OsConfigError, write_file};

const KEY: &str = "os.netplan";
/// Where the configuration goes; sorts after the image's own files so its
/// values win.
pub const NETPLAN_FILE: &str = "etc/netplan/99-trident.yaml";

pub fn apply(
    root: &Path,
    netplan: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), OsConfigError> {
    // Upstream's contract: a netplan document with `version: 2` (the only
    // version netplan has).
    if netplan.get("version").and_then(serde_json::Value::as_u64) != Some(2) {
        return Err(OsConfigError::refused(
            format!("{KEY}.version"),
            "netplan needs 'version: 2'",
        ));
    }
    let text =
        serde_saphyr::to_string(&serde_json::json!({ "network": netplan })).map_err(|e| {
            OsConfigError::refused(
                KEY,
                format!("cannot write the netplan document as YAML: {e}"),
            )
        })?;
    let text = format!("# Written by Trident from the Host Configuration (os.netplan).\n{text}");
    write_file(&root.join(NETPLAN_FILE), text.as_bytes(), 0o600, KEY)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_root::TestRoot;
    use super::*;

    fn doc(yaml: &str) -> serde_json::Map<String, serde_json::Value> {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn writes_the_network_section_mode_0600() {
        let root = TestRoot::new();
        let netplan = doc(
            "version: 2\nethernets:\n  uplink:\n    match:\n      name: eth*\n    dhcp4: true\n",
        );
        apply(root.path(), &netplan).unwrap();
        assert_eq!(root.mode(NETPLAN_FILE), 0o600);
        let written: serde_json::Value = serde_saphyr::from_str(&root.read(NETPLAN_FILE)).unwrap();
        assert_eq!(written["network"]["version"], 2);
        assert_eq!(
            written["network"]["ethernets"]["uplink"]["match"]["name"],
            "eth*"
        );
        assert_eq!(written["network"]["ethernets"]["uplink"]["dhcp4"], true);
    }

    #[test]
    fn a_document_without_version_2_is_refused() {
        let root = TestRoot::new();
        let err = apply(root.path(), &doc("ethernets: {}\n")).unwrap_err();
        assert_eq!(err.key(), "os.netplan.version");
        assert!(!root.path().join(NETPLAN_FILE).exists());
    }
}
