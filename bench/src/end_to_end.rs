//! End to end: records per second from `info!` to gRPC subscribers over a
//! Unix socket (bus and TelemetryService in this process, served on a
//! socket; clients are real tonic clients on their own connections).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio_stream::StreamExt;
use trident_proto::v1::{StreamEvent, WatchOptions, WatchRequest, stream_event};
use trident_telemetry::{Bus, BusConfig};

use crate::report;
use crate::uds::Served;

const BENCH: &str = "end-to-end";

/// What one subscriber saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    records: AtomicU64,
    gapped: AtomicU64,
}

/// How a bench subscriber reads its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Client {
    /// The generated tonic client: every record fully decoded.
    Decoding,
    /// Decodes the response framing only (records stay bytes), as a
    /// forwarder or recorder would; gaps are decoded.
    Framing,
}

/// A Watch response with its events left encoded (wire-compatible with
/// every Watch response: `repeated StreamEvent events = 1`).
#[derive(Clone, PartialEq, prost::Message)]
struct FramedResponse {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    events: Vec<bytes::Bytes>,
}

/// Key of `StreamEvent.record` (field 1, length-delimited).
const RECORD_KEY: u8 = 0x0a;

fn tally(seen: &Seen, event: StreamEvent) {
    match event.event {
        Some(stream_event::Event::Record(_)) => {
            seen.records.fetch_add(1, Ordering::Relaxed);
        }
        Some(stream_event::Event::Gap(gap)) => {
            seen.gapped.fetch_add(gap.count, Ordering::Relaxed);
        }
        _ => {}
    }
}

/// Starts `count` following Watch subscribers; each counts records and
/// gapped sequences until the stream ends.
pub(crate) async fn subscribers(
    served: &Served,
    count: usize,
    client: Client,
) -> anyhow::Result<Vec<Arc<Seen>>> {
    let mut seen = Vec::new();
    for _ in 0..count {
        let request = WatchRequest {
            options: Some(WatchOptions {
                max_batch: 1024,
                ..WatchOptions::default()
            }),
            kinds: vec![],
        };
        let counters = Arc::new(Seen::default());
        seen.push(counters.clone());
        match client {
            Client::Decoding => {
                let mut stream = served.client().await?.watch(request).await?.into_inner();
                tokio::spawn(async move {
                    while let Some(Ok(response)) = stream.next().await {
                        for event in response.events {
                            tally(&counters, event);
                        }
                    }
                });
            }
            Client::Framing => {
                let mut grpc = tonic::client::Grpc::new(served.channel().await?);
                grpc.ready().await?;
                let path =
                    http::uri::PathAndQuery::from_static("/trident.v1.TelemetryService/Watch");
                let codec = tonic_prost::ProstCodec::<WatchRequest, FramedResponse>::default();
                let mut stream = grpc
                    .server_streaming(tonic::Request::new(request), path, codec)
                    .await?
                    .into_inner();
                tokio::spawn(async move {
                    while let Some(Ok(response)) = stream.next().await {
                        for event in response.events {
                            if event.first() == Some(&RECORD_KEY) {
                                counters.records.fetch_add(1, Ordering::Relaxed);
                            } else if let Ok(event) = <StreamEvent as prost::Message>::decode(event)
                            {
                                tally(&counters, event);
                            }
                        }
                    }
                });
            }
        }
    }
    Ok(seen)
}

pub(crate) async fn wait_subscribed(bus: &Bus, count: usize) {
    while (bus.status().subscribers as usize) < count {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until every subscriber accounted for `total` sequences (received
/// or gapped), or until nothing moved for a second.
async fn wait_accounted(seen: &[Arc<Seen>], total: u64) {
    let mut last = 0;
    let mut still = Instant::now();
    loop {
        let done: u64 = seen
            .iter()
            .map(|s| s.records.load(Ordering::Relaxed) + s.gapped.load(Ordering::Relaxed))
            .min()
            .unwrap_or(total);
        if done >= total {
            return;
        }
        if done != last {
            last = done;
            still = Instant::now();
        } else if still.elapsed() > Duration::from_secs(1) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let total = if quick { 500_000 } else { 3_000_000 };
    runtime.block_on(flood(total, Client::Framing))?;
    runtime.block_on(flood(total, Client::Decoding))?;
    runtime.block_on(sustained(100_000, if quick { 2 } else { 10 }, 4))?;
    Ok(())
}

/// As fast as the producer can: records delivered per second to one subscriber.
async fn flood(total: u64, client: Client) -> anyhow::Result<()> {
    let bus = Bus::in_memory(BusConfig::default());
    let served = Served::start(&bus)?;
    let seen = subscribers(&served, 1, client).await?;
    wait_subscribed(&bus, 1).await;
    let producer_bus = bus.clone();
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        tracing::subscriber::with_default(producer_bus.subscriber(), || {
            for i in 0..total {
                tracing::info!(target: "tridentd::bench", disk = "/dev/sda", bytes = i, ok = true, "wrote block");
            }
        });
        start.elapsed()
    });
    let produced_in = tokio::task::spawn_blocking(move || producer.join())
        .await?
        .map_err(|_| anyhow::anyhow!("producer panicked"))?;
    wait_accounted(&seen, total).await;
    let elapsed = start.elapsed().as_secs_f64();
    let received = seen[0].records.load(Ordering::Relaxed) as f64;
    let gapped = seen[0].gapped.load(Ordering::Relaxed) as f64;
    let producer_rate = total as f64 / produced_in.as_secs_f64();
    let name = match client {
        Client::Framing => "flood_framing_client",
        Client::Decoding => "flood_decoding_client",
    };
    report::line(
        BENCH,
        &format!("{name}.producer_records_per_second"),
        producer_rate,
        "records/s",
        None,
    );
    report::line(
        BENCH,
        &format!("{name}.delivered_records_per_second"),
        received / elapsed,
        "records/s",
        Some(1_000_000.0),
    );
    report::line(
        BENCH,
        &format!("{name}.gapped_records"),
        gapped,
        "records",
        None,
    );
    Ok(())
}

/// A paced producer (`rate` records/s for `seconds`) and `count`
/// subscribers: gapped records per subscriber (target 0).
async fn sustained(rate: u64, seconds: u64, count: usize) -> anyhow::Result<()> {
    let bus = Bus::in_memory(BusConfig::default());
    let served = Served::start(&bus)?;
    let seen = subscribers(&served, count, Client::Decoding).await?;
    wait_subscribed(&bus, count).await;
    let total = rate * seconds;
    let producer_bus = bus.clone();
    let start = Instant::now();
    let producer = std::thread::spawn(move || {
        tracing::subscriber::with_default(producer_bus.subscriber(), || {
            // 1 ms ticks of rate/1000 records each.
            let per_tick = rate / 1000;
            let mut sent = 0u64;
            let begin = Instant::now();
            while sent < total {
                for _ in 0..per_tick {
                    tracing::info!(target: "tridentd::bench", disk = "/dev/sda", bytes = sent, ok = true, "wrote block");
                    sent += 1;
                }
                let due = begin + Duration::from_micros(sent * 1_000_000 / rate);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
        });
    });
    tokio::task::spawn_blocking(move || producer.join())
        .await?
        .map_err(|_| anyhow::anyhow!("producer panicked"))?;
    let produced_in = start.elapsed().as_secs_f64();
    wait_accounted(&seen, total).await;
    let gapped: u64 = seen.iter().map(|s| s.gapped.load(Ordering::Relaxed)).sum();
    let received: u64 = seen.iter().map(|s| s.records.load(Ordering::Relaxed)).sum();
    report::line(
        BENCH,
        &format!("sustained_{rate}_per_s_{count}_subscribers.achieved_rate"),
        total as f64 / produced_in,
        "records/s",
        Some(rate as f64),
    );
    report::line(
        BENCH,
        &format!("sustained_{rate}_per_s_{count}_subscribers.gapped_records"),
        gapped as f64,
        "records",
        None,
    );
    report::line(
        BENCH,
        &format!("sustained_{rate}_per_s_{count}_subscribers.delivered_records"),
        received as f64,
        "records",
        Some((total * count as u64) as f64),
    );
    Ok(())
}
