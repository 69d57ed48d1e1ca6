//! A tunnel cut mid-stream: first the TCP connection is dropped under a
//! live agent (it redials by itself), then the agent is killed (a new one
//! starts, as systemd would restart it). Each time the host socket
//! disappears, comes back, and the orchestrator's Watch resumes from its
//! cursor with no record lost or repeated.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use tokio_stream::StreamExt;
use trident_e2e::Channel;
use trident_e2e::rcp_support::{
    AgentProc, ListenerProc, ORCHESTRATOR, Pki, Relay, WAIT, wait_path,
};
use trident_e2e::{daemon, uds_channel, watch_snapshot};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    Cursor, OperationEvent, Record, WatchOptions, WatchRequest, record, stream_event,
};
use trident_rcp::pki::LeafSpec;

/// An operation's full records on the bus, without touching a disk.
async fn failing_update(channel: Channel) {
    trident_e2e::failing_update_stage(channel, WAIT)
        .await
        .unwrap();
}

fn is_completion(record: &Record) -> bool {
    matches!(&record.record, Some(record::Record::Operation(op)) if op.event() == OperationEvent::Completed)
}

/// Follows Watch through `socket` after `cursor` into `seen`; once the
/// stream is open, starts a failing update over `local`; when its
/// completion arrives, cuts the tunnel with `cut` while the stream is
/// still open. Returns once the stream broke.
async fn follow_until_cut(
    socket: &Path,
    cursor: Option<Cursor>,
    seen: &mut Vec<Record>,
    local: Channel,
    cut: impl FnOnce(),
) {
    let mut telemetry = TelemetryServiceClient::new(uds_channel(socket).await.unwrap());
    let mut stream = telemetry
        .watch(WatchRequest {
            options: Some(WatchOptions {
                after: cursor,
                ..WatchOptions::default()
            }),
            kinds: vec![],
        })
        .await
        .unwrap()
        .into_inner();
    let updating = tokio::spawn(failing_update(local));
    let mut cut = Some(cut);
    let mut completed = false;
    loop {
        let next = tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("watch stalled");
        let Some(Ok(batch)) = next else { break };
        for event in batch.events {
            if let Some(stream_event::Event::Record(r)) = event.event {
                completed |= is_completion(&r);
                seen.push(r);
            }
        }
        if completed && let Some(cut) = cut.take() {
            cut();
        }
    }
    assert!(cut.is_none(), "the stream ended before the cut");
    updating.await.unwrap();
}

fn last_cursor(seen: &[Record]) -> Option<Cursor> {
    seen.last().and_then(|r| r.cursor.clone())
}

/// The records after `cursor`, through the host socket, up to the head.
async fn resume(socket: &Path, seen: &mut Vec<Record>) {
    let mut telemetry = TelemetryServiceClient::new(uds_channel(socket).await.unwrap());
    let options = WatchOptions {
        after: last_cursor(seen),
        ..WatchOptions::default()
    };
    for event in watch_snapshot(&mut telemetry, options, WAIT).await.unwrap() {
        if let Some(stream_event::Event::Record(r)) = event.event {
            seen.push(r);
        }
    }
}

fn sequence(record: &Record) -> u64 {
    record
        .cursor
        .as_ref()
        .map(|c| c.sequence)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_tunnel_comes_back_and_watch_resumes_from_its_cursor() {
    let pki = Pki::new();
    let daemon = daemon().await;
    let listener = ListenerProc::start(&pki, &[]);
    let relay = Relay::start(listener.addr).await;
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    let mut agent = AgentProc::start(relay.addr, ORCHESTRATOR, &files, daemon.socket_path());
    let socket = pki.sockets_dir().join("host-1.sock");
    listener.nth_event("connected", 0, |_| true);
    let mut seen = Vec::new();

    // Cut 1: the TCP connection drops under a live agent mid-stream.
    let local = daemon.channel().await.unwrap();
    let mut local_telemetry = TelemetryServiceClient::new(local.clone());
    let head = watch_snapshot(&mut local_telemetry, WatchOptions::default(), WAIT)
        .await
        .unwrap()
        .into_iter()
        .find_map(|e| match e.event {
            Some(stream_event::Event::EndOfSnapshot(cursor)) => Some(cursor),
            _ => None,
        });
    assert!(head.is_some(), "a snapshot ends with its head cursor");
    follow_until_cut(&socket, head, &mut seen, local.clone(), || relay.cut()).await;
    listener.nth_event("disconnected", 0, |_| true);
    wait_path(&socket, false).await;
    failing_update(local.clone()).await; // records made while the tunnel is down
    listener.nth_event("connected", 1, |_| true);
    wait_path(&socket, true).await;
    resume(&socket, &mut seen).await;

    // Cut 2: the agent dies mid-stream; a new one takes over.
    let cursor = last_cursor(&seen);
    follow_until_cut(&socket, cursor, &mut seen, local.clone(), || agent.kill()).await;
    listener.nth_event("disconnected", 1, |_| true);
    wait_path(&socket, false).await;
    failing_update(local.clone()).await;
    let _agent = AgentProc::start(relay.addr, ORCHESTRATOR, &files, daemon.socket_path());
    listener.nth_event("connected", 2, |_| true);
    wait_path(&socket, true).await;
    resume(&socket, &mut seen).await;

    // What the orchestrator saw through the tunnel is exactly the bus, in
    // order, over the same range: nothing lost, nothing twice.
    let all: Vec<Record> = watch_snapshot(&mut local_telemetry, WatchOptions::default(), WAIT)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.event {
            Some(stream_event::Event::Record(r)) => Some(r),
            _ => None,
        })
        .collect();
    let (first, last) = (sequence(&seen[0]), sequence(seen.last().unwrap()));
    let expected: Vec<u64> = all
        .iter()
        .map(sequence)
        .filter(|s| (first..=last).contains(s))
        .collect();
    let got: Vec<u64> = seen.iter().map(sequence).collect();
    assert_eq!(got, expected);
    let completions = seen.iter().filter(|r| is_completion(r)).count();
    assert_eq!(
        completions, 4,
        "four updates ran, each seen completing once"
    );
}

/// A peer that stops answering without closing anything (SIGSTOP) is
/// noticed by the keepalive pings (1 s interval, 5 s timeout here) on both
/// sides: the listener drops a frozen host, the agent drops a frozen
/// listener and dials again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_notices_a_frozen_peer_on_either_side() {
    use nix::sys::signal::Signal;
    let pki = Pki::new();
    let daemon = daemon().await;
    let listener = ListenerProc::start(&pki, &[]);
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    let agent = AgentProc::start(listener.addr, ORCHESTRATOR, &files, daemon.socket_path());
    let socket = pki.sockets_dir().join("host-1.sock");
    listener.nth_event("connected", 0, |_| true);

    // A frozen host: the listener's pings go unanswered.
    agent.signal(Signal::SIGSTOP);
    let gone = listener.nth_event("disconnected", 0, |_| true);
    assert!(
        gone["reason"].as_str().unwrap().contains("tunnel lost"),
        "{gone}"
    );
    wait_path(&socket, false).await;
    agent.signal(Signal::SIGCONT);
    listener.nth_event("connected", 1, |_| true);

    // A frozen listener: the agent's pings go unanswered; it gives the
    // tunnel up and dials again (which cannot complete while frozen).
    listener.signal(Signal::SIGSTOP);
    agent
        .stderr
        .wait_for("agent noticing the frozen listener", |l| {
            l.contains("tunnel closed") && l.contains("tunnel lost")
        });
    listener.signal(Signal::SIGCONT);
    listener.nth_event("connected", 2, |_| true);
}
