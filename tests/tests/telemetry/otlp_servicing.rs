//! Servicing operations in the OTLP export: the span tree in the caller's
//! trace (gRPC traceparent and the CLI's own), correlated logs, servicing
//! metrics. Adds the servicing metrics to target/otlp/exported-metrics.json.
//!
//! Real receiver: `@elastic/mockotlpserver` (npm, started by
//! tests/otlp/receiver.js on free loopback ports), which writes every
//! request it gets as a JSON line. Needs `node` and `npm ci` at the repo root
//! (scripts/test.sh does both).

use std::time::Duration;

use anyhow::{Context, ensure};
use serde_json::Value;
use trident_e2e::otlp_support::{Receiver, attr, exporting_daemon, record_exported_metrics};
use trident_e2e::servicing_support;

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
    // Overall progress gauges: the newest operation's final figures (the
    // daemon's export at shutdown), what the dashboards' progress panels read.
    let last_install = |name: &str| metric(name)?.gauge_of_kind("clean_install");
    let planned = last_install("trident.servicing.progress.planned")?;
    assert!(planned > 0.0);
    assert_eq!(last_install("trident.servicing.progress.done")?, planned);
    let steps = last_install("trident.servicing.progress.steps.planned")?;
    assert!(steps > 0.0);
    assert_eq!(
        last_install("trident.servicing.progress.steps.done")?,
        steps,
        "every planned step of the install ran"
    );
    // No rate or ETA asserted here: a quick install may end before the
    // daemon measures one (otlp_progress.rs covers them on a slow source).
    record_exported_metrics("otlp_servicing", &metrics)?;
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
