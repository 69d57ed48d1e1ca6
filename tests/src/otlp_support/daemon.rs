//! Daemons that export, and daemon work that makes telemetry.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_stream::StreamExt;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{GetBusStatusRequest, WatchLogsRequest, WatchOptions, stream_event};

use crate::Daemon;

/// Short export intervals so a test does not wait for the defaults.
pub const FAST_EXPORT_ENV: &[(&str, &str)] = &[
    ("OTEL_METRIC_EXPORT_INTERVAL", "300"),
    ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ("OTEL_BLRP_SCHEDULE_DELAY", "100"),
];

pub async fn exporting_daemon(
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
pub async fn workload(daemon: &Daemon, rounds: usize) -> anyhow::Result<Duration> {
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
pub async fn bus_logs(daemon: &Daemon, target: &str) -> anyhow::Result<Vec<(i32, String)>> {
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

pub fn attr<'a>(attributes: &'a Value, key: &str) -> Option<&'a str> {
    attributes.get(key).and_then(Value::as_str)
}
