//! Memory: peak RSS of this process (bus + TelemetryService on a Unix
//! socket, the daemon's configuration) during a flood of records with one
//! stalled gRPC subscriber; RSS sampled after the ring fills and at the end
//! shows whether it stays flat.

use std::time::Duration;

use trident_proto::v1::{WatchOptions, WatchRequest};
use trident_telemetry::{Bus, BusConfig};

use crate::report;
use crate::uds::Served;

const BENCH: &str = "memory";
/// Target peak RSS.
const TARGET_MIB: f64 = 64.0;

/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
fn status_kib(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)?
                    .trim_start_matches(':')
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
        })
        .unwrap_or(0.0)
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let total: u64 = if quick { 1_000_000 } else { 10_000_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let config = BusConfig::default();
    let ring_records = config.ring_records as u64;
    let bus = Bus::in_memory(config);
    let (served, _stalled) = runtime.block_on(async {
        let served = Served::start(&bus)?;
        let mut client = served.client().await?;
        // Opened and never read: the stalled subscriber.
        let stalled = client
            .watch(WatchRequest {
                options: Some(WatchOptions::default()),
                kinds: vec![],
            })
            .await?
            .into_inner();
        while bus.status().subscribers < 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        anyhow::Ok((served, (client, stalled)))
    })?;
    let start_rss = status_kib("VmRSS");
    let mut rss_after_fill = 0.0;
    let mut rss_halfway = 0.0;
    tracing::subscriber::with_default(bus.subscriber(), || {
        for i in 0..total {
            tracing::info!(target: "tridentd::bench", disk = "/dev/sda", bytes = i, ok = true, "wrote block");
            if i == ring_records * 2 {
                rss_after_fill = status_kib("VmRSS");
            } else if i == total / 2 {
                rss_halfway = status_kib("VmRSS");
            }
        }
    });
    let end_rss = status_kib("VmRSS");
    let peak = status_kib("VmHWM");
    report::line(BENCH, "flood_records", total as f64, "records", None);
    report::line(BENCH, "rss_before_flood", start_rss / 1024.0, "MiB", None);
    report::line(
        BENCH,
        "rss_after_ring_filled",
        rss_after_fill / 1024.0,
        "MiB",
        None,
    );
    report::line(
        BENCH,
        "rss_halfway",
        rss_halfway / 1024.0,
        "MiB",
        Some(rss_after_fill / 1024.0),
    );
    report::line(
        BENCH,
        "rss_at_end",
        end_rss / 1024.0,
        "MiB",
        Some(rss_after_fill / 1024.0),
    );
    report::line(BENCH, "peak_rss", peak / 1024.0, "MiB", Some(TARGET_MIB));
    let status = bus.status();
    report::line(
        BENCH,
        "ring_bytes",
        status.ring_bytes as f64 / (1024.0 * 1024.0),
        "MiB",
        None,
    );
    drop(served);
    Ok(())
}
