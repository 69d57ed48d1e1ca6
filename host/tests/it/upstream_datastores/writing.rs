//! What tridentd writes lands in upstream's table too, in upstream's
//! format, upstream's own rows untouched: checked with our reader of
//! upstream's format (and by upstream's binary in `upstream_binary.rs`).

use std::path::Path;

use serde_json::Value;
use trident_host::datastore::upstream::format;
use trident_host::datastore::{Datastore, RollbackKind, Winner, Writer};
use trident_host::status::{AbVolume, HostStatus, ServicingState};

use super::{copy, ours};

/// Upstream's rows of a datastore: `(id, contents)`, oldest first.
pub fn upstream_rows(path: &Path) -> Vec<(i64, String)> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT id, contents FROM hoststatus ORDER BY id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// The newest upstream row, read by our reader of upstream's format.
pub fn newest_upstream(path: &Path) -> format::Decoded {
    let rows = upstream_rows(path);
    format::decode(&rows.last().unwrap().1).unwrap()
}

/// tridentd's A/B update of a provisioned host, as its engine records
/// it: staged (new configuration, the old one kept), finalized, and
/// committed after the reboot on the other volume. Returns the
/// committed status.
pub fn ab_update(ds: &mut Datastore) -> HostStatus {
    let current = ds.host_status().unwrap();
    assert_eq!(current.servicing_state, ServicingState::Provisioned);
    let mut next = current.clone();
    next.trident_version = env!("CARGO_PKG_VERSION").to_owned();
    // A step that succeeds clears the last error (the engine's runner).
    next.last_error = None;
    next.spec_old = current.spec.clone();
    let spec = next.spec.as_mut().unwrap();
    spec.image.as_mut().unwrap().url = "https://images.example.com/azl3-3.0.9.cosi".into();
    spec.os.hostname = Some("host-3.0.9".into());
    next.servicing_state = ServicingState::AbUpdateStaged;
    ds.save_status(&next, Some("update-1")).unwrap();
    next.servicing_state = ServicingState::AbUpdateFinalized;
    ds.save_status(&next, Some("update-1")).unwrap();
    next.servicing_state = ServicingState::Provisioned;
    next.ab_active_volume = current.ab_active_volume.map(AbVolume::other);
    ds.save_status(&next, Some("commit-1")).unwrap();
    next
}

#[test]
fn tridentd_stages_finalizes_and_commits_on_a_fixture_and_upstreams_rows_stay() {
    let (_dir, path) = copy("state-provisioned");
    let before = upstream_rows(&path);
    let mut ds = Datastore::open(&path).unwrap();
    let original = ds.host_status().unwrap();
    let committed = ab_update(&mut ds);
    assert_eq!(ds.winner().unwrap(), Winner::Ours);

    let after = upstream_rows(&path);
    assert_eq!(after.len(), before.len() + 3);
    assert_eq!(after[..before.len()], before[..], "upstream's rows changed");
    let states: Vec<String> = after[before.len()..]
        .iter()
        .map(|(_, text)| {
            format::decode(text)
                .unwrap()
                .status
                .servicing_state
                .to_string()
        })
        .collect();
    assert_eq!(
        states,
        ["ab-update-staged", "ab-update-finalized", "provisioned"]
    );

    let newest = newest_upstream(&path);
    assert_eq!(newest.status.servicing_state, ServicingState::Provisioned);
    assert_eq!(newest.status.ab_active_volume, Some(AbVolume::VolumeB));
    assert_eq!(
        newest.trident_version,
        format::stamp(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(ours(&newest.status)["spec"], ours(&committed)["spec"]);
    // The old configuration is upstream's, as upstream wrote it (with the
    // `internalParams` our model does not hold).
    let first = format::decode(&before.last().unwrap().1).unwrap();
    assert_eq!(newest.document["specOld"], first.document["spec"]);
    assert_eq!(
        newest.document["specOld"]["internalParams"]["injectedHostStatus"],
        Value::Bool(true)
    );
    assert_eq!(
        newest.document["partitionPaths"],
        first.document["partitionPaths"]
    );
    assert_eq!(newest.document["diskUuids"], first.document["diskUuids"]);

    // The history interleaves: ours (with their operations) after upstream's.
    let history = ds.history(10).unwrap();
    assert_eq!(history[0].writer, Writer::Tridentd);
    assert_eq!(history[0].operation_id.as_deref(), Some("commit-1"));
    assert_eq!(history[3].writer, Writer::Upstream);
    // Upstream's rule offers the A/B update back: to volume A, the
    // configuration upstream installed.
    let chain = ds.rollback_chain().unwrap();
    assert_eq!(chain.len(), 1);
    assert_eq!(chain[0].kind, RollbackKind::Ab);
    assert_eq!(chain[0].ab_active_volume, Some(AbVolume::VolumeA));
    assert_eq!(
        ours(&HostStatus {
            spec: chain[0].spec.clone(),
            ..original.clone()
        })["spec"],
        ours(&original)["spec"]
    );
}

#[test]
fn a_new_datastore_of_ours_has_upstreams_table_with_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datastore.sqlite");
    let mut ds = Datastore::open(&path).unwrap();
    assert!(upstream_rows(&path).is_empty());
    let mut status = HostStatus {
        servicing_state: ServicingState::CleanInstallStaged,
        trident_version: "0.1.0".into(),
        ..HostStatus::default()
    };
    ds.save_status(&status, Some("install-1")).unwrap();
    status.servicing_state = ServicingState::Provisioned;
    status.ab_active_volume = Some(AbVolume::VolumeA);
    status.disk_uuids.insert("os".into(), "not-a-uuid".into());
    ds.save_status(&status, Some("install-1")).unwrap();
    let rows = upstream_rows(&path);
    assert_eq!(rows.len(), 2);
    let newest = newest_upstream(&path);
    assert_eq!(newest.status.servicing_state, ServicingState::Provisioned);
    // Upstream reads diskUuids as UUIDs: one that is not is left out.
    assert!(newest.status.disk_uuids.is_empty());
    assert_eq!(ds.host_status().unwrap().disk_uuids["os"], "not-a-uuid");
}

#[test]
fn our_datastores_from_before_keep_working_and_gain_upstreams_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datastore.sqlite");
    let provisioned = HostStatus {
        servicing_state: ServicingState::Provisioned,
        ab_active_volume: Some(AbVolume::VolumeA),
        install_index: 2,
        trident_version: "0.1.0".into(),
        ..HostStatus::default()
    };
    let json = serde_json::to_string(&provisioned).unwrap();
    {
        // Schema 2, as this build's predecessor left it.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version (version) VALUES (2);
             CREATE TABLE host_status (id INTEGER PRIMARY KEY AUTOINCREMENT, recorded_at TEXT NOT NULL,
                 operation_id TEXT, servicing_state TEXT NOT NULL, ab_active_volume TEXT, status_json TEXT NOT NULL);
             CREATE TABLE operations (id TEXT PRIMARY KEY, kind TEXT NOT NULL, rpc TEXT NOT NULL,
                 started_at TEXT NOT NULL, ended_at TEXT, result TEXT NOT NULL, trace_id TEXT NOT NULL,
                 error_json TEXT, root_span_id TEXT);",
        )
        .unwrap();
        for state in ["clean-install-finalized", "provisioned"] {
            conn.execute(
                "INSERT INTO host_status (recorded_at, operation_id, servicing_state, status_json) \
                 VALUES ('2026-01-01T00:00:00Z', 'install', ?1, ?2)",
                [
                    state,
                    &json.replace("\"provisioned\"", &format!("\"{state}\"")),
                ],
            )
            .unwrap();
        }
    }
    // Read-only (diagnose): our rows, as before.
    let ro = Datastore::open_read_only(&path).unwrap();
    assert_eq!(ro.host_status().unwrap().install_index, 2);
    assert_eq!(ro.history(10).unwrap().len(), 2);
    drop(ro);
    let ds = Datastore::open(&path).unwrap();
    assert_eq!(ds.schema_version().unwrap(), 3);
    assert_eq!(ds.winner().unwrap(), Winner::Ours);
    assert_eq!(ds.host_status().unwrap().install_index, 2);
    let rows = upstream_rows(&path);
    assert_eq!(rows.len(), 2);
    let newest = newest_upstream(&path);
    assert_eq!(newest.status.servicing_state, ServicingState::Provisioned);
    assert_eq!(newest.status.install_index, 2);
    let history = ds.history(10).unwrap();
    assert_eq!(history.len(), 2);
    assert!(history.iter().all(|row| row.writer == Writer::Tridentd));
}
