//! OTLP export cost on the instrumented thread: nanoseconds per unit of
//! work (a span opened and closed with one event inside), side by side:
//! (a) the bus layer alone (the baseline of every ratio), (b) bus + OTLP
//! export to a collector that accepts and never answers (the queues fill:
//! the drop path), (c) bus + OTLP export to a closed port. Also the records
//! each export dropped and counted.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;
use trident_otlp::{DropReason, OtlpConfig, OtlpExport, OtlpFlags, ServiceIdentity, Signal};
use trident_telemetry::{Bus, BusConfig};

use crate::report;

const BENCH: &str = "otlp-export";
/// Repetitions of each measurement; the median is reported.
const REPEATS: usize = 3;

/// The measured unit of work.
#[inline(never)]
fn work(i: u64) {
    let _span = tracing::info_span!(target: "tridentd::bench", "write_block", block = i).entered();
    tracing::info!(target: "tridentd::bench", bytes = i, "wrote block");
}

/// Median ns per unit of work under `dispatch`.
fn measure(dispatch: &Dispatch, iterations: u64) -> f64 {
    tracing::dispatcher::with_default(dispatch, || {
        for i in 0..iterations / 10 {
            work(i);
        }
        let mut samples: Vec<f64> = (0..REPEATS)
            .map(|_| {
                let start = Instant::now();
                for i in 0..iterations {
                    work(i);
                }
                start.elapsed().as_nanos() as f64 / iterations as f64
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[REPEATS / 2]
    })
}

fn export_to(endpoint: String) -> anyhow::Result<OtlpExport> {
    let flags = OtlpFlags {
        endpoint: Some(endpoint),
        protocol: None,
        timeout: Some(Duration::from_millis(500)),
    };
    let config =
        OtlpConfig::resolve(&flags, |_| None)?.ok_or_else(|| anyhow::anyhow!("export off"))?;
    let identity = ServiceIdentity {
        service_name: "tridentd".into(),
        service_version: env!("CARGO_PKG_VERSION").into(),
        instance_id: "bench".into(),
    };
    Ok(OtlpExport::start(config, &identity)?)
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let iterations: u64 = if quick { 50_000 } else { 300_000 };

    let bus = Bus::in_memory(BusConfig::default());
    let baseline = measure(
        &Dispatch::new(tracing_subscriber::registry().with(bus.layer())),
        iterations,
    );
    report::line(
        BENCH,
        "ns_per_span_and_event.bus_only",
        baseline,
        "ns",
        Some(baseline),
    );

    // Never accepted: connections wait in the backlog, no answer ever comes.
    let stalled = TcpListener::bind("127.0.0.1:0")?;
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?.port()
    };
    for (case, endpoint) in [
        (
            "stalled_collector",
            format!("http://{}", stalled.local_addr()?),
        ),
        ("closed_port", format!("http://127.0.0.1:{closed}")),
    ] {
        let bus = Bus::in_memory(BusConfig::default());
        let export = export_to(endpoint)?;
        let ns = measure(
            &Dispatch::new(
                tracing_subscriber::registry()
                    .with(bus.layer())
                    .with(export.layer()),
            ),
            iterations,
        );
        report::line(
            BENCH,
            &format!("ns_per_span_and_event.bus_and_otlp_{case}"),
            ns,
            "ns",
            Some(baseline),
        );
        let health = std::sync::Arc::clone(export.health());
        for signal in [Signal::Traces, Signal::Logs] {
            let dropped: u64 = [DropReason::QueueFull, DropReason::ExportFailed]
                .into_iter()
                .map(|reason| health.dropped_count(signal, reason))
                .sum();
            report::line(
                BENCH,
                &format!("dropped_{}.{case}", signal.as_str()),
                dropped as f64,
                "records",
                None,
            );
        }
        let started = Instant::now();
        let flushed = export.shutdown();
        report::line(
            BENCH,
            &format!("shutdown_ms.{case}"),
            started.elapsed().as_secs_f64() * 1000.0,
            "ms",
            None,
        );
        report::line(
            BENCH,
            &format!("shutdown_flushed.{case}"),
            f64::from(u8::from(flushed)),
            "bool",
            None,
        );
    }
    Ok(())
}
