//! The reverse-connect proxy agent's state on tridentd's bus: a Watch
//! subscriber sees it connect (with its identity), vanish when it is
//! killed, and be refused (with the reason) by a listener whose
//! certificate does not match the expected name.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use nix::sys::signal::Signal;
use tokio_stream::StreamExt;
use trident_e2e::Daemon;
use trident_e2e::rcp_support::{AgentProc, ListenerProc, ORCHESTRATOR, Pki, WAIT};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    LogRecord, RecordKind, WatchOptions, WatchRequest, field, record, stream_event,
};
use trident_rcp::pki::LeafSpec;

const TARGET: &str = "tridentd::rcp_agent";

fn text(log: &LogRecord, name: &str) -> String {
    log.fields
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| match &f.value {
            Some(field::Value::Text(t)) => Some(t.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Follows the agent's state records on the daemon's bus.
async fn follow(daemon: &Daemon) -> Arc<Mutex<Vec<LogRecord>>> {
    let mut client = TelemetryServiceClient::new(daemon.channel().await.unwrap());
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                target_prefixes: vec![TARGET.into()],
                ..WatchOptions::default()
            }),
            kinds: vec![RecordKind::Log as i32],
        })
        .await
        .unwrap()
        .into_inner();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    tokio::spawn(async move {
        while let Some(Ok(response)) = stream.next().await {
            for event in response.events {
                if let Some(stream_event::Event::Record(r)) = event.event
                    && let Some(record::Record::Log(log)) = r.record
                {
                    sink.lock().unwrap().push(log);
                }
            }
        }
    });
    seen
}

/// Waits for `state`, or a later state that says it came `after` it (the
/// daemon polls, so a short state may be seen only through its successor).
async fn wait_state(seen: &Mutex<Vec<LogRecord>>, state: &str) -> LogRecord {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let records = seen.lock().unwrap().clone();
        if let Some(log) = records
            .iter()
            .find(|l| text(l, "state") == state || text(l, "after") == state)
        {
            return log.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no '{state}' on the bus within {WAIT:?}: {records:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_subscriber_sees_the_agent_connect_and_be_refused() {
    let pki = Pki::new();
    let state_file = pki.dir.path().join("rcp-agent.json");
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .arg("--rcp-state-file")
        .arg(&state_file)
        .spawn()
        .await
        .unwrap();
    let seen = follow(&daemon).await;
    let listener = ListenerProc::start(&pki, &[]);
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));

    let mut agent = AgentProc::start_with_state_file(
        listener.addr,
        ORCHESTRATOR,
        &files,
        daemon.socket_path(),
        &state_file,
    );
    let connected = wait_state(&seen, "connected").await;
    assert_eq!(text(&connected, "identity"), "host-1");
    assert_eq!(text(&connected, "orchestrator"), listener.addr.to_string());

    // Killed without a goodbye: the daemon notices the process is gone.
    agent.kill();
    wait_state(&seen, "gone").await;

    // Refused by the agent: the listener's certificate is not for this name.
    let _refused = AgentProc::start_with_state_file(
        listener.addr,
        "not-the-orchestrator.test",
        &files,
        daemon.socket_path(),
        &state_file,
    );
    let refused = wait_state(&seen, "refused").await;
    let reason = text(&refused, "reason");
    assert!(reason.contains("TLS handshake failed"), "{reason}");
    assert!(refused.message.contains("refused"), "{}", refused.message);
    assert!(refused.message.contains(&reason), "{}", refused.message);

    // A clean stop is told as such.
    _refused.signal(Signal::SIGTERM);
    wait_state(&seen, "stopped").await;
}
