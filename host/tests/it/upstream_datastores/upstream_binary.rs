//! Upstream's own binary reads what tridentd wrote: `UPSTREAM_TRIDENT`
//! names upstream's `trident` (v0.27.0; skipped, saying so, when unset);
//! each datastore is put where upstream looks for it, in a private mount
//! namespace (tmpfs over /var/lib, /var/log, /run and /etc/trident), and
//! its `get status` and `get rollback-chain` must say what ours say.

use std::path::Path;

use serde_json::Value;
use trident_host::datastore::Datastore;
use trident_host::error::{Subkind, TridentError};
use trident_host::status::{HostStatus, ServicingState};

use super::writing::ab_update;
use super::{compare, copy, ours, ours_chain};

/// Upstream's `trident -v WARN get KIND` on the datastore at `path`.
fn upstream_get(trident: &str, path: &Path, kind: &str) -> Value {
    let script = r#"set -e
        mount --make-rprivate /
        for dir in /var/lib /var/log /run; do mount -t tmpfs none "$dir"; done
        if [ -d /etc/trident ]; then mount -t tmpfs none /etc/trident; fi
        mkdir -p /var/lib/trident
        cp "$2" /var/lib/trident/datastore.sqlite
        exec "$1" -v WARN get "$3""#;
    let output = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", script, "sh", trident])
        .arg(path)
        .arg(kind)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "upstream's get {kind}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_saphyr::from_str(&String::from_utf8_lossy(&output.stdout)).unwrap()
}

/// Upstream's `get status` and `get rollback-chain` agree with ours.
fn assert_upstream_agrees(trident: &str, what: &str, path: &Path) {
    let ds = Datastore::open_read_only(path).unwrap();
    let status = ds.host_status().unwrap();
    let theirs = upstream_get(trident, path, "status");
    let mut ours = ours(&status);
    // The version upstream reads is the stamp of our rows.
    ours["tridentVersion"] = theirs["tridentVersion"].clone();
    assert!(
        theirs["tridentVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("0.27.0+tridentd")),
        "{what}: {}",
        theirs["tridentVersion"]
    );
    compare::assert_status_matches(what, &ours, &theirs);
    let chain = upstream_get(trident, path, "rollback-chain");
    let chain = chain.as_array().cloned().unwrap_or_default();
    let ours = ours_chain(&ds);
    assert_eq!(ours.len(), chain.len(), "{what}: {chain:#?}");
    for (ours, theirs) in ours.iter().zip(&chain) {
        for key in ["kind", "abActiveVolume", "installIndex"] {
            assert_eq!(ours[key], theirs[key], "{what}: {key}");
        }
        compare::assert_config_matches(what, &ours["spec"], &theirs["spec"]);
    }
}

#[test]
fn upstreams_binary_reads_what_tridentd_wrote() {
    let Ok(trident) = std::env::var("UPSTREAM_TRIDENT") else {
        eprintln!(
            "SKIPPED: set UPSTREAM_TRIDENT to upstream Trident's binary (v0.27.0) to check \
             that it reads what tridentd wrote"
        );
        return;
    };
    // An A/B update by tridentd on each provisioned fixture.
    for name in [
        "state-provisioned",
        "raid-encryption",
        "history-manual-rollback",
    ] {
        let (_dir, path) = copy(name);
        let mut ds = Datastore::open(&path).unwrap();
        ab_update(&mut ds);
        drop(ds);
        assert_upstream_agrees(&trident, &format!("{name} + tridentd's A/B update"), &path);
    }
    // Then a failed update: our last error, in upstream's shape.
    let (_dir, path) = copy("state-provisioned");
    let mut ds = Datastore::open(&path).unwrap();
    let mut status: HostStatus = ds.host_status().unwrap();
    status.trident_version = env!("CARGO_PKG_VERSION").to_owned();
    status.last_error = Some(
        TridentError::new(
            Subkind::ImageHashMismatch,
            "The image's hash does not match",
        )
        .context("Staging the update")
        .record(),
    );
    ds.save_status(&status, Some("update-2")).unwrap();
    drop(ds);
    assert_upstream_agrees(&trident, "a last error of ours", &path);
    // A datastore tridentd made from nothing (a clean install of ours).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datastore.sqlite");
    let (_fixture_dir, fixture) = copy("state-provisioned");
    let mut installed = Datastore::open_read_only(&fixture)
        .unwrap()
        .host_status()
        .unwrap();
    installed.trident_version = env!("CARGO_PKG_VERSION").to_owned();
    let mut ds = Datastore::open(&path).unwrap();
    for state in [
        ServicingState::CleanInstallStaged,
        ServicingState::CleanInstallFinalized,
        ServicingState::Provisioned,
    ] {
        installed.servicing_state = state;
        ds.save_status(&installed, Some("install-1")).unwrap();
    }
    ab_update(&mut ds);
    drop(ds);
    assert_upstream_agrees(&trident, "tridentd's own install and update", &path);
}
