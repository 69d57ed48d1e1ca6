//! Datastores written by upstream Trident's own binary (v0.27.0,
//! tests/fixtures/upstream-datastores/, README there): tridentd reads the
//! Host Status upstream's `trident get status` prints and the rollback
//! chain its `get rollback-chain` prints; what tridentd writes, upstream's
//! reader takes (checked here by our reader of upstream's format, by
//! upstream's own Host Status deserializer when `UPSTREAM_HOST_STATUS` names
//! tests/upstream-api/'s `upstream-host-status`, as the test command does,
//! and by upstream's binary itself when `UPSTREAM_TRIDENT` names one); bad
//! input fails naming the datastore and the row, and overwrites nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly on purpose

mod bad_input;
mod compare;
mod upstream_binary;
mod upstream_deserializer;
mod writing;

use std::path::{Path, PathBuf};

use serde_json::Value;
use trident_host::datastore::{Datastore, RollbackKind, Writer};
use trident_host::status::HostStatus;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-datastores")
}

/// Every datastore of the folder, by name.
pub const DATASTORES: [&str; 18] = [
    "state-not-provisioned",
    "state-clean-install-staged",
    "state-clean-install-finalized",
    "state-provisioned",
    "state-ab-update-staged",
    "state-ab-update-finalized",
    "state-ab-update-health-check-failed",
    "state-runtime-update-staged",
    "state-manual-rollback-ab-staged",
    "state-manual-rollback-ab-finalized",
    "state-manual-rollback-runtime-staged",
    "raid-encryption",
    "history-ab-update",
    "history-manual-rollback",
    "takeover-clean-install-staged",
    "takeover-provisioned",
    "takeover-ab-update-staged",
    "takeover-ab-update-finalized",
];

/// A private copy of a fixture: `(its folder, the datastore path)`.
pub fn copy(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datastore.sqlite");
    std::fs::copy(fixtures().join(format!("{name}.sqlite")), &path).unwrap();
    (dir, path)
}

pub fn yaml_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What upstream's `get status` printed for a fixture.
pub fn upstream_status(name: &str) -> Value {
    yaml_file(&fixtures().join(format!("{name}.get-status.yaml")))
}

/// What upstream's `get rollback-chain` printed for a fixture.
pub fn upstream_chain(name: &str) -> Value {
    yaml_file(&fixtures().join(format!("{name}.get-rollback-chain.yaml")))
}

/// Our Host Status as `trident get status` prints it (YAML), as a value.
pub fn ours(status: &HostStatus) -> Value {
    serde_saphyr::from_str(&status.to_yaml().unwrap()).unwrap()
}

/// Our chain in upstream's `get rollback-chain` shape.
pub fn ours_chain(ds: &Datastore) -> Vec<Value> {
    ds.rollback_chain()
        .unwrap()
        .iter()
        .map(|item| {
            serde_json::json!({
                "kind": match item.kind { RollbackKind::Ab => "ab", RollbackKind::Runtime => "runtime" },
                "spec": item.spec,
                "abActiveVolume": item.ab_active_volume,
                "installIndex": item.install_index,
            })
        })
        .collect()
}

#[test]
fn each_fixture_reads_as_upstreams_get_status_prints_it() {
    for name in DATASTORES {
        let (_dir, path) = copy(name);
        let before = std::fs::read(&path).unwrap();
        // Read-only (diagnose): upstream's table alone, nothing written.
        let ro = Datastore::open_read_only(&path).unwrap();
        let status = ro
            .host_status()
            .unwrap_or_else(|e| panic!("{name}: {}", e.report()));
        compare::assert_status_matches(name, &ours(&status), &upstream_status(name));
        drop(ro);
        assert_eq!(std::fs::read(&path).unwrap(), before, "{name}: written to");
        // Read-write (the daemon): migrated, the same status.
        let ds = Datastore::open(&path).unwrap();
        let status = ds.host_status().unwrap();
        compare::assert_status_matches(name, &ours(&status), &upstream_status(name));
        assert!(
            ds.upstream_notes()
                .unwrap()
                .iter()
                .any(|n| n.contains("upstream Trident's newest row"))
        );
    }
}

#[test]
fn each_fixture_has_the_rollback_chain_upstream_computes() {
    for name in DATASTORES {
        let (_dir, path) = copy(name);
        let ds = Datastore::open_read_only(&path).unwrap();
        let expected = upstream_chain(name);
        let expected = expected.as_array().cloned().unwrap_or_default();
        let ours = ours_chain(&ds);
        assert_eq!(ours.len(), expected.len(), "{name}: {ours:#?}");
        for (ours, theirs) in ours.iter().zip(&expected) {
            for key in ["kind", "abActiveVolume", "installIndex"] {
                assert_eq!(ours[key], theirs[key], "{name}: {key}");
            }
            compare::assert_config_matches(name, &ours["spec"], &theirs["spec"]);
        }
    }
    // The histories offer what their README says.
    let (_dir, path) = copy("history-ab-update");
    let kinds: Vec<RollbackKind> = Datastore::open_read_only(&path)
        .unwrap()
        .rollback_chain()
        .unwrap()
        .iter()
        .map(|i| i.kind)
        .collect();
    assert_eq!(kinds, [RollbackKind::Ab, RollbackKind::Runtime]);
}

#[test]
fn the_history_is_upstreams_rows_newest_first() {
    let (_dir, path) = copy("history-manual-rollback");
    let ds = Datastore::open(&path).unwrap();
    let history = ds.history(100).unwrap();
    // offline-initialize wrote the first Host Status twice.
    assert_eq!(history.len(), 15);
    assert!(history.iter().all(|row| row.writer == Writer::Upstream));
    assert!(history.windows(2).all(|w| w[0].id > w[1].id));
    let states: Vec<String> = history
        .iter()
        .map(|row| row.status.servicing_state.to_string())
        .collect();
    assert_eq!(states[0], "provisioned");
    assert_eq!(states[1], "manual-rollback-ab-finalized");
    assert_eq!(states[14], "clean-install-staged");
}
