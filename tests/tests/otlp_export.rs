//! OTLP export of tridentd against a real receiver: `@elastic/mockotlpserver`
//! (npm, started by tests/otlp/receiver.js on free loopback ports), which
//! writes every request it gets as a JSON line. Also: export pointed at a
//! closed port and at a collector that accepts and never answers.
//!
//! Needs `node` and `npm ci` at the repo root (scripts/test.sh does both).
//! Writes the metrics it saw exported to target/otlp/exported-metrics.json
//! for dashboards/check.py.

mod otlp_support;

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use otlp_support::{Receiver, StalledCollector, closed_port, record_exported_metrics};
use serde_json::Value;
use tokio_stream::StreamExt;
use trident_e2e::Daemon;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    GetBusStatusRequest, LogLevel, WatchLogsRequest, WatchOptions, stream_event,
};

/// Short export intervals so a test does not wait for the defaults.
const FAST_EXPORT_ENV: &[(&str, &str)] = &[
    ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
    ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ("OTEL_BLRP_SCHEDULE_DELAY", "100"),
];

async fn exporting_daemon(
    endpoint: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<Daemon> {
    let mut builder = Daemon::builder()
        .arg("--otlp-endpoint")
        .arg(endpoint)
        .args(extra);
    for (key, value) in FAST_EXPORT_ENV.iter().chain(env) {
        builder = builder.env(key, value);
    }
    builder.spawn().await
}

/// Some daemon work that produces telemetry: bus status calls and log snapshots.
async fn workload(daemon: &Daemon, rounds: usize) -> anyhow::Result<Duration> {
    let mut client = TelemetryServiceClient::new(daemon.channel().await?);
    let start = Instant::now();
    for _ in 0..rounds {
        client.get_bus_status(GetBusStatusRequest {}).await?;
        let mut stream = client
            .watch_logs(WatchLogsRequest {
                options: Some(WatchOptions {
                    snapshot: true,
                    tail: Some(20),
                    ..WatchOptions::default()
                }),
            })
            .await?
            .into_inner();
        while let Some(response) = stream.next().await {
            response?;
        }
    }
    Ok(start.elapsed())
}

/// Log lines of the daemon's own bus under `target`, as (level, message).
async fn bus_logs(daemon: &Daemon, target: &str) -> anyhow::Result<Vec<(i32, String)>> {
    let mut client = TelemetryServiceClient::new(daemon.channel().await?);
    let mut stream = client
        .watch_logs(WatchLogsRequest {
            options: Some(WatchOptions {
                snapshot: true,
                target_prefixes: vec![target.to_string()],
                ..WatchOptions::default()
            }),
        })
        .await?
        .into_inner();
    let mut lines = Vec::new();
    while let Some(response) = stream.next().await {
        for event in response?.events {
            if let Some(stream_event::Event::Record(record)) = event.event
                && let Some(trident_proto::v1::record::Record::Log(log)) = record.record
            {
                lines.push((log.level, log.message));
            }
        }
    }
    Ok(lines)
}

fn attr<'a>(attributes: &'a Value, key: &str) -> Option<&'a str> {
    attributes.get(key).and_then(Value::as_str)
}

#[tokio::test]
async fn export_carries_the_resource_logs_and_metrics_and_leaves_out_transport_internals()
-> anyhow::Result<()> {
    let receiver = Receiver::start()?;
    let mut daemon = exporting_daemon(
        &receiver.grpc,
        &[],
        // debug: tonic/h2/hyper are chatty at this level; none of it may be exported.
        &[
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=e2e,fleet.ring=canary%201",
            ),
            ("RUST_LOG", "debug"),
        ],
    )
    .await?;
    let mut client = TelemetryServiceClient::new(daemon.channel().await?);
    let run_id = client
        .get_bus_status(GetBusStatusRequest {})
        .await?
        .into_inner()
        .run_id;
    workload(&daemon, 3).await?;
    // Metrics arrive every 300 ms; wait for the bus counters, then stop (final flush).
    receiver.wait_for(Duration::from_secs(10), |r| {
        r.metric_names().contains("trident.bus.records")
    })?;
    let stop_started = Instant::now();
    daemon.stop();
    let stop_took = stop_started.elapsed();
    let received = receiver.wait_for(Duration::from_secs(5), |r| {
        r.has_log_body("tridentd stopped")
    })?;

    // Resource: who and where.
    let resource = received.resource().context("no resource in any request")?;
    assert_eq!(attr(&resource, "service.name"), Some("tridentd"));
    assert_eq!(
        attr(&resource, "service.version"),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        attr(&resource, "service.instance.id"),
        Some(run_id.as_str()),
        "instance id is the daemon run id"
    );
    assert_eq!(attr(&resource, "os.type"), Some("linux"));
    assert!(
        attr(&resource, "host.name").is_some_and(|h| !h.is_empty()),
        "{resource}"
    );
    if let Ok(machine_id) = std::fs::read_to_string("/etc/machine-id") {
        assert_eq!(attr(&resource, "host.id"), Some(machine_id.trim()));
    }
    if std::path::Path::new("/etc/os-release").exists() {
        assert!(attr(&resource, "os.description").is_some(), "{resource}");
    }
    assert_eq!(attr(&resource, "deployment.environment"), Some("e2e"));
    assert_eq!(attr(&resource, "fleet.ring"), Some("canary 1"));

    // Logs: severity, body, attributes; the daemon's own lines, no transport internals.
    let logs = received.logs();
    let ready = logs
        .iter()
        .find(|l| l.body == "tridentd ready")
        .context("no 'tridentd ready' log record")?;
    assert_eq!(ready.severity_text, "INFO");
    assert_eq!(ready.severity_number, 9);
    assert_eq!(ready.scope, "tridentd::server");
    let internal: Vec<_> = logs
        .iter()
        .filter(|l| otlp_support::is_internal(&l.scope))
        .collect();
    assert!(
        internal.is_empty(),
        "transport/export internals exported: {internal:?}"
    );
    let spans = received.spans();
    let internal_spans: Vec<_> = spans
        .iter()
        .filter(|s| otlp_support::is_internal(&s.target))
        .collect();
    assert!(
        internal_spans.is_empty(),
        "transport/export spans exported: {internal_spans:?}"
    );

    // Metrics: names, units, kinds, attributes.
    let metrics = received.metrics();
    let metric = |name: &str| {
        metrics.iter().find(|m| m.name == name).with_context(|| {
            format!(
                "metric {name} not exported; got {:?}",
                received.metric_names()
            )
        })
    };
    let records = metric("trident.bus.records")?;
    assert_eq!(
        (records.unit.as_str(), records.kind.as_str()),
        ("{record}", "counter")
    );
    assert!(records.attributes.contains("kind"));
    assert!(
        records
            .values_by("kind")
            .get("log")
            .is_some_and(|n| *n > 0.0),
        "{records:?}"
    );
    let drops = metric("trident.bus.drops")?;
    assert_eq!(
        (drops.unit.as_str(), drops.kind.as_str()),
        ("{record}", "counter")
    );
    assert!(drops.attributes.contains("kind"));
    let subscribers = metric("trident.bus.subscribers")?;
    assert_eq!(
        (subscribers.unit.as_str(), subscribers.kind.as_str()),
        ("{subscriber}", "updowncounter")
    );
    let export_drops = metric("trident.export.drops")?;
    assert_eq!(export_drops.unit, "{record}");
    assert!(
        export_drops.attributes.contains("signal") && export_drops.attributes.contains("reason")
    );
    assert_eq!(
        export_drops.total(),
        0.0,
        "a healthy collector loses nothing"
    );

    // Shutdown flushed (the stop log line arrived) within the bound.
    assert!(
        stop_took < Duration::from_secs(5),
        "stop took {stop_took:?}"
    );
    record_exported_metrics(&metrics)?;
    Ok(())
}

#[tokio::test]
async fn otlp_http_protobuf_reaches_the_receiver_too() -> anyhow::Result<()> {
    let receiver = Receiver::start()?;
    let mut daemon =
        exporting_daemon(&receiver.http, &["--otlp-protocol", "http/protobuf"], &[]).await?;
    workload(&daemon, 1).await?;
    receiver.wait_for(Duration::from_secs(10), |r| {
        r.metric_names().contains("trident.bus.records")
    })?;
    daemon.stop();
    let received =
        receiver.wait_for(Duration::from_secs(5), |r| r.has_log_body("tridentd ready"))?;
    assert_eq!(
        attr(&received.resource().context("no resource")?, "service.name"),
        Some("tridentd")
    );
    Ok(())
}

#[tokio::test]
async fn export_is_off_without_an_endpoint() -> anyhow::Result<()> {
    let daemon = Daemon::builder()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "")
        .spawn()
        .await?;
    workload(&daemon, 1).await?;
    assert!(
        !daemon.stderr().contains("OTLP export on"),
        "{}",
        daemon.stderr()
    );
    Ok(())
}

#[tokio::test]
async fn a_collector_that_is_down_or_stalled_costs_the_daemon_nothing() -> anyhow::Result<()> {
    const ROUNDS: usize = 40;
    let mut baseline = Daemon::builder()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "")
        .env("RUST_LOG", "debug")
        .spawn()
        .await?;
    let off = workload(&baseline, ROUNDS).await?;
    baseline.stop();

    let stalled = StalledCollector::start()?;
    let cases = [
        ("closed port", closed_port()?),
        ("stalled collector", stalled.endpoint()),
    ];
    for (case, endpoint) in cases {
        let mut daemon = exporting_daemon(
            &endpoint,
            &["--otlp-timeout", "1s"],
            &[
                ("RUST_LOG", "debug"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "64"),
                ("OTEL_BLRP_MAX_QUEUE_SIZE", "64"),
            ],
        )
        .await?;
        let took = workload(&daemon, ROUNDS).await?;
        let bound = off * 2 + Duration::from_secs(2);
        println!("{case}: workload {took:?} (export off {off:?}, bound {bound:?})");
        ensure!(
            took <= bound,
            "{case}: workload took {took:?}, export off took {off:?}"
        );

        // The loss is told on the bus: one warning for the outage, not one per record.
        let deadline = Instant::now() + Duration::from_secs(15);
        let warnings = loop {
            let lines = bus_logs(&daemon, "tridentd::otlp").await?;
            let warnings: Vec<_> = lines
                .into_iter()
                .filter(|(level, _)| *level == LogLevel::Warn as i32)
                .collect();
            if !warnings.is_empty() || Instant::now() > deadline {
                break warnings;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        ensure!(
            warnings.len() == 1 && warnings[0].1.contains("OTLP export is failing"),
            "{case}: expected one outage warning, got {warnings:?}\n{}",
            daemon.stderr()
        );
        // Shutdown's flush is bounded by the export timeout.
        let stop_started = Instant::now();
        let status = daemon.stop();
        let stop_took = stop_started.elapsed();
        println!("{case}: stop took {stop_took:?}");
        ensure!(
            status.is_some_and(|s| s.success()),
            "{case}: daemon exit {status:?}\n{}",
            daemon.stderr()
        );
        ensure!(
            stop_took < Duration::from_secs(4),
            "{case}: stop took {stop_took:?}"
        );
    }
    Ok(())
}
