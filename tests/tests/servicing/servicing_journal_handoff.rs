//! The telemetry journal goes with the datastore to the volume that boots
//! next (record backend, disk-image file, real ext4 roots through loop
//! devices), so the volume that boots holds the host's whole history:
//! install finalize hands it to volume A, the update's finalize to B, the
//! failed commit back to A. Each time, the target's journal is read offline
//! (dumped from the image with debugfs): every operation of the datastore's
//! history is there with its records, original cursors, each record once;
//! the handed operation ends as the datastore says. Then a daemon started on
//! A's handed state (the volume that booted) answers GetLastError from its
//! bus with the full report of the commit that failed "on B", recent logs
//! and all. Needs root.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use trident_e2e::mini_os;
use trident_e2e::servicing_support::{Clients, FAILING_CHECK, Fixture};
use trident_e2e::{Daemon, daemon, watch_snapshot};
use trident_host::datastore::Datastore;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    GetLastErrorRequest, LastErrorOrigin, OperationEvent, Record, SpanEvent, StatusCode,
    WatchOptions, record, stream_event,
};

/// Copies `/var/lib/trident` of partition `name`'s root out of the image.
fn handed_state(disk: &Path, name: &str, dir: &Path) -> PathBuf {
    let out = dir.join(format!("{name}-state"));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    for what in ["datastore.sqlite", "journal"] {
        let request = format!("rdump /var/lib/trident/{what} {}", out.display());
        mini_os::debugfs(disk, name, &request);
    }
    out
}

/// What a journal says of one operation.
fn operation_events(records: &[Record], op: &str) -> Vec<(i32, i32)> {
    records
        .iter()
        .filter_map(|r| match &r.record {
            Some(record::Record::Operation(o)) if o.operation_id == op => Some((o.event, o.result)),
            _ => None,
        })
        .collect()
}

/// Span ids of operation `op` opened and never closed in `records`.
fn open_spans(records: &[Record], op: &str) -> Vec<String> {
    let mut open = Vec::new();
    for r in records {
        if let Some(record::Record::Span(s)) = &r.record
            && s.operation_id == op
        {
            if s.event == SpanEvent::Opened as i32 {
                open.push(s.span_id.clone());
            } else {
                open.retain(|id| *id != s.span_id);
            }
        }
    }
    open
}

/// Checks the journal of a handed state against its datastore and the
/// live bus: every operation there with its records, each record once.
async fn check_history(state: &Path, live: &Daemon, completed_live: &[String]) -> Vec<Record> {
    let records = trident_telemetry::journal::read_records(&state.join("journal")).unwrap();
    let cursors: Vec<(String, u64)> = records
        .iter()
        .map(|r| {
            let c = r.cursor.clone().expect("cursor");
            (c.run_id, c.sequence)
        })
        .collect();
    let unique: HashSet<_> = cursors.iter().collect();
    assert_eq!(unique.len(), cursors.len(), "a record handed twice");
    let datastore = Datastore::open_read_only(state.join("datastore.sqlite")).unwrap();
    let history = datastore.operations(100).unwrap();
    assert!(!history.is_empty());
    for op in &history {
        let events = operation_events(&records, &op.id);
        assert_eq!(
            events.first().map(|e| e.0),
            Some(OperationEvent::Started as i32),
            "{}: {events:?}",
            op.id
        );
        assert!(
            events
                .iter()
                .any(|e| e.0 == OperationEvent::Completed as i32),
            "{} never ends in the handed journal: {events:?}",
            op.id
        );
        let logs = records
            .iter()
            .filter(
                |r| matches!(&r.record, Some(record::Record::Log(l)) if l.operation_id == op.id),
            )
            .count();
        assert!(logs > 0, "{}: no log records", op.id);
    }
    // Operations that had ended before the handover: exactly the records
    // the live bus has, with the same cursors, in the same order.
    let mut telemetry = TelemetryServiceClient::new(live.channel().await.unwrap());
    for op in completed_live {
        let events = watch_snapshot(
            &mut telemetry,
            WatchOptions {
                operation_id: op.clone(),
                ..Default::default()
            },
            Duration::from_secs(60),
        )
        .await
        .unwrap();
        let live_cursors: Vec<(String, u64)> = events
            .iter()
            .filter_map(|e| match &e.event {
                Some(stream_event::Event::Record(r)) => {
                    r.cursor.clone().map(|c| (c.run_id, c.sequence))
                }
                _ => None,
            })
            .collect();
        let handed: Vec<(String, u64)> = records
            .iter()
            .filter(|r| trident_telemetry::record::operation_of(r) == op.as_str())
            .filter_map(|r| r.cursor.clone().map(|c| (c.run_id, c.sequence)))
            .filter(|c| c.0 == live_cursors[0].0)
            .collect();
        assert_eq!(handed, live_cursors, "records of {op}");
    }
    records
}

#[tokio::test(flavor = "multi_thread")]
async fn the_journal_goes_with_the_datastore_and_the_booted_volume_answers_for_the_other() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: the new-root step needs root (loop devices, mount)");
        return;
    }
    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let d = daemon().await;
    let mut c = Clients::new(&d).await;
    let install = c.install(&f.config(&v1, "")).await;
    install.assert_success();
    let install_id = install.operation_id();
    let on_a = handed_state(&f.disk, "root-a", f.dir.path());
    let records = check_history(&on_a, &d, &[]).await;
    assert_eq!(
        operation_events(&records, &install_id).last(),
        Some(&(OperationEvent::Completed as i32, StatusCode::Success as i32)),
        "the install ends as the datastore says"
    );
    let commit_install = c.commit().await;
    commit_install.assert_success();

    let v2 = mini_os::build(f.dir.path(), "v2");
    let stage = c.update_stage(&f.config(&v2, FAILING_CHECK)).await;
    stage.assert_success();
    let finalize = c.update_finalize().await;
    finalize.assert_success();
    let on_b = handed_state(&f.disk, "root-b", f.dir.path());
    let ended = [
        install_id.clone(),
        commit_install.operation_id(),
        stage.operation_id(),
    ];
    let handed = check_history(&on_b, &d, &ended).await;
    assert_eq!(
        open_spans(&handed, &finalize.operation_id()),
        Vec::<String>::new(),
        "the finalize's spans open at the handover are closed in B's journal"
    );

    // The "reboot" into B: the commit's health check fails and hands the
    // journal back to A, which already holds the install's records.
    let commit = c.commit().await;
    assert!(!commit.succeeded());
    let back_on_a = handed_state(&f.disk, "root-a", f.dir.path());
    let records = check_history(&back_on_a, &d, &ended).await;
    assert_eq!(
        operation_events(&records, &commit.operation_id()).last(),
        Some(&(OperationEvent::Completed as i32, StatusCode::Failure as i32))
    );

    // The volume that booted (A's handed state): GetLastError answers from
    // the bus with the full report and the recent logs of B's commit.
    let booted = Daemon::builder()
        .state_dir(&back_on_a)
        .arg("--inactivity-timeout")
        .arg("0")
        .spawn()
        .await
        .unwrap();
    let answer = TelemetryServiceClient::new(booted.channel().await.unwrap())
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.origin, LastErrorOrigin::Bus as i32, "{answer:?}");
    let report = answer.error.expect("an error");
    assert_eq!(report.operation_id, commit.operation_id());
    assert_eq!(report.subkind, "health-check-failed");
    assert!(
        report.message.contains("never-healthy"),
        "{}",
        report.message
    );
    assert!(!report.recent_logs.is_empty(), "no recent logs: {report:?}");
    assert!(
        report
            .recent_logs
            .iter()
            .all(|l| l.operation_id == commit.operation_id())
    );
}
