//! Upstream's own Host Status deserializer judges what tridentd writes into
//! upstream's table: `UPSTREAM_HOST_STATUS` names `upstream-host-status`
//! (tests/upstream-api/: upstream's `trident_api` crate, vendored unchanged,
//! and a small binary of ours that reads a datastore's newest `hoststatus`
//! row as upstream's agent does and prints it as upstream's `trident get
//! status` does; scripts/test.sh builds it and sets the variable; skipped,
//! saying so, when unset). Unlike `upstream_binary.rs` (upstream's whole
//! binary, not in CI), this runs in the test command.
//!
//! Every row tridentd writes, in every flow below, on every fixture and on
//! a datastore of its own, must be read by upstream's deserializer and say
//! what our `get status` said when it was written; each fixture reads to the
//! very bytes upstream's binary printed; and rows that are wrong for
//! upstream (a renamed key, a disk UUID that is not one) are refused, so the
//! check can fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use trident_host::datastore::upstream::format;
use trident_host::datastore::{Datastore, RollbackKind, Writer};
use trident_host::error::{Subkind, TridentError};
use trident_host::status::{AbVolume, HostStatus, ServicingState};

use super::writing::{ab_update, upstream_rows};
use super::{DATASTORES, compare, copy, fixtures, ours};

/// The tool, or `None` after saying the tests are skipped.
fn tool(test: &str) -> Option<PathBuf> {
    match std::env::var_os("UPSTREAM_HOST_STATUS") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            eprintln!(
                "SKIPPED ({test}): set UPSTREAM_HOST_STATUS to the upstream-host-status binary \
                 (cargo build --manifest-path tests/upstream-api/Cargo.toml; scripts/test.sh \
                 does) to check tridentd's rows with upstream's own Host Status deserializer"
            );
            None
        }
    }
}

/// Upstream's `get status` of the datastore at `path`, through upstream's
/// deserializer; `Err` with its stderr where upstream's agent would fail.
fn upstream_reads(tool: &Path, path: &Path) -> Result<String, String> {
    let output = Command::new(tool)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", tool.display()));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if output.status.success() {
        assert!(stderr.is_empty(), "{}: {stderr}", path.display());
        Ok(String::from_utf8(output.stdout).unwrap())
    } else {
        assert!(
            !stderr.is_empty(),
            "{}: failed without a reason",
            path.display()
        );
        Err(stderr)
    }
}

/// Upstream's deserializer reads `path` and agrees with `ours` (our `get
/// status` of the same row): normalised as `upstream_binary.rs` does, the
/// version upstream reads being the stamp of our rows.
fn assert_upstream_agrees(tool: &Path, what: &str, path: &Path, ours_status: &HostStatus) {
    let text = upstream_reads(tool, path)
        .unwrap_or_else(|why| panic!("{what}: upstream's deserializer refused it: {why}"));
    let theirs: Value = serde_saphyr::from_str(&text).unwrap();
    let mut ours = ours(ours_status);
    assert_eq!(
        theirs["tridentVersion"],
        Value::from(format::stamp(&ours_status.trident_version)),
        "{what}"
    );
    ours["tridentVersion"] = theirs["tridentVersion"].clone();
    compare::assert_status_matches(what, &ours, &theirs);
}

/// Every row tridentd wrote into upstream's table of `path` (the file
/// closed), each read by upstream's deserializer as the newest row (a copy
/// without the rows after it), against the status our row holds. Returns
/// how many were checked.
fn assert_every_row_of_ours_agrees(tool: &Path, what: &str, path: &Path) -> usize {
    let history = Datastore::open_read_only(path)
        .unwrap()
        .history(u32::MAX)
        .unwrap();
    let newest = history.first().map(|row| row.id);
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for row in history.iter().filter(|row| row.writer == Writer::Tridentd) {
        let state = format!(
            "{what}: row {} ({}, {})",
            row.id,
            row.status.servicing_state,
            row.operation_id.as_deref().unwrap_or("-")
        );
        if Some(row.id) == newest {
            // The file itself, as tridentd left it (and `get status`).
            let current = Datastore::open_read_only(path)
                .unwrap()
                .host_status()
                .unwrap();
            assert_upstream_agrees(tool, &state, path, &current);
        }
        let at = dir.path().join(format!("row-{}.sqlite", row.id));
        std::fs::copy(path, &at).unwrap();
        let conn = rusqlite::Connection::open(&at).unwrap();
        // A throw-away copy: no fsync.
        conn.pragma_update(None, "synchronous", "OFF").unwrap();
        conn.execute("DELETE FROM hoststatus WHERE id > ?1", [row.id])
            .unwrap();
        drop(conn);
        assert_upstream_agrees(tool, &state, &at, &row.status);
        checked += 1;
    }
    checked
}

/// The next Host Status of ours after `current` (the engine's `next_status`).
fn next(current: &HostStatus) -> HostStatus {
    let mut next = current.clone();
    next.trident_version = env!("CARGO_PKG_VERSION").to_owned();
    next
}

/// A failed step recorded in the current state, as the engine's runner
/// does (`lastError`, our error record, stamped with the operation).
fn record_failure(ds: &mut Datastore, operation: &str) {
    let mut status = next(&ds.host_status().unwrap());
    status.last_error = Some(
        TridentError::new(
            Subkind::ImageHashMismatch,
            "The image's hash does not match",
        )
        .context("Staging the update")
        .record()
        .stamped(operation, "4bf92f3577b34da6a3ce929d0e0e4736"),
    );
    ds.save_status(&status, Some(operation)).unwrap();
}

/// One successful step of tridentd's from `current` (lastError cleared,
/// as the runner does, except where the engine keeps it), or `None` where
/// tridentd has none (provisioned, or a runtime state it never enters).
fn step(current: &HostStatus, installed: &HostStatus) -> Option<(HostStatus, &'static str)> {
    let mut status = next(current);
    status.last_error = None;
    let operation = match current.servicing_state {
        ServicingState::NotProvisioned => {
            // A clean install of the configuration `installed` holds.
            status.spec = installed.spec.clone();
            status.spec_old = None;
            status.servicing_state = ServicingState::CleanInstallStaged;
            status.ab_active_volume = None;
            status.install_index = current.install_index + 1;
            "install"
        }
        ServicingState::CleanInstallStaged => {
            status.servicing_state = ServicingState::CleanInstallFinalized;
            "install-finalize"
        }
        ServicingState::AbUpdateStaged => {
            status.servicing_state = ServicingState::AbUpdateFinalized;
            "update-finalize"
        }
        ServicingState::ManualRollbackAbStaged => {
            status.servicing_state = ServicingState::ManualRollbackAbFinalized;
            "rollback-finalize"
        }
        ServicingState::CleanInstallFinalized => {
            status.servicing_state = ServicingState::Provisioned;
            status.ab_active_volume = Some(AbVolume::VolumeA);
            "commit"
        }
        ServicingState::AbUpdateFinalized | ServicingState::ManualRollbackAbFinalized => {
            // Booted the other volume: committed there.
            status.servicing_state = ServicingState::Provisioned;
            status.ab_active_volume = current.ab_active_volume.map(AbVolume::other);
            "commit"
        }
        ServicingState::AbUpdateHealthCheckFailed => {
            // Back on the old volume: its configuration current again, why
            // kept as the last error.
            status.servicing_state = ServicingState::Provisioned;
            status.last_error = current.last_error.clone();
            if let Some(running) = status.spec_old.take() {
                status.spec = Some(running);
            }
            "commit"
        }
        ServicingState::Provisioned
        | ServicingState::RuntimeUpdateStaged
        | ServicingState::ManualRollbackRuntimeStaged => return None,
    };
    Some((status, operation))
}

/// An A/B update whose commit fails its health checks: staged, finalized,
/// `ab-update-health-check-failed` with the error (the old volume's
/// configuration in `specOld`), then provisioned back on the old volume.
fn failed_ab_update(ds: &mut Datastore) {
    let current = ds.host_status().unwrap();
    let mut status = next(&current);
    status.spec_old = current.spec.clone();
    let spec = status.spec.as_mut().unwrap();
    spec.os.hostname = Some("host-broken".into());
    status.servicing_state = ServicingState::AbUpdateStaged;
    ds.save_status(&status, Some("update-2")).unwrap();
    status.servicing_state = ServicingState::AbUpdateFinalized;
    ds.save_status(&status, Some("update-2")).unwrap();
    status.servicing_state = ServicingState::AbUpdateHealthCheckFailed;
    status.last_error = Some(
        TridentError::new(
            Subkind::HealthCheckFailed,
            "Health checks failed: systemd-networkd is not active",
        )
        .context("Health checks after the reboot failed")
        .record()
        .stamped("commit-2", "0af7651916cd43dd8448eb211c80319c"),
    );
    ds.save_status(&status, Some("commit-2")).unwrap();
    let (back, _) = step(&status, &status).unwrap();
    ds.save_status(&back, Some("commit-3")).unwrap();
}

/// The manual rollback upstream's chain offers first, if an A/B one:
/// staged (the chain's configuration), finalized, committed on the other
/// volume.
fn manual_ab_rollback(ds: &mut Datastore) -> bool {
    let chain = ds.rollback_chain().unwrap();
    let Some(item) = chain.first().filter(|i| i.kind == RollbackKind::Ab) else {
        return false;
    };
    let current = ds.host_status().unwrap();
    let mut status = next(&current);
    status.last_error = None;
    status.spec_old = current.spec.clone();
    status.spec = item.spec.clone();
    status.servicing_state = ServicingState::ManualRollbackAbStaged;
    ds.save_status(&status, Some("rollback-1")).unwrap();
    while let Some((next, operation)) = step(&status, &status) {
        ds.save_status(&next, Some(operation)).unwrap();
        status = next;
    }
    true
}

/// tridentd's flows on an open datastore: a failure recorded in whatever
/// state it is in, its servicing carried on to provisioned, then an A/B
/// update, the A/B rollback upstream's chain then offers, an A/B update
/// that fails its health checks, and one more failure.
fn tridentd_services(what: &str, ds: &mut Datastore, installed: &HostStatus) {
    record_failure(ds, "refused-1");
    let mut current = ds.host_status().unwrap();
    while let Some((next, operation)) = step(&current, installed) {
        ds.save_status(&next, Some(operation)).unwrap();
        current = next;
    }
    if current.servicing_state != ServicingState::Provisioned {
        // A runtime state tridentd never enters: it records the refusal
        // (above) and leaves it.
        return;
    }
    ab_update(ds);
    assert!(
        manual_ab_rollback(ds),
        "{what}: no A/B rollback offered: {:?}",
        ds.rollback_chain().unwrap()
    );
    failed_ab_update(ds);
    record_failure(ds, "refused-2");
}

/// The provisioned status a clean install of ours records (the
/// configuration upstream installed on `state-provisioned`).
fn installed() -> HostStatus {
    let (_dir, path) = copy("state-provisioned");
    let mut status = Datastore::open_read_only(&path)
        .unwrap()
        .host_status()
        .unwrap();
    status.trident_version = env!("CARGO_PKG_VERSION").to_owned();
    status
}

#[test]
fn upstreams_deserializer_reads_each_fixture_as_upstreams_binary_printed_it() {
    let Some(tool) = tool("fixtures") else {
        return;
    };
    for name in DATASTORES {
        let (_dir, path) = copy(name);
        let printed = upstream_reads(&tool, &path)
            .unwrap_or_else(|why| panic!("{name}: upstream's deserializer refused it: {why}"));
        // What upstream's own binary printed, byte for byte: the tool is
        // upstream's reader and printer.
        let recorded =
            std::fs::read_to_string(fixtures().join(format!("{name}.get-status.yaml"))).unwrap();
        assert_eq!(printed, recorded, "{name}");
        // And our `get status` of the same file agrees.
        let theirs: Value = serde_saphyr::from_str(&printed).unwrap();
        let status = Datastore::open_read_only(&path)
            .unwrap()
            .host_status()
            .unwrap();
        compare::assert_status_matches(name, &ours(&status), &theirs);
    }
}

/// tridentd's flows on a copy of each fixture named, every row of ours
/// read by upstream's deserializer, and the copy handed to the next volume.
fn every_row_on_fixtures(test: &str, names: &[&str]) {
    let Some(tool) = tool(test) else {
        return;
    };
    let installed = installed();
    let mut checked = 0;
    for &name in names {
        let (_dir, path) = copy(name);
        let before = upstream_rows(&path).len();
        let mut ds = Datastore::open(&path).unwrap();
        tridentd_services(name, &mut ds, &installed);
        // The copy an A/B update hands to the volume it boots next.
        let snapshot = path.with_file_name("snapshot.sqlite");
        ds.snapshot_to(&snapshot).unwrap();
        drop(ds);
        assert!(
            upstream_rows(&path).len() > before,
            "{name}: nothing written"
        );
        checked += assert_every_row_of_ours_agrees(&tool, name, &path);
        let current = Datastore::open_read_only(&snapshot)
            .unwrap()
            .host_status()
            .unwrap();
        assert_upstream_agrees(&tool, &format!("{name} (snapshot)"), &snapshot, &current);
    }
    eprintln!("upstream's deserializer read {checked} rows of tridentd's");
}

// Two tests (the state fixtures, the others) so that the test runner can
// spread the work: each row is a copy and a process.
#[test]
fn upstreams_deserializer_reads_every_row_tridentd_writes_on_each_state_fixture() {
    let names: Vec<&str> = DATASTORES
        .into_iter()
        .filter(|n| n.starts_with("state-"))
        .collect();
    assert_eq!(names.len(), 11);
    every_row_on_fixtures("tridentd's rows, state-*", &names);
}

#[test]
fn upstreams_deserializer_reads_every_row_tridentd_writes_on_the_other_fixtures() {
    let names: Vec<&str> = DATASTORES
        .into_iter()
        .filter(|n| !n.starts_with("state-"))
        .collect();
    every_row_on_fixtures("tridentd's rows, other fixtures", &names);
}

#[test]
fn upstreams_deserializer_reads_a_datastore_tridentd_made_from_nothing() {
    let Some(tool) = tool("tridentd's own datastore") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("datastore.sqlite");
    let mut ds = Datastore::open(&path).unwrap();
    // A first status as the daemon records it on a new host.
    let fresh = HostStatus {
        trident_version: env!("CARGO_PKG_VERSION").to_owned(),
        ..HostStatus::default()
    };
    ds.save_status(&fresh, Some("install-0")).unwrap();
    tridentd_services("tridentd's own", &mut ds, &installed());
    drop(ds);
    let checked = assert_every_row_of_ours_agrees(&tool, "tridentd's own", &path);
    assert!(checked >= 14, "{checked}");
}

/// The newest row of a datastore, rewritten by `edit` (a string replace
/// that must change it).
fn edit_newest_row(path: &Path, from: &str, to: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let (id, contents): (i64, String) = conn
        .query_row(
            "SELECT id, contents FROM hoststatus ORDER BY id DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let edited = contents.replacen(from, to, 1);
    assert_ne!(edited, contents, "{from} not in:\n{contents}");
    conn.execute(
        "UPDATE hoststatus SET contents = ?1 WHERE id = ?2",
        rusqlite::params![edited, id],
    )
    .unwrap();
}

#[test]
fn upstreams_deserializer_refuses_rows_tridentd_must_never_write() {
    let Some(tool) = tool("refusals") else {
        return;
    };
    // Each is a row tridentd wrote, then broken the way a writer of
    // upstream's format could get it wrong.
    for (from, to, says) in [
        // A key upstream requires, renamed.
        (
            "\ninstallIndex:",
            "\ninstallIdx:",
            "missing field `installIndex`",
        ),
        (
            "\nservicingState:",
            "\nservicing_state:",
            "missing field `servicingState`",
        ),
        // A servicing state upstream does not know.
        (
            "servicingState: provisioned",
            "servicingState: committed",
            "unknown variant `committed`",
        ),
        // A renamed key where upstream's configuration denies unknown ones.
        ("volumeAId:", "volumeAID:", "unknown field `volumeAID`"),
        // A disk UUID that is not one (tridentd leaves such out).
        (
            "\ndiskUuids:\n  os: ",
            "\ndiskUuids:\n  os: not-a-uuid-",
            "UUID parsing failed",
        ),
    ] {
        let (_dir, path) = copy("state-provisioned");
        let mut ds = Datastore::open(&path).unwrap();
        ab_update(&mut ds);
        drop(ds);
        // As tridentd wrote it, upstream reads it.
        upstream_reads(&tool, &path).unwrap();
        edit_newest_row(&path, from, to);
        let Err(why) = upstream_reads(&tool, &path) else {
            panic!("upstream's deserializer took {to:?}");
        };
        assert!(why.contains(says), "{to:?}: {why}");
        assert!(
            why.contains("upstream's deserializer refuses it as a Host Status"),
            "{why}"
        );
    }
    // Not YAML at all: upstream fails before its Host Status type.
    let (_dir, path) = copy("state-provisioned");
    edit_newest_row(&path, "\nservicingState:", "\nservicingState: [unclosed");
    let why = upstream_reads(&tool, &path).unwrap_err();
    assert!(
        why.contains("upstream fails to parse Host Status as YAML"),
        "{why}"
    );
    // What tridentd does against the UUID refusal above: a disk UUID of
    // ours that is not one is left out of upstream's row, which upstream
    // then reads, with the disk UUIDs that are.
    let (_dir, path) = copy("state-provisioned");
    let mut ds = Datastore::open(&path).unwrap();
    let mut status = next(&ds.host_status().unwrap());
    let os_uuid = status.disk_uuids["os"].clone();
    status.disk_uuids.insert("data".into(), "not-a-uuid".into());
    ds.save_status(&status, Some("adopt-1")).unwrap();
    drop(ds);
    let theirs: Value = serde_saphyr::from_str(&upstream_reads(&tool, &path).unwrap()).unwrap();
    assert_eq!(theirs["diskUuids"], serde_json::json!({ "os": os_uuid }));
}
