//! `os.netplan`: the network configuration as a netplan file of the new
//! root, mode 0600 (netplan warns about, and newer versions refuse, files
//! others can read: they may hold Wi-Fi keys).

use std::path::Path;

use trident_host::{Subkind, TridentError};

use super::root_fs::{OsConfigError, write_file};
use crate::new_root::root_dir::RootDir;
use crate::new_root::tools::run_tool;

pub use trident_host::config::NETPLAN_FILE;

const KEY: &str = "os.netplan";

pub fn apply(
    root: &RootDir,
    netplan: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), OsConfigError> {
    let text = trident_host::config::netplan_file_text(netplan).map_err(|why| {
        let key = if why.contains("version") {
            format!("{KEY}.version")
        } else {
            KEY.to_owned()
        };
        OsConfigError::document(key, why)
    })?;
    write_file(root, Path::new(NETPLAN_FILE), text.as_bytes(), 0o600, KEY)
}

/// Runtime update: `os.netplan` (or its removal) on the RUNNING system at
/// `host_root`, then `netplan apply`, as upstream's runtime update does.
/// The one place this module touches the running system; only when the
/// daemon runs on it (`--host-root /`): netplan applies to the network
/// namespace it runs in.
pub fn apply_running(
    host_root: &Path,
    netplan: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Result<(), TridentError> {
    if host_root != Path::new("/") {
        return Err(TridentError::new(
            Subkind::ApplyRuntimeUpdate,
            format!(
                "Host Configuration key '{KEY}': netplan is applied only to the system the \
                 daemon runs on (--host-root is {})",
                host_root.display()
            ),
        ));
    }
    let root = RootDir::open(host_root).map_err(|e| {
        TridentError::with_source(
            Subkind::ApplyRuntimeUpdate,
            format!("Cannot open {}", host_root.display()),
            e,
        )
    })?;
    match netplan {
        Some(netplan) => apply(&root, netplan)?,
        None => match root.remove_file(Path::new(NETPLAN_FILE)) {
            Ok(_) => {}
            Err(e) => {
                return Err(TridentError::with_source(
                    Subkind::ApplyRuntimeUpdate,
                    format!("Cannot remove /{NETPLAN_FILE}"),
                    e,
                ));
            }
        },
    }
    run_tool("netplan", &["apply"], Subkind::ApplyRuntimeUpdate)?;
    Ok(())
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
        apply(&root.dir(), &netplan).unwrap();
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
        let err = apply(&root.dir(), &doc("ethernets: {}\n")).unwrap_err();
        assert_eq!(err.key(), "os.netplan.version");
        assert!(!root.path().join(NETPLAN_FILE).exists());
    }
}
