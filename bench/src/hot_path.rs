//! Hot path: nanoseconds per `info!` with three fields, side by side:
//! (a) registry only, (b) our bus layer with 0, 1 and 4 live subscribers
//! (in-process subscribers that decode every record, and gRPC subscribers
//! over the Unix socket, as the daemon's clients are), (c) `tracing_subscriber::fmt` JSON to `io::sink` (the
//! baseline of every ratio), (d) opentelemetry-appender-tracing with a
//! no-op exporter (batch processor).

use std::time::Instant;

use futures::StreamExt;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, SdkLoggerProvider};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;
use trident_telemetry::{Bus, BusConfig, Subscription};

use crate::end_to_end::{self, Client};
use crate::report;
use crate::uds::Served;

const BENCH: &str = "hot-path";
/// Repetitions of each measurement; the median is reported.
const REPEATS: usize = 3;

/// An exporter that drops everything (measures the appender, not I/O).
#[derive(Debug)]
struct NoopExporter;

impl LogExporter for NoopExporter {
    async fn export(&self, _batch: LogBatch<'_>) -> OTelSdkResult {
        Ok(())
    }
}

/// The measured statement: one event, three fields and a message.
#[inline(never)]
fn emit(i: u64) {
    tracing::info!(target: "tridentd::bench", disk = "/dev/sda", bytes = i, ok = true, "wrote block");
}

/// Median ns per event under `dispatch`.
fn measure(dispatch: &Dispatch, iterations: u64) -> f64 {
    tracing::dispatcher::with_default(dispatch, || {
        for i in 0..iterations / 10 {
            emit(i);
        }
        let mut samples: Vec<f64> = (0..REPEATS)
            .map(|_| {
                let start = Instant::now();
                for i in 0..iterations {
                    emit(i);
                }
                start.elapsed().as_nanos() as f64 / iterations as f64
            })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[REPEATS / 2]
    })
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let iterations: u64 = if quick { 200_000 } else { 1_000_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;

    let fmt_json = measure(
        &Dispatch::new(
            tracing_subscriber::registry().with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::sink),
            ),
        ),
        iterations,
    );
    let baseline = Some(fmt_json);
    report::line(
        BENCH,
        "ns_per_event.fmt_json_sink",
        fmt_json,
        "ns",
        baseline,
    );

    let registry = measure(&Dispatch::new(tracing_subscriber::registry()), iterations);
    report::line(
        BENCH,
        "ns_per_event.registry_only",
        registry,
        "ns",
        baseline,
    );

    for subscribers in [0usize, 1, 4] {
        let bus = Bus::in_memory(BusConfig::default());
        let drains: Vec<_> = (0..subscribers)
            .map(|_| {
                let mut stream = bus.subscribe(Subscription::default());
                runtime.spawn(async move { while stream.next().await.is_some() {} })
            })
            .collect();
        while (bus.status().subscribers as usize) < subscribers {
            std::thread::yield_now();
        }
        let ns = measure(&Dispatch::new(bus.subscriber()), iterations);
        report::line(
            BENCH,
            &format!("ns_per_event.bus_layer_{subscribers}_subscribers"),
            ns,
            "ns",
            baseline,
        );
        let drops = bus.status().drops.unwrap_or_default();
        report::line(
            BENCH,
            &format!("subscriber_dropped_records.bus_layer_{subscribers}_subscribers"),
            (drops.logs) as f64,
            "records",
            None,
        );
        for drain in drains {
            drain.abort();
        }
    }

    // The daemon's real consumers: gRPC subscribers over the Unix socket
    // (records leave the ring pre-encoded; these clients read the framing).
    for subscribers in [1usize, 4] {
        let bus = Bus::in_memory(BusConfig::default());
        let served = runtime.block_on(async {
            let served = Served::start(&bus)?;
            end_to_end::subscribers(&served, subscribers, Client::Framing).await?;
            end_to_end::wait_subscribed(&bus, subscribers).await;
            anyhow::Ok(served)
        })?;
        let ns = measure(&Dispatch::new(bus.subscriber()), iterations);
        report::line(
            BENCH,
            &format!("ns_per_event.bus_layer_{subscribers}_grpc_subscribers"),
            ns,
            "ns",
            baseline,
        );
        drop(served);
    }

    let provider = SdkLoggerProvider::builder()
        .with_batch_exporter(NoopExporter)
        .build();
    let otel = measure(
        &Dispatch::new(tracing_subscriber::registry().with(
            opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(&provider),
        )),
        iterations,
    );
    report::line(
        BENCH,
        "ns_per_event.otel_appender_noop_exporter",
        otel,
        "ns",
        baseline,
    );
    let _ = provider.shutdown();
    Ok(())
}
