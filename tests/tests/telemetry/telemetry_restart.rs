//! A real servicing operation of tridentd survives a daemon restart: after
//! the restart its records replay from the journal (by operation id, and
//! after a cursor of the earlier run), it is listed, and its error is the
//! last error. The operation is an update requested on a host that was
//! never installed: it fails at once, without touching any disk.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use tokio_stream::StreamExt;
use trident_e2e::Channel;
use trident_e2e::{Daemon, watch_snapshot};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::update_service_client::UpdateServiceClient;
use trident_proto::v1::{
    GetLastErrorRequest, HostConfiguration, ListOperationsRequest, OperationEvent, Record,
    StageUpdateRequest, StatusCode, StreamEvent, WatchOptions, record, servicing_response,
    stream_event,
};

const STREAM_TIMEOUT: Duration = Duration::from_secs(60);

/// A Host Configuration that parses; the host is not provisioned, so
/// staging an update fails with an invalid-servicing-state error.
const CONFIG: &str =
    "image:\n  url: file:///nonexistent/image.cosi\n  sha384: ignored\nstorage:\n  disks: []\n";

async fn snapshot(
    client: &mut TelemetryServiceClient<Channel>,
    options: WatchOptions,
) -> Vec<StreamEvent> {
    watch_snapshot(client, options, STREAM_TIMEOUT)
        .await
        .unwrap()
}

fn records(events: &[StreamEvent]) -> Vec<&Record> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Some(stream_event::Event::Record(r)) => Some(r),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servicing_operation_replays_from_the_journal_after_a_daemon_restart() {
    let state = tempfile::tempdir().unwrap();
    let mut first = Daemon::builder()
        .state_dir(state.path())
        .spawn()
        .await
        .unwrap();

    // The operation, as its client sees it.
    let mut update = UpdateServiceClient::new(first.channel().await.unwrap());
    let mut stream = update
        .update_stage(StageUpdateRequest {
            config: Some(HostConfiguration {
                config: CONFIG.into(),
            }),
        })
        .await
        .unwrap()
        .into_inner();
    let (mut started, mut completed) = (None, None);
    while let Some(message) = tokio::time::timeout(STREAM_TIMEOUT, stream.next())
        .await
        .unwrap()
    {
        match message.unwrap().response {
            Some(servicing_response::Response::Started(s)) => started = Some(s),
            Some(servicing_response::Response::Completed(c)) => completed = Some(c),
            _ => {}
        }
    }
    let started = started.expect("Started");
    let completed = completed.expect("Completed");
    assert_eq!(completed.status, StatusCode::Failure as i32);
    let op_id = started.operation_id.clone();
    let first_cursor = started
        .cursor
        .clone()
        .expect("Started carries the bus cursor");

    // What the first run's bus holds about it, for comparison.
    let mut telemetry = TelemetryServiceClient::new(first.channel().await.unwrap());
    let live = snapshot(
        &mut telemetry,
        WatchOptions {
            operation_id: op_id.clone(),
            ..Default::default()
        },
    )
    .await;
    let live_seqs: Vec<u64> = records(&live)
        .iter()
        .map(|r| r.cursor.as_ref().unwrap().sequence)
        .collect();
    assert_eq!(
        live_seqs.first(),
        Some(&first_cursor.sequence),
        "Started.cursor names the operation's first record"
    );
    // The completed record is the operation's last (the root span closed
    // before it): read once the client's stream ended, the operation is
    // whole, however loaded the machine (the span's close used to come
    // after it and race this snapshot).
    assert!(
        matches!(
            records(&live).last().and_then(|r| r.record.as_ref()),
            Some(record::Record::Operation(o)) if o.event == OperationEvent::Completed as i32
        ),
        "the completed record ends the operation: {live:?}"
    );
    drop(telemetry);
    drop(update);
    // A clean exit: the journal was flushed (not a SIGKILL after a slow stop).
    let exit = first.stop();
    assert!(exit.is_some_and(|s| s.success()), "first daemon: {exit:?}");

    let second = Daemon::builder()
        .state_dir(state.path())
        .spawn()
        .await
        .unwrap();
    let mut telemetry = TelemetryServiceClient::new(second.channel().await.unwrap());

    let operations = telemetry
        .list_operations(ListOperationsRequest {})
        .await
        .unwrap()
        .into_inner()
        .operations;
    let listed = operations
        .iter()
        .find(|o| o.operation_id == op_id)
        .expect("listed after the restart");
    assert!(!listed.running);
    assert_eq!(listed.result, StatusCode::Failure as i32);
    assert_eq!(listed.first_cursor.as_ref(), Some(&first_cursor));

    let last_error = telemetry
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
        .error;
    assert_eq!(
        last_error
            .expect("last error from the journal")
            .operation_id,
        op_id
    );

    // By operation id: the same records, from disk.
    let replayed = snapshot(
        &mut telemetry,
        WatchOptions {
            operation_id: op_id.clone(),
            ..Default::default()
        },
    )
    .await;
    let replayed_records = records(&replayed);
    let replayed_seqs: Vec<u64> = replayed_records
        .iter()
        .map(|r| r.cursor.as_ref().unwrap().sequence)
        .collect();
    assert_eq!(replayed_seqs, live_seqs);
    let lifecycle: Vec<i32> = replayed_records
        .iter()
        .filter_map(|r| match &r.record {
            Some(record::Record::Operation(o)) => Some(o.event),
            _ => None,
        })
        .collect();
    assert_eq!(
        lifecycle,
        [
            OperationEvent::Started as i32,
            OperationEvent::Completed as i32
        ]
    );

    // After the first run's cursor: that run's rest, then the run change.
    let resumed = snapshot(
        &mut telemetry,
        WatchOptions {
            after: Some(first_cursor.clone()),
            ..Default::default()
        },
    )
    .await;
    let change = resumed
        .iter()
        .position(|e| matches!(&e.event, Some(stream_event::Event::RunChange(c)) if c.previous_run_id == first_cursor.run_id))
        .expect("run change");
    let before_change: Vec<u64> = records(&resumed[..change])
        .iter()
        .map(|r| r.cursor.as_ref().unwrap().sequence)
        .collect();
    assert_eq!(before_change, live_seqs[1..].to_vec());
}
