use super::*;
use crate::status::{AbVolume, ServicingState};

fn temp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/datastore.sqlite");
    (dir, path)
}

fn started(ds: &mut Datastore, id: &str, kind: &str, rpc: &str) {
    ds.operation_started(&OperationStart {
        id,
        kind,
        rpc,
        trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
        root_span_id: "00f067aa0ba902b7",
    })
    .unwrap();
}

#[test]
fn the_operation_that_recorded_the_status_is_found_with_its_trace_and_root_span() {
    let (_dir, path) = temp();
    let mut ds = Datastore::open(&path).unwrap();
    assert!(ds.status_operation().unwrap().is_none());
    started(&mut ds, "update", "ab-update", "Update");
    let finalized = HostStatus {
        servicing_state: ServicingState::AbUpdateFinalized,
        ab_active_volume: Some(AbVolume::VolumeA),
        ..HostStatus::default()
    };
    let end = OperationEnd {
        result: OperationResult::Success,
        error: None,
    };
    ds.commit(Some(&finalized), Some("update"), Some(&end))
        .unwrap();
    // A later operation that records no status does not take its place.
    started(&mut ds, "check", "none-required", "CheckRoot");
    ds.commit(None, Some("check"), Some(&end)).unwrap();
    let pending = ds.status_operation().unwrap().unwrap();
    assert_eq!(pending.id, "update");
    assert_eq!(pending.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(pending.root_span_id.as_deref(), Some("00f067aa0ba902b7"));
}

#[test]
fn a_schema_1_datastore_is_migrated_and_its_operations_have_no_root_span() {
    let (_dir, path) = temp();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE schema_version (version INTEGER NOT NULL);
             INSERT INTO schema_version (version) VALUES (1);
             CREATE TABLE host_status (id INTEGER PRIMARY KEY AUTOINCREMENT, recorded_at TEXT NOT NULL,
                 operation_id TEXT, servicing_state TEXT NOT NULL, ab_active_volume TEXT, status_json TEXT NOT NULL);
             CREATE TABLE operations (id TEXT PRIMARY KEY, kind TEXT NOT NULL, rpc TEXT NOT NULL,
                 started_at TEXT NOT NULL, ended_at TEXT, result TEXT NOT NULL, trace_id TEXT NOT NULL, error_json TEXT);
             INSERT INTO operations VALUES ('old', 'clean-install', 'Install', '2026-01-01T00:00:00Z', NULL, 'success', 'abc', NULL);",
        )
        .unwrap();
    }
    // Read-only (diagnose of an old file): readable as it is.
    let ro = Datastore::open_read_only(&path).unwrap();
    assert_eq!(ro.schema_version().unwrap(), 1);
    assert_eq!(ro.operation("old").unwrap().unwrap().root_span_id, None);
    drop(ro);
    let ds = Datastore::open(&path).unwrap();
    assert_eq!(ds.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(ds.operations(10).unwrap()[0].root_span_id, None);
}

#[test]
fn a_new_datastore_is_migrated_and_reports_not_provisioned() {
    let (_dir, path) = temp();
    let ds = Datastore::open(&path).unwrap();
    assert_eq!(ds.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(
        ds.host_status().unwrap().servicing_state,
        ServicingState::NotProvisioned
    );
    let mode: String = ds
        .conn()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    drop(ds);
    // Reopening does not re-run migrations.
    assert_eq!(
        Datastore::open(&path).unwrap().schema_version().unwrap(),
        SCHEMA_VERSION
    );
}

#[test]
fn state_change_and_operation_end_are_one_commit() {
    let (_dir, path) = temp();
    let mut ds = Datastore::open(&path).unwrap();
    started(&mut ds, "op1", "clean-install", "InstallStage");
    let status = HostStatus {
        servicing_state: ServicingState::CleanInstallStaged,
        ab_active_volume: Some(AbVolume::VolumeA),
        ..HostStatus::default()
    };
    let end = OperationEnd {
        result: OperationResult::Success,
        error: None,
    };
    ds.commit(Some(&status), Some("op1"), Some(&end)).unwrap();
    let ro = Datastore::open_read_only(&path).unwrap();
    assert_eq!(
        ro.host_status().unwrap().servicing_state,
        ServicingState::CleanInstallStaged
    );
    let op = ro.operation("op1").unwrap().unwrap();
    assert_eq!(op.result, OperationResult::Success);
    assert!(op.ended_at.is_some());
    assert_eq!(ro.history(10).unwrap().len(), 1);
    assert_eq!(ro.operations(10).unwrap()[0].rpc, "InstallStage");
}

#[test]
fn running_operations_are_marked_interrupted_on_recovery() {
    let (_dir, path) = temp();
    let mut ds = Datastore::open(&path).unwrap();
    let provisioned = HostStatus {
        servicing_state: ServicingState::Provisioned,
        ab_active_volume: Some(AbVolume::VolumeA),
        ..HostStatus::default()
    };
    ds.save_status(&provisioned, None).unwrap();
    started(&mut ds, "op2", "ab-update", "UpdateStage");
    drop(ds);
    let mut ds = Datastore::open(&path).unwrap();
    let interrupted = ds.recover_interrupted().unwrap();
    assert_eq!(interrupted.len(), 1);
    let status = ds.host_status().unwrap();
    assert_eq!(status.servicing_state, ServicingState::Provisioned);
    assert_eq!(status.ab_active_volume, Some(AbVolume::VolumeA));
    let err = status.last_error.unwrap();
    assert_eq!(err.subkind, "interrupted");
    assert_eq!(err.operation_id.as_deref(), Some("op2"));
    assert_eq!(
        ds.operation("op2").unwrap().unwrap().result,
        OperationResult::Interrupted
    );
    assert!(ds.recover_interrupted().unwrap().is_empty());
}

#[test]
fn read_only_open_of_a_missing_file_fails_with_initialization() {
    let (_dir, path) = temp();
    let err = Datastore::open_read_only(&path).unwrap_err();
    assert_eq!(err.category(), crate::error::Category::Initialization);
}

#[test]
fn a_damaged_file_is_refused_at_open_naming_it() {
    let (_dir, path) = temp();
    let mut ds = Datastore::open(&path).unwrap();
    ds.save_status(&HostStatus::default(), None).unwrap();
    drop(ds); // Checkpoints the WAL into the file.
    let mut bytes = std::fs::read(&path).unwrap();
    let len = bytes.len();
    assert!(len > 8192, "more than one page: {len}");
    // Scribble over every page but the first (schema, header).
    for b in &mut bytes[4096..] {
        *b = 0xa5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = Datastore::open(&path).unwrap_err();
    assert_eq!(err.subkind(), Subkind::OpenDatastore, "{}", err.report());
    assert!(
        err.report().contains(&path.display().to_string()),
        "{}",
        err.report()
    );
}

/// A configuration with one secret script variable holding `token`.
fn secret_config(token: &str) -> crate::config::HostConfiguration {
    serde_json::from_value(serde_json::json!({
        "scripts": {"postConfigure": [{
            "name": "enrol",
            "environmentVariables": {"API_TOKEN": token, "REGION": "eu-west-9"},
            "content": "true"
        }]}
    }))
    .unwrap()
}

#[test]
fn the_exported_copy_holds_no_secret_of_any_row_and_the_live_file_is_untouched() {
    let (_dir, path) = temp();
    let mut ds = Datastore::open(&path).unwrap();
    for token in ["tok-old-5e4d", "tok-new-9c8b"] {
        let status = HostStatus {
            spec_old: ds.host_status().unwrap().spec,
            spec: Some(secret_config(token)),
            ..HostStatus::default()
        };
        ds.save_status(&status, None).unwrap();
    }
    // The daemon's connection stays open: the rows are still in the WAL.
    let export = Datastore::open_read_only(&path)
        .unwrap()
        .export_redacted()
        .unwrap();
    let text = String::from_utf8_lossy(&export);
    for secret in ["tok-old-5e4d", "tok-new-9c8b"] {
        assert!(!text.contains(secret), "{secret} in the export");
    }
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join("copy.sqlite");
    std::fs::write(&copy, &export).unwrap();
    let copied = Datastore::open_read_only(&copy).unwrap();
    let rows = copied.history(10).unwrap();
    assert_eq!(rows.len(), 2, "every row is in the copy");
    let env =
        &rows[0].status.spec.as_ref().unwrap().scripts.post_configure[0].environment_variables;
    assert_eq!(env["API_TOKEN"], crate::redact::REDACTED);
    assert_eq!(env["REGION"], "eu-west-9");
    let live = ds.host_status().unwrap().spec.unwrap();
    assert_eq!(
        live.scripts.post_configure[0].environment_variables["API_TOKEN"],
        "tok-new-9c8b"
    );
}

#[test]
fn a_snapshot_copies_status_and_operation_history_and_replaces_an_old_file() {
    let (dir, path) = temp();
    let mut ds = Datastore::open(&path).unwrap();
    started(&mut ds, "op1", "ab-update", "Update");
    let status = HostStatus {
        servicing_state: ServicingState::AbUpdateFinalized,
        ab_active_volume: Some(AbVolume::VolumeA),
        ..HostStatus::default()
    };
    ds.commit(Some(&status), None, None).unwrap();
    // The target volume's own (stale) datastore is replaced, WAL and all.
    let copy = dir.path().join("other/var/lib/trident/datastore.sqlite");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::write(&copy, "stale").unwrap();
    std::fs::write(format!("{}-wal", copy.display()), "stale").unwrap();
    ds.snapshot_to(&copy).unwrap();
    assert!(!std::path::Path::new(&format!("{}-wal", copy.display())).exists());
    // The copy is a datastore of its own: it takes further commits.
    let mut handed = Datastore::open(&copy).unwrap();
    assert_eq!(
        handed.host_status().unwrap().servicing_state,
        ServicingState::AbUpdateFinalized
    );
    let end = OperationEnd {
        result: OperationResult::Success,
        error: None,
    };
    handed.commit(None, Some("op1"), Some(&end)).unwrap();
    assert_eq!(
        handed.operation("op1").unwrap().unwrap().result,
        OperationResult::Success
    );
    // ... and the original is untouched by them.
    assert!(ds.operation("op1").unwrap().unwrap().ended_at.is_none());
}
