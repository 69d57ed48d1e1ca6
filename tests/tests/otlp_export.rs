//! OTLP export of tridentd against a real receiver: `@elastic/mockotlpserver`
//! (npm, started by tests/otlp/receiver.js on free loopback ports), which
//! writes every request it gets as a JSON line. Also: export pointed at a
//! closed port and at a collector that accepts and never answers.
//!
//! Needs `node` and `npm ci` at the repo root (scripts/test.sh does both).
//! Writes the metrics it saw exported to target/otlp/exported-metrics.json
//! for dashboards/check.py.

mod otlp_support;
#[path = "servicing_support/mod.rs"]
mod servicing_support;

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use otlp_support::{Receiver, StalledCollector, closed_port, free_port, record_exported_metrics};
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

/// A clean install onto a fresh disk-image file; returns how long the
/// operation took (request to Completed) and the daemon, still running.
async fn timed_install(
    endpoint: Option<&str>,
) -> anyhow::Result<(Duration, Daemon, servicing_support::Fixture)> {
    let fixture = servicing_support::Fixture::new();
    let image = fixture.image("base", 1, None);
    let config = fixture.config(&image, "");
    let disk = fixture.disk.display().to_string();
    let daemon = match endpoint {
        None => {
            Daemon::builder()
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", "")
                .env("RUST_LOG", "debug")
                .args(["--disk", &disk])
                .spawn()
                .await?
        }
        Some(endpoint) => {
            exporting_daemon(
                endpoint,
                &["--otlp-timeout", "1s", "--disk", &disk],
                // Small queues, so a stalled collector also overflows them.
                &[
                    ("RUST_LOG", "debug"),
                    ("OTEL_BSP_MAX_QUEUE_SIZE", "16"),
                    ("OTEL_BLRP_MAX_QUEUE_SIZE", "16"),
                ],
            )
            .await?
        }
    };
    let mut clients = servicing_support::Clients::new(&daemon).await;
    let started = Instant::now();
    clients.install(&config).await.assert_success();
    Ok((started.elapsed(), daemon, fixture))
}

#[tokio::test]
async fn a_collector_that_is_down_or_stalled_costs_servicing_nothing() -> anyhow::Result<()> {
    let (off, mut baseline, _fixture) = timed_install(None).await?;
    baseline.stop();

    let stalled = StalledCollector::start()?;
    let cases = [
        ("closed port", closed_port()?),
        ("stalled collector", stalled.endpoint()),
    ];
    for (case, endpoint) in cases {
        let (took, mut daemon, _fixture) = timed_install(Some(&endpoint)).await?;
        let bound = off * 2 + Duration::from_secs(2);
        println!("{case}: install took {took:?} (export off {off:?}, bound {bound:?})");
        ensure!(
            took <= bound,
            "{case}: install took {took:?}, export off took {off:?}"
        );
        // RPCs are not slowed either.
        let rpcs = workload(&daemon, 20).await?;
        println!("{case}: 20 RPC rounds took {rpcs:?}");

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

#[tokio::test]
async fn drops_during_an_outage_are_counted_and_told_once_and_export_recovers() -> anyhow::Result<()>
{
    let port = free_port()?;
    let daemon = exporting_daemon(
        &format!("http://127.0.0.1:{port}"),
        &["--otlp-timeout", "1s"],
        &[],
    )
    .await?;
    workload(&daemon, 5).await?;
    // Collector down: one warning on the bus.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let lines = bus_logs(&daemon, "tridentd::otlp").await?;
        if lines
            .iter()
            .any(|(_, m)| m.contains("OTLP export is failing"))
        {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "no outage warning; stderr:\n{}",
            daemon.stderr()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Collector back on the same port: exports resume, and the drops arrive as a metric.
    let receiver = Receiver::start_on(Some(port))?;
    workload(&daemon, 5).await?;
    let received = receiver.wait_for(Duration::from_secs(30), |r| {
        r.metrics()
            .iter()
            .any(|m| m.name == "trident.export.drops" && m.total() > 0.0)
    })?;
    let drops = received
        .metrics()
        .into_iter()
        .find(|m| m.name == "trident.export.drops")
        .context("no export drops metric")?;
    println!("export drops counted after the outage: {}", drops.total());
    let deadline = Instant::now() + Duration::from_secs(10);
    let lines = loop {
        let lines = bus_logs(&daemon, "tridentd::otlp").await?;
        if lines
            .iter()
            .any(|(_, m)| m.contains("OTLP export recovered"))
            || Instant::now() > deadline
        {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let failing = lines
        .iter()
        .filter(|(_, m)| m.contains("OTLP export is failing"))
        .count();
    ensure!(failing == 1, "one warning per outage, got {lines:?}");
    if std::env::var_os("RUST_LOG").is_none() {
        // The daemon's log (stderr, the journal) says it once too: the SDK's
        // own per-export errors stay off.
        let stderr = daemon.stderr();
        ensure!(
            stderr.matches("OTLP export is failing").count() == 1,
            "{stderr}"
        );
        ensure!(!stderr.contains("ExportError"), "{stderr}");
    }
    ensure!(
        lines.iter().any(
            |(level, m)| *level == LogLevel::Info as i32 && m.contains("OTLP export recovered")
        ),
        "no recovery notice: {lines:?}"
    );
    Ok(())
}

/// The caller's W3C trace context for the servicing test.
const CALLER_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN_ID: &str = "00f067aa0ba902b7";

#[tokio::test]
async fn servicing_exports_a_span_tree_in_the_callers_trace_with_correlated_logs_and_metrics()
-> anyhow::Result<()> {
    use servicing_support::{Clients, Fixture, collect, hc};
    use trident_proto::v1preview::{FinalizeInstallRequest, InstallRequest, StageInstallRequest};

    let receiver = Receiver::start()?;
    let fixture = Fixture::new();
    let image = fixture.image("base", 1, None);
    let config = fixture.config(&image, "");
    let mut daemon = exporting_daemon(
        &receiver.grpc,
        &["--disk", &fixture.disk.display().to_string()],
        &[],
    )
    .await?;
    let mut clients = Clients::new(&daemon).await;

    // First an install that fails (wrong image hash): an error report.
    let bad = fixture.config_with_hash(&image, &format!("sha384:{}", "0".repeat(96)), "");
    let failed = clients.install(&bad).await;
    assert!(
        !failed.succeeded(),
        "an install with a wrong hash must fail"
    );

    let mut request = tonic::Request::new(InstallRequest {
        stage: Some(StageInstallRequest {
            config: Some(hc(&config)),
        }),
        finalize: Some(FinalizeInstallRequest { reboot: None }),
    });
    request.metadata_mut().insert(
        "traceparent",
        format!("00-{CALLER_TRACE_ID}-{CALLER_SPAN_ID}-01").parse()?,
    );
    let install = collect(clients.install.install(request).await).await;
    install.assert_success();
    let operation_id = install.operation_id();
    let bus_trace_id = install
        .started
        .as_ref()
        .map(|s| s.trace_id.clone())
        .unwrap_or_default();
    assert_eq!(
        bus_trace_id, CALLER_TRACE_ID,
        "the bus carries the caller's trace id"
    );

    receiver.wait_for(Duration::from_secs(10), |r| {
        r.metric_names().contains("trident.servicing.operations")
            && r.spans().iter().any(|s| s.name == "servicing_operation")
    })?;
    daemon.stop();
    let received = receiver.wait_for(Duration::from_secs(5), |r| {
        r.has_log_body("tridentd stopped")
    })?;

    // Span tree: root = child of the caller's span, in the caller's trace; phases under it.
    let spans = received.spans();
    let root_of = |id: &str| {
        spans
            .iter()
            .find(|s| {
                s.name == "servicing_operation" && attr(&s.attributes, "operation_id") == Some(id)
            })
            .with_context(|| format!("no servicing_operation span of {id}: {spans:?}"))
    };
    // Without a caller trace, the exported trace id is the bus's.
    let failed_root = root_of(&failed.operation_id())?;
    let failed_trace = failed
        .started
        .as_ref()
        .map(|s| s.trace_id.clone())
        .unwrap_or_default();
    assert_eq!(
        failed_root.trace_id, failed_trace,
        "exported trace id = bus trace id"
    );
    assert_eq!(
        failed_root.parent_span_id, "",
        "a root span without a caller"
    );
    assert_eq!(
        attr(&failed_root.attributes, "result"),
        Some("STATUS_CODE_FAILURE")
    );
    let root = root_of(&operation_id)?;
    assert_eq!(root.trace_id, CALLER_TRACE_ID);
    assert_eq!(root.parent_span_id, CALLER_SPAN_ID);
    assert_eq!(
        attr(&root.attributes, "operation_id"),
        Some(operation_id.as_str())
    );
    assert_eq!(
        attr(&root.attributes, "kind"),
        Some("SERVICING_KIND_CLEAN_INSTALL")
    );
    assert_eq!(attr(&root.attributes, "rpc"), Some("Install"));
    assert_eq!(
        attr(&root.attributes, "result"),
        Some("STATUS_CODE_SUCCESS")
    );
    let phases: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("phase ") && s.trace_id == CALLER_TRACE_ID)
        .collect();
    assert!(!phases.is_empty(), "no phase spans: {spans:?}");
    for phase in &phases {
        assert_eq!(phase.trace_id, CALLER_TRACE_ID, "{phase:?}");
        let parent_known = phase.parent_span_id == root.span_id
            || phases.iter().any(|p| p.span_id == phase.parent_span_id);
        assert!(
            parent_known,
            "phase without a parent in the tree: {phase:?}"
        );
    }
    assert!(
        phases.iter().any(|p| p.name.starts_with("phase write/")),
        "{phases:?}"
    );

    // Logs of the operation carry its trace and a span of it.
    let logs = received.logs();
    assert!(
        !logs.iter().any(|l| l.scope == "trident::progress"),
        "progress updates are phase spans, not log records"
    );
    let started: Vec<_> = logs
        .iter()
        .filter(|l| l.body == "servicing operation started")
        .collect();
    for (trace, span) in [
        (CALLER_TRACE_ID, &root.span_id),
        (failed_trace.as_str(), &failed_root.span_id),
    ] {
        assert!(
            started
                .iter()
                .any(|l| l.trace_id == trace && &l.span_id == span && l.severity_text == "INFO"),
            "no 'servicing operation started' log in trace {trace} span {span}: {started:?}"
        );
    }
    assert!(
        logs.iter()
            .filter(|l| l.trace_id == CALLER_TRACE_ID)
            .count()
            >= 3
    );

    // Metrics of the operation.
    let metrics = received.metrics();
    let metric = |name: &str| {
        metrics
            .iter()
            .find(|m| m.name == name)
            .with_context(|| format!("metric {name} not exported"))
    };
    let operations = metric("trident.servicing.operations")?;
    assert_eq!(
        (operations.unit.as_str(), operations.kind.as_str()),
        ("{operation}", "counter")
    );
    assert_eq!(
        operations.values_by("result").get("success"),
        Some(&1.0),
        "{operations:?}"
    );
    assert_eq!(
        operations.values_by("kind").get("clean_install"),
        Some(&1.0),
        "{operations:?}"
    );
    let duration = metric("trident.servicing.operation.duration")?;
    assert_eq!(
        (duration.unit.as_str(), duration.kind.as_str()),
        ("s", "histogram")
    );
    let phase_duration = metric("trident.servicing.phase.duration")?;
    assert_eq!(
        (phase_duration.unit.as_str(), phase_duration.kind.as_str()),
        ("s", "histogram")
    );
    assert!(
        phase_duration.attributes.contains("phase") && phase_duration.attributes.contains("state")
    );
    let written = metric("trident.servicing.disk.written")?;
    assert_eq!(
        (written.unit.as_str(), written.kind.as_str()),
        ("By", "counter")
    );
    assert!(written.total() > 0.0);
    let read = metric("trident.image.read")?;
    assert_eq!(read.unit, "By");
    assert_eq!(
        operations.values_by("result").get("failure"),
        Some(&1.0),
        "{operations:?}"
    );
    let errors = metric("trident.errors")?;
    assert_eq!(
        (errors.unit.as_str(), errors.kind.as_str()),
        ("{error}", "counter")
    );
    assert!(errors.attributes.contains("category"), "{errors:?}");
    let active = metric("trident.servicing.operations.active")?;
    assert_eq!(active.kind, "updowncounter");
    record_exported_metrics(&metrics)?;
    Ok(())
}

#[tokio::test]
async fn the_cli_sends_its_own_trace_context_and_the_exported_operation_joins_it()
-> anyhow::Result<()> {
    let receiver = Receiver::start()?;
    let fixture = servicing_support::Fixture::new();
    let image = fixture.image("base", 1, None);
    let config = fixture.dir.path().join("host-config.yaml");
    std::fs::write(&config, fixture.config(&image, ""))?;
    let disk = fixture.disk.display().to_string();
    let mut daemon = exporting_daemon(&receiver.grpc, &["--disk", &disk], &[]).await?;

    let out = std::process::Command::new(trident_e2e::bin_path("trident"))
        .arg("--socket")
        .arg(daemon.socket_path())
        .arg("install")
        .arg(&config)
        .args(["--progress", "json"])
        .env_remove("TRIDENT_SOCKET")
        .env_remove("TRACEPARENT")
        .output()?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    ensure!(
        out.status.success(),
        "trident install failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started: Value = serde_json::from_str(stdout.lines().next().unwrap_or_default())?;
    let cli_trace = started["trace_id"].as_str().unwrap_or_default().to_string();
    ensure!(
        cli_trace.len() == 32,
        "no trace id in the CLI's started line: {stdout}"
    );

    receiver.wait_for(Duration::from_secs(10), |r| {
        r.spans().iter().any(|s| s.name == "servicing_operation")
    })?;
    daemon.stop();
    let received = receiver.wait_for(Duration::from_secs(5), |r| {
        r.has_log_body("tridentd stopped")
    })?;
    let spans = received.spans();
    let root = spans
        .iter()
        .find(|s| s.name == "servicing_operation")
        .context("no servicing_operation span")?;
    assert_eq!(
        root.trace_id, cli_trace,
        "the exported operation is in the CLI's trace"
    );
    assert_eq!(
        root.parent_span_id.len(),
        16,
        "a child of the CLI's span: {root:?}"
    );
    Ok(())
}
