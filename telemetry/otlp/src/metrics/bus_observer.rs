//! Feeds [`ServicingMetrics`] from the bus: one in-process subscription
//! over every record kind, read on the export runtime (never on the
//! producer's path: the bus does not wait for a subscriber).

use std::sync::Arc;

use futures::StreamExt;
use trident_proto::v1::{StreamEvent, WatchOptions, stream_event};

use super::{BusGaugeSource, BusGauges, ServicingMetrics};
use trident_telemetry::{Bus, Subscription};

/// The bus's drop counters and subscriber count, as the gauges read them.
/// The observer's own subscription is not counted.
pub fn bus_gauges(bus: &Bus) -> BusGaugeSource {
    let bus = bus.clone();
    Arc::new(move || {
        let status = bus.status();
        BusGauges {
            drops: status.drops.unwrap_or_default(),
            subscribers: status.subscribers.saturating_sub(1),
        }
    })
}

/// Subscribes to every record published from now on and hands each to
/// `metrics`. Runs until the bus's stream ends or the runtime stops.
pub fn spawn(bus: &Bus, metrics: Arc<ServicingMetrics>, runtime: &tokio::runtime::Handle) {
    let stream = bus.subscribe(Subscription {
        options: WatchOptions::default(),
        kinds: Vec::new(),
    });
    runtime.spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(StreamEvent { event }) = stream.next().await {
            if let Some(stream_event::Event::Record(record)) = event {
                metrics.observe(&record);
            }
        }
    });
}
