//! OTLP export when the collector is down or hangs: servicing is not slowed,
//! the loss is counted and told once, shutdown is bounded, export recovers.
//!
//! Real receiver: `@elastic/mockotlpserver` (npm, started by
//! tests/otlp/receiver.js on free loopback ports), which writes every
//! request it gets as a JSON line. Needs `node` and `npm ci` at the repo root
//! (scripts/test.sh does both).

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use trident_e2e::Daemon;
use trident_e2e::otlp_support::{
    Receiver, StalledCollector, bus_logs, closed_port, exporting_daemon, free_port, workload,
};
use trident_e2e::servicing_support;
use trident_proto::v1::LogLevel;

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

#[tokio::test(flavor = "multi_thread")]
async fn a_collector_that_is_down_or_stalled_costs_servicing_nothing() -> anyhow::Result<()> {
    let (off, mut baseline, _fixture) = timed_install(None).await?;
    baseline.stop();

    let stalled = StalledCollector::start()?;
    let cases = [
        ("closed port", closed_port()?),
        ("stalled collector", stalled.endpoint()),
    ];
    for (case, endpoint) in cases {
        let (mut took, mut daemon, _fixture) = timed_install(Some(&endpoint)).await?;
        let bound = off * 2 + Duration::from_secs(2);
        println!("{case}: install took {took:?} (export off {off:?}, bound {bound:?})");
        if took > bound {
            // One more try, so a load spike on a shared machine is not taken
            // for a cost of the export; a real cost (waiting on the collector)
            // shows every time.
            let (again, _, _) = timed_install(Some(&endpoint)).await?;
            println!("{case}: again {again:?}");
            took = took.min(again);
        }
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
        // Off the runtime's thread, so this test's idle connections answer
        // the daemon's graceful close as a live client would.
        let status = tokio::task::block_in_place(|| daemon.stop());
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
