//! TelemetryService of the real tridentd over its Unix socket: following
//! what the daemon really emits (its connection and start-up logs), resume,
//! tail, filters, 100 subscribers, the absent self-telemetry loop, and
//! cursors across a daemon restart.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use tokio_stream::StreamExt;
use trident_e2e::Channel;
use trident_e2e::{Daemon, uds_channel, version, watch_snapshot};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    Cursor, GapReason, GetBusStatusRequest, ListOperationsRequest, Record, StreamEvent,
    WatchLogsRequest, WatchOptions, WatchRequest, WatchResponse, record, stream_event,
};

const ACCEPTED: &str = "connection accepted";
const STREAM_TIMEOUT: Duration = Duration::from_secs(30);

async fn telemetry(daemon: &Daemon) -> TelemetryServiceClient<Channel> {
    TelemetryServiceClient::new(daemon.channel().await.unwrap())
}

/// The cursor of the newest record right now.
async fn head(client: &mut TelemetryServiceClient<Channel>) -> Cursor {
    let status = client
        .get_bus_status(GetBusStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    Cursor {
        run_id: status.run_id,
        sequence: status.head_sequence,
    }
}

fn record_of(event: &StreamEvent) -> Option<&Record> {
    match &event.event {
        Some(stream_event::Event::Record(r)) => Some(r),
        _ => None,
    }
}

fn log_message(record: &Record) -> Option<&str> {
    match &record.record {
        Some(record::Record::Log(log)) => Some(&log.message),
        _ => None,
    }
}

fn target_of(record: &Record) -> Option<&str> {
    match &record.record {
        Some(record::Record::Log(log)) => Some(&log.target),
        Some(record::Record::Span(span)) => Some(&span.target),
        _ => None,
    }
}

/// Reads a following stream until `want` records matched `keep`.
async fn next_matching<S>(
    stream: &mut S,
    want: usize,
    keep: impl Fn(&Record) -> bool,
) -> Vec<Record>
where
    S: tokio_stream::Stream<Item = Result<Vec<StreamEvent>, tonic::Status>> + Unpin,
{
    let mut found = Vec::new();
    while found.len() < want {
        let events = tokio::time::timeout(STREAM_TIMEOUT, stream.next())
            .await
            .expect("records in time")
            .expect("stream open")
            .unwrap();
        found.extend(
            events
                .iter()
                .filter_map(record_of)
                .filter(|r| keep(r))
                .cloned(),
        );
    }
    found
}

async fn snapshot(
    client: &mut TelemetryServiceClient<Channel>,
    options: WatchOptions,
) -> Vec<StreamEvent> {
    watch_snapshot(client, options, STREAM_TIMEOUT)
        .await
        .unwrap()
}

fn batches(
    stream: tonic::Streaming<WatchResponse>,
) -> impl tokio_stream::Stream<Item = Result<Vec<StreamEvent>, tonic::Status>> + Unpin {
    stream.map(|r| r.map(|response| response.events))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_gets_each_new_connection_log_once_in_order_after_its_cursor() {
    let daemon = Daemon::start().await.unwrap();
    let mut client = telemetry(&daemon).await;
    let after = head(&mut client).await;
    let mut stream = client
        .watch_logs(WatchLogsRequest {
            options: Some(WatchOptions {
                after: Some(after.clone()),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner()
        .map(|r| r.map(|response| response.events));
    for _ in 0..5 {
        version(daemon.socket_path()).await.unwrap();
    }
    let accepted = next_matching(&mut stream, 5, |r| log_message(r) == Some(ACCEPTED)).await;
    let seqs: Vec<u64> = accepted
        .iter()
        .map(|r| r.cursor.as_ref().unwrap().sequence)
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert!(seqs[0] > after.sequence);
    for record in &accepted {
        assert_eq!(record.cursor.as_ref().unwrap().run_id, after.run_id);
        let Some(record::Record::Log(log)) = &record.record else {
            unreachable!()
        };
        assert!(log.target.starts_with("tridentd::"), "{}", log.target);
        assert!(log.fields.iter().any(|f| f.name == "uid"));
        assert!(log.location.is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_a_cursor_and_tail_return_exactly_the_expected_records() {
    let daemon = Daemon::start().await.unwrap();
    for _ in 0..6 {
        version(daemon.socket_path()).await.unwrap();
    }
    let mut client = telemetry(&daemon).await;
    let all = snapshot(&mut client, WatchOptions::default()).await;
    let records: Vec<&Record> = all.iter().filter_map(record_of).collect();
    assert!(
        records
            .iter()
            .any(|r| log_message(r) == Some("tridentd ready")),
        "start-up log on the bus"
    );
    assert!(matches!(
        all.last().unwrap().event,
        Some(stream_event::Event::EndOfSnapshot(_))
    ));
    let seqs: Vec<u64> = records
        .iter()
        .map(|r| r.cursor.as_ref().unwrap().sequence)
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "complete and ordered: {seqs:?}"
    );

    let middle = records[records.len() / 2].cursor.clone().unwrap();
    let resumed = snapshot(
        &mut client,
        WatchOptions {
            after: Some(middle.clone()),
            ..Default::default()
        },
    )
    .await;
    let resumed_seqs: Vec<u64> = resumed
        .iter()
        .filter_map(record_of)
        .map(|r| r.cursor.as_ref().unwrap().sequence)
        .collect();
    let expected: Vec<u64> = seqs
        .iter()
        .copied()
        .filter(|s| *s > middle.sequence)
        .collect();
    assert_eq!(&resumed_seqs[..expected.len()], &expected[..]);

    let tail = snapshot(
        &mut client,
        WatchOptions {
            tail: Some(3),
            target_prefixes: vec!["tridentd::server::listener".into()],
            ..Default::default()
        },
    )
    .await;
    let tail: Vec<&Record> = tail.iter().filter_map(record_of).collect();
    assert_eq!(tail.len(), 3);
    assert!(tail.iter().all(|r| log_message(r) == Some(ACCEPTED)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_transport_or_export_records_reach_the_bus_even_at_trace_level() {
    let daemon = Daemon::builder()
        .env("RUST_LOG", "trace")
        .spawn()
        .await
        .unwrap();
    for _ in 0..3 {
        version(daemon.socket_path()).await.unwrap();
    }
    let mut client = telemetry(&daemon).await;
    let _ = snapshot(&mut client, WatchOptions::default()).await;
    let events = snapshot(&mut client, WatchOptions::default()).await;
    let records: Vec<&Record> = events.iter().filter_map(record_of).collect();
    assert!(records.iter().any(|r| log_message(r) == Some(ACCEPTED)));
    const INTERNAL: &[&str] = &[
        "tonic",
        "h2",
        "hyper",
        "tower",
        "opentelemetry",
        "tracing_opentelemetry",
        "trident_telemetry",
    ];
    for record in &records {
        let target = target_of(record).unwrap_or("");
        assert!(
            !INTERNAL.iter().any(|t| target.starts_with(t)),
            "internal record on the bus: {record:?}"
        );
    }
    // They were emitted (the stderr log shows them), just not bused.
    let stderr = daemon.stderr();
    assert!(
        stderr.contains("h2::") || stderr.contains("tonic::") || stderr.contains("hyper"),
        "transport logs at trace"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_subscribers_each_see_the_same_new_records() {
    let daemon = Daemon::start().await.unwrap();
    let mut channels = Vec::new();
    for _ in 0..100 {
        channels.push(uds_channel(daemon.socket_path()).await.unwrap());
    }
    let mut client = telemetry(&daemon).await;
    let after = head(&mut client).await;
    let mut streams = Vec::new();
    for channel in channels {
        let mut subscriber = TelemetryServiceClient::new(channel);
        let stream = subscriber
            .watch(WatchRequest {
                options: Some(WatchOptions {
                    after: Some(after.clone()),
                    ..Default::default()
                }),
                kinds: vec![],
            })
            .await
            .unwrap()
            .into_inner();
        streams.push(batches(stream));
    }
    for _ in 0..3 {
        version(daemon.socket_path()).await.unwrap();
    }
    let mut seen = Vec::new();
    for stream in &mut streams {
        let accepted = next_matching(stream, 3, |r| log_message(r) == Some(ACCEPTED)).await;
        seen.push(
            accepted
                .iter()
                .map(|r| r.cursor.as_ref().unwrap().sequence)
                .collect::<Vec<_>>(),
        );
    }
    assert!(
        seen.iter().all(|s| *s == seen[0]),
        "every subscriber saw the same records"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_from_before_a_restart_is_recognised_and_the_stream_moves_to_the_new_run() {
    let state = tempfile::tempdir().unwrap();
    let mut first = Daemon::builder()
        .state_dir(state.path())
        .spawn()
        .await
        .unwrap();
    let mut client = telemetry(&first).await;
    let before = head(&mut client).await;
    drop(client);
    first.stop();
    assert!(
        state.path().join("journal").is_dir(),
        "the journal lives in STATE_DIR/journal"
    );

    let second = Daemon::builder()
        .state_dir(state.path())
        .spawn()
        .await
        .unwrap();
    let mut client = telemetry(&second).await;
    let now = head(&mut client).await;
    assert_ne!(now.run_id, before.run_id);
    let events = snapshot(
        &mut client,
        WatchOptions {
            after: Some(before.clone()),
            ..Default::default()
        },
    )
    .await;
    let change = events
        .iter()
        .position(|e| matches!(&e.event, Some(stream_event::Event::RunChange(c)) if c.previous_run_id == before.run_id && c.current_run_id == now.run_id))
        .expect("run change");
    // Nothing of the old run after the cursor is journaled (no servicing
    // happened): said with a PREVIOUS_RUN gap, never silently.
    assert!(events[..change].iter().all(|e| matches!(&e.event, Some(stream_event::Event::Gap(g)) if g.reason == GapReason::PreviousRun as i32)));
    let current: Vec<u64> = events[change..]
        .iter()
        .filter_map(record_of)
        .map(|r| r.cursor.as_ref().unwrap().sequence)
        .collect();
    assert_eq!(
        current.first(),
        Some(&1),
        "the new run from its first record"
    );
    let operations = client
        .list_operations(ListOperationsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(operations.operations.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_an_open_follow_stream_instead_of_waiting_out_the_grace_period() {
    // A grace period far longer than the wait below: only the daemon ending
    // the follower itself lets it exit in time.
    let mut daemon = Daemon::builder()
        .args(["--shutdown-grace", "10m"])
        .spawn()
        .await
        .unwrap();
    let mut client = telemetry(&daemon).await;
    let mut stream = client
        .watch_logs(WatchLogsRequest {
            options: Some(WatchOptions {
                tail: Some(5),
                ..WatchOptions::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    // The stream is live: it delivers the last records, then follows.
    let first = tokio::time::timeout(STREAM_TIMEOUT, stream.next()).await;
    assert!(matches!(first, Ok(Some(Ok(_)))), "{first:?}");

    daemon.signal(nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = daemon.wait_exit(Duration::from_secs(60)).await.unwrap();
    assert!(
        status.is_some_and(|s| s.success()),
        "daemon did not exit 0 while a follower was open: {status:?}\n{}",
        daemon.stderr()
    );
    // The follower saw its stream end (cleanly or by the connection closing),
    // never a hang.
    let rest = tokio::time::timeout(STREAM_TIMEOUT, async {
        while let Some(Ok(_)) = stream.next().await {}
    })
    .await;
    assert!(rest.is_ok(), "the follow stream did not end");
}
