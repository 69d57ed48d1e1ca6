//! The legacy bridge end to end: a real tridentd services a disk-image file
//! with a Host Configuration that still sets upstream's `trident.phonehome`
//! and `trident.logstream`. A local HTTP receiver gets upstream's JSON
//! shapes; a dead and a stalling endpoint leave servicing to complete and
//! their drops are counted on the bus.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio_stream::StreamExt;
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{Daemon, daemon};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    LogRecord, RecordKind, WatchOptions, WatchRequest, field, record, stream_event,
};

/// Generous: the machine is shared.
const WAIT: Duration = Duration::from_secs(90);
const NOTICE_TARGET: &str = "tridentd::legacy_bridge";

/// A minimal HTTP/1.1 receiver: every POST's path and JSON body, answered 200.
#[derive(Clone, Default)]
struct Receiver {
    posts: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Receiver {
    async fn start() -> (Receiver, SocketAddr) {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let receiver = Receiver::default();
        let sink = receiver.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = tcp.accept().await {
                tokio::spawn(sink.clone().serve(conn));
            }
        });
        (receiver, addr)
    }

    /// Serves one keep-alive connection.
    async fn serve(self, conn: TcpStream) {
        let mut conn = BufReader::new(conn);
        loop {
            let mut request_line = String::new();
            if conn.read_line(&mut request_line).await.unwrap_or(0) == 0 {
                return;
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            let mut length = 0usize;
            loop {
                let mut header = String::new();
                conn.read_line(&mut header).await.unwrap();
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0u8; length];
            conn.read_exact(&mut body).await.unwrap();
            let json = serde_json::from_slice(&body)
                .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {body:?}"));
            self.posts.lock().unwrap().push((path, json));
            conn.get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .await
                .unwrap();
        }
    }

    fn bodies(&self, path: &str) -> Vec<Value> {
        let posts = self.posts.lock().unwrap();
        posts
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// Waits until a body posted to `path` satisfies `pred`.
    async fn wait_for(&self, path: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if let Some(body) = self.bodies(path).into_iter().find(|b| pred(b)) {
                return body;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "nothing matching on {path} within {WAIT:?}; got {:?}",
                self.posts.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// An endpoint that accepts connections and never answers.
async fn stalling_endpoint() -> SocketAddr {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = tcp.accept().await {
            held.push(conn);
        }
    });
    addr
}

/// A loopback port nobody listens on.
async fn dead_endpoint() -> SocketAddr {
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    tcp.local_addr().unwrap()
}

fn text_field(log: &LogRecord, name: &str) -> Option<String> {
    log.fields
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| match &f.value {
            Some(field::Value::Text(t)) => Some(t.clone()),
            Some(field::Value::Unsigned(v)) => Some(v.to_string()),
            Some(field::Value::Signed(v)) => Some(v.to_string()),
            _ => None,
        })
}

/// The bridge's own log records on the bus so far (snapshot Watch).
async fn bridge_notices(daemon: &Daemon) -> Vec<LogRecord> {
    let mut client = TelemetryServiceClient::new(daemon.channel().await.unwrap());
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                snapshot: true,
                target_prefixes: vec![NOTICE_TARGET.into()],
                ..WatchOptions::default()
            }),
            kinds: vec![RecordKind::Log as i32],
        })
        .await
        .unwrap()
        .into_inner();
    let mut logs = Vec::new();
    while let Some(Ok(response)) = stream.next().await {
        for event in response.events {
            if let Some(stream_event::Event::Record(r)) = event.event
                && let Some(record::Record::Log(log)) = r.record
            {
                logs.push(log);
            }
        }
    }
    logs
}

/// Waits for the bridge's record satisfying `pred`.
async fn wait_notice(daemon: &Daemon, what: &str, pred: impl Fn(&LogRecord) -> bool) -> LogRecord {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let notices = bridge_notices(daemon).await;
        if let Some(found) = notices.iter().find(|l| pred(l)) {
            return found.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {what} on the bus within {WAIT:?}; bridge records: {notices:#?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn legacy_keys(phonehome: &str, logstream: &str) -> String {
    format!("trident:\n  phonehome: {phonehome}\n  logstream: {logstream}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_posts_upstreams_phonehome_logstream_and_tracestream_shapes() {
    let (receiver, addr) = Receiver::start().await;
    let fixture = Fixture::new();
    let image = fixture.image("base", 1, None);
    let keys = legacy_keys(
        &format!("http://{addr}/phonehome/host-1"),
        &format!("http://{addr}/logstream/host-1"),
    );
    let d = daemon().await;
    let mut clients = Clients::new(&d).await;

    // A failing install: started, then failed with the error's message.
    let bad = fixture.config_with_hash(&image, &"a".repeat(96), &keys);
    assert!(!clients.install(&bad).await.succeeded());
    receiver
        .wait_for("/phonehome/host-1", |b| b["state"] == "failed")
        .await;

    let install = clients.install(&fixture.config(&image, &keys)).await;
    install.assert_success();
    let succeeded = receiver
        .wait_for("/phonehome/host-1", |b| b["state"] == "succeeded")
        .await;
    let status = succeeded["host_status"].as_str().expect("host_status YAML");
    assert!(status.contains("servicingState"), "{status}");

    let phonehome = receiver.bodies("/phonehome/host-1");
    let states: Vec<&str> = phonehome
        .iter()
        .map(|b| b["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        ["started", "failed", "started", "succeeded"],
        "{phonehome:#?}"
    );
    assert_eq!(phonehome[0]["host_status"], Value::Null);
    assert!(!phonehome[1]["message"].as_str().unwrap().is_empty());

    // Logstream: one POST per log record, upstream's keys exactly.
    let logs = receiver.bodies("/logstream/host-1");
    assert!(!logs.is_empty());
    for log in &logs {
        let mut keys: Vec<&str> = log
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "file",
                "level",
                "line",
                "message",
                "module",
                "target",
                "timestamp"
            ],
            "{log}"
        );
        assert!(
            ["error", "warn", "info", "debug", "trace"].contains(&log["level"].as_str().unwrap()),
            "{log}"
        );
        assert_ne!(
            log["target"], NOTICE_TARGET,
            "the bridge forwards its own notices"
        );
    }

    // Tracestream (phonehome URL with "phonehome" → "tracestream"): a metric
    // per closed span, with execution_time and upstream's context keys.
    let metric = receiver
        .wait_for("/tracestream/host-1", |b| {
            b["value"]["execution_time"].is_number()
        })
        .await;
    assert!(
        metric["metric_name"]
            .as_str()
            .is_some_and(|n| !n.is_empty()),
        "{metric}"
    );
    assert!(
        metric["additional_fields"]["trident_version"].is_string(),
        "{metric}"
    );
    for key in ["asset_id", "os_release", "total_cpu", "kernel_version"] {
        assert!(
            metric["platform_info"].get(key).is_some(),
            "{key}: {metric}"
        );
    }

    // Its use is a deprecation warning naming the replacements.
    let warning = wait_notice(&d, "deprecation warning", |l| {
        l.message.contains("deprecated")
    })
    .await;
    for replacement in [
        "servicing stream",
        "TelemetryService.Watch",
        "trident-rcp",
        "OTLP",
    ] {
        assert!(warning.message.contains(replacement), "{}", warning.message);
    }
    let summary = wait_notice(&d, "logstream summary", |l| {
        text_field(l, "stream").as_deref() == Some("logstream") && l.message.contains("closed")
    })
    .await;
    assert_eq!(
        text_field(&summary, "dropped").as_deref(),
        Some("0"),
        "{summary:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_and_stalling_endpoints_do_not_stop_servicing_and_drops_are_counted() {
    let dead = dead_endpoint().await;
    let stalling = stalling_endpoint().await;
    let fixture = Fixture::new();
    let image = fixture.image("base", 1, None);
    let keys = legacy_keys(
        &format!("http://{dead}/phonehome"),
        &format!("http://{stalling}/logstream"),
    );
    let d = daemon().await;
    let mut clients = Clients::new(&d).await;

    clients
        .install(&fixture.config(&image, &keys))
        .await
        .assert_success();

    // One warning per outage, not one per record.
    for (stream, url) in [
        ("phonehome", format!("http://{dead}/phonehome")),
        ("logstream", format!("http://{stalling}/logstream")),
    ] {
        let summary = wait_notice(&d, &format!("{stream} summary"), |l| {
            text_field(l, "stream").as_deref() == Some(stream) && l.message.contains("closed")
        })
        .await;
        let dropped: u64 = text_field(&summary, "dropped").unwrap().parse().unwrap();
        assert!(dropped > 0, "{stream}: {summary:?}");
        assert_eq!(
            text_field(&summary, "posted").as_deref(),
            Some("0"),
            "{summary:?}"
        );
        let warnings: Vec<LogRecord> = bridge_notices(&d)
            .await
            .into_iter()
            .filter(|l| {
                l.message.contains("endpoint failed")
                    && text_field(l, "url").as_deref() == Some(url.as_str())
            })
            .collect();
        assert_eq!(warnings.len(), 1, "{stream}: {warnings:#?}");
    }
}
