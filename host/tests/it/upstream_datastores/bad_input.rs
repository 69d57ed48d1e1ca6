//! Bad input in upstream's table: a row that is not YAML or not a Host
//! Status fails naming the datastore and the row, and nothing is
//! overwritten; a newer upstream's unknown keys are kept with a note;
//! tables that disagree resolve to the most recently written; a datastore
//! on a read-only filesystem is read, and refused for writing by name.

use std::path::Path;

use trident_host::Subkind;
use trident_host::datastore::upstream::format;
use trident_host::datastore::{Datastore, Winner};
use trident_host::status::ServicingState;

use super::copy;
use super::writing::{ab_update, newest_upstream, upstream_rows};

fn set_newest_row(path: &Path, contents: &str) -> i64 {
    let conn = rusqlite::Connection::open(path).unwrap();
    let id: i64 = conn
        .query_row("SELECT max(id) FROM hoststatus", [], |r| r.get(0))
        .unwrap();
    conn.execute(
        "UPDATE hoststatus SET contents = ?1 WHERE id = ?2",
        rusqlite::params![contents, id],
    )
    .unwrap();
    id
}

#[test]
fn a_row_that_is_not_yaml_or_not_a_host_status_fails_naming_the_datastore_and_row() {
    for (contents, says) in [
        ("spec: [unclosed\n", "is not valid YAML"),
        (
            "serdeyaml: but-not-host-status\n",
            "is not a Host Status: missing field `servicingState`",
        ),
        (
            "spec: {}\nservicingState: sideways\ninstallIndex: 0\n",
            "is not a Host Status: field `servicingState`",
        ),
    ] {
        let (_dir, path) = copy("state-provisioned");
        let id = set_newest_row(&path, contents);
        let before = upstream_rows(&path);
        for ds in [
            Datastore::open_read_only(&path).unwrap(),
            Datastore::open(&path).unwrap(),
        ] {
            let error = ds.host_status().unwrap_err();
            assert_eq!(error.subkind(), Subkind::LoadHostStatus);
            let message = error.message().to_owned();
            assert!(message.contains(&path.display().to_string()), "{message}");
            assert!(
                message.contains(&format!("row {id} of upstream's table hoststatus")),
                "{message}"
            );
            assert!(message.contains(says), "{message}");
            assert!(ds.history(10).is_err());
        }
        assert_eq!(upstream_rows(&path), before, "overwritten");
    }
}

#[test]
fn an_unreadable_older_row_ends_the_rollback_chain_as_upstreams_does() {
    let (_dir, path) = copy("history-ab-update");
    let conn = rusqlite::Connection::open(&path).unwrap();
    // Row 7 is the runtime update's provisioned state before it.
    conn.execute(
        "UPDATE hoststatus SET contents = 'not: [yaml' WHERE id = 7",
        [],
    )
    .unwrap();
    let ds = Datastore::open_read_only(&path).unwrap();
    assert_eq!(ds.rollback_chain().unwrap().len(), 1);
    assert_eq!(
        ds.host_status().unwrap().servicing_state,
        ServicingState::Provisioned
    );
}

#[test]
fn a_newer_upstreams_unknown_keys_are_kept_with_a_note() {
    let (_dir, path) = copy("state-provisioned");
    let text = upstream_rows(&path).last().unwrap().1.clone();
    let newer = format!("{text}bootHealth:\n  attempts: 2\n").replace(
        "  internalParams:",
        "  telemetry:\n    endpoint: https://example.com\n  internalParams:",
    );
    set_newest_row(&path, &newer);
    let mut ds = Datastore::open(&path).unwrap();
    let status = ds.host_status().unwrap();
    assert_eq!(status.servicing_state, ServicingState::Provisioned);
    let notes = ds.upstream_notes().unwrap().join("\n");
    assert!(
        notes.contains("`spec.telemetry`") && notes.contains("`bootHealth`"),
        "{notes}"
    );
    assert!(notes.contains("kept as written"), "{notes}");
    // Written back as they were: the row tridentd writes next has them.
    ab_update(&mut ds);
    let newest = newest_upstream(&path);
    assert_eq!(newest.document["bootHealth"]["attempts"], 2);
    assert_eq!(
        newest.document["specOld"]["telemetry"]["endpoint"],
        "https://example.com"
    );
}

#[test]
fn when_the_tables_disagree_the_most_recently_written_wins() {
    let (_dir, path) = copy("state-provisioned");
    let mut ds = Datastore::open(&path).unwrap();
    ab_update(&mut ds);
    assert_eq!(ds.winner().unwrap(), Winner::Ours);
    // Upstream's agent, put back, stages an update of its own.
    let mut theirs = newest_upstream(&path).document;
    theirs["servicingState"] = "ab-update-staged".into();
    theirs["tridentVersion"] = "0.27.0".into();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO hoststatus (contents) VALUES (?1)",
        [serde_saphyr::to_string(&theirs).unwrap()],
    )
    .unwrap();
    let id = conn.last_insert_rowid();
    assert_eq!(ds.winner().unwrap(), Winner::Upstream(id));
    let status = ds.host_status().unwrap();
    assert_eq!(status.servicing_state, ServicingState::AbUpdateStaged);
    assert_eq!(status.trident_version, "0.27.0");
    assert!(ds.upstream_notes().unwrap()[0].contains("upstream's agent wrote it after"));
    // tridentd's next write is based on it, and ours again.
    let mut next = status;
    next.servicing_state = ServicingState::AbUpdateFinalized;
    ds.save_status(&next, Some("finalize")).unwrap();
    assert_eq!(ds.winner().unwrap(), Winner::Ours);
    assert_eq!(
        format::decode(&upstream_rows(&path).last().unwrap().1)
            .unwrap()
            .status
            .servicing_state,
        ServicingState::AbUpdateFinalized
    );
}

/// The inside of the next test, run in a mount namespace where the
/// datastore's folder is a read-only bind mount.
#[test]
fn read_only_inner() {
    let Ok(path) = std::env::var("TRIDENT_TEST_READ_ONLY_DATASTORE") else {
        return; // run by the test below only
    };
    let path = Path::new(&path);
    let before = std::fs::read(path).unwrap();
    let ds = Datastore::open_read_only(path).unwrap();
    assert_eq!(
        ds.host_status().unwrap().servicing_state,
        ServicingState::Provisioned
    );
    drop(ds);
    let error = Datastore::open(path).unwrap_err();
    assert_eq!(
        error.subkind(),
        Subkind::OpenDatastore,
        "{}",
        error.report()
    );
    assert!(
        error.report().contains(&path.display().to_string()),
        "{}",
        error.report()
    );
    assert_eq!(std::fs::read(path).unwrap(), before);
}

#[test]
fn a_read_only_datastore_is_read_and_refused_for_writing_by_name() {
    let (dir, path) = copy("state-provisioned");
    let script = r#"mount --make-rprivate / && mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && exec "$2" --exact "$3" --nocapture"#;
    // The inner test's name in this binary: its module path without the
    // crate's name, then the function.
    let inner = module_path!()
        .split_once("::")
        .map_or(String::new(), |(_, module)| {
            format!("{module}::read_only_inner")
        });
    let probe = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", "mount --make-rprivate /"])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: no private mount namespace here (needs unshare -m as root): {probe:?}");
        return;
    }
    let output = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", script, "sh"])
        .arg(dir.path())
        .arg(std::env::current_exe().unwrap())
        .arg(&inner)
        .env("TRIDENT_TEST_READ_ONLY_DATASTORE", &path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 passed"));
}
