//! OTLP export of tridentd against a real receiver: resource, logs, metrics,
//! OTLP/HTTP, off by default. Writes the metrics it saw exported to
//! target/otlp/exported-metrics.json for dashboards/check.py.
//!
//! Real receiver: `@elastic/mockotlpserver` (npm, started by
//! tests/otlp/receiver.js on free loopback ports), which writes every
//! request it gets as a JSON line. Needs `node` and `npm ci` at the repo root
//! (scripts/test.sh does both).

use std::time::{Duration, Instant};

use anyhow::Context;
use trident_e2e::Daemon;
use trident_e2e::otlp_support::{
    self, Receiver, attr, exporting_daemon, record_exported_metrics, workload,
};
use trident_proto::v1::GetBusStatusRequest;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;

#[tokio::test(flavor = "multi_thread")]
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
    // Off the runtime's thread, so this test's open connection answers the
    // daemon's graceful close as a live client would.
    tokio::task::block_in_place(|| daemon.stop());
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
    record_exported_metrics("otlp_export", &metrics)?;
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
