//! Hot path: nanoseconds per `info!` with three fields, side by side:
//! (a) registry only, (b) our bus layer with 0, 1 and 4 live subscribers
//! (in-process subscribers that decode every record, and gRPC subscribers
//! over the Unix socket, as the daemon's clients are), (c) `tracing_subscriber::fmt` JSON to `io::sink` (the
//! baseline of every ratio), (d) opentelemetry-appender-tracing with a
//! no-op exporter (batch processor).
//!
//! Each case is reported twice: wall-clock ns per event (`ns_per_event.*`)
//! and the emitting thread's own CPU ns per event (`cpu_ns_per_event.*`).
//! On a machine with fewer cores than busy threads, subscribers' tasks are
//! scheduled on the producer's core and inflate its wall time; the CPU
//! figure is what the `info!` call itself costs.

use std::time::Instant;

use futures::StreamExt;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, SdkLoggerProvider};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;
use trident_telemetry::{Bus, BusConfig, Subscription};

use crate::end_to_end::{self, Client};
use crate::report::{self, median};
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

/// Median cost of one event: wall-clock and the calling thread's CPU time.
#[derive(Clone, Copy, Debug)]
struct Cost {
    wall_ns: f64,
    cpu_ns: f64,
}

/// CPU time this thread has used, in ns (0 if the clock is unavailable).
fn thread_cpu_ns() -> f64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as f64 * 1e9 + t.tv_nsec() as f64)
        .unwrap_or(0.0)
}

/// Median cost per event under `dispatch`.
fn measure(dispatch: &Dispatch, iterations: u64) -> Cost {
    tracing::dispatcher::with_default(dispatch, || {
        for i in 0..iterations / 10 {
            emit(i);
        }
        let (wall, cpu): (Vec<f64>, Vec<f64>) = (0..REPEATS)
            .map(|_| {
                let (start, cpu_start) = (Instant::now(), thread_cpu_ns());
                for i in 0..iterations {
                    emit(i);
                }
                let n = iterations as f64;
                (
                    start.elapsed().as_nanos() as f64 / n,
                    (thread_cpu_ns() - cpu_start) / n,
                )
            })
            .unzip();
        Cost {
            wall_ns: median(wall),
            cpu_ns: median(cpu),
        }
    })
}

/// Reports `cost` as `ns_per_event.NAME` and `cpu_ns_per_event.NAME`, each
/// against the same measure of the fmt JSON baseline.
fn report_cost(name: &str, cost: Cost, baseline: Cost) {
    report::line(
        BENCH,
        &format!("ns_per_event.{name}"),
        cost.wall_ns,
        "ns",
        Some(baseline.wall_ns),
    );
    report::line(
        BENCH,
        &format!("cpu_ns_per_event.{name}"),
        cost.cpu_ns,
        "ns",
        Some(baseline.cpu_ns),
    );
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
    let baseline = fmt_json;
    report_cost("fmt_json_sink", fmt_json, baseline);

    let registry = measure(&Dispatch::new(tracing_subscriber::registry()), iterations);
    report_cost("registry_only", registry, baseline);

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
        let cost = measure(&Dispatch::new(bus.subscriber()), iterations);
        report_cost(
            &format!("bus_layer_{subscribers}_subscribers"),
            cost,
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
        let cost = measure(&Dispatch::new(bus.subscriber()), iterations);
        report_cost(
            &format!("bus_layer_{subscribers}_grpc_subscribers"),
            cost,
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
    report_cost("otel_appender_noop_exporter", otel, baseline);
    let _ = provider.shutdown();
    Ok(())
}
