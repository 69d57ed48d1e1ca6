//! One subscriber of the telemetry bus (`Watch`, `WatchLogs` or
//! `WatchProgress`), following live until told where the operation ended,
//! and the reference list of an operation's records (a snapshot read
//! after it completed).

use std::path::Path;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tonic::transport::Channel;
use trident_proto::client::{connect_uds, uds_endpoint};
use trident_proto::v1::{
    DropCounters, OperationEvent, Record, StreamEvent, WatchLogsRequest, WatchOptions,
    WatchProgressRequest, WatchRequest, record, stream_event,
    telemetry_service_client::TelemetryServiceClient,
};

/// A deliberately slow subscriber pauses this long after each response
/// while the update runs.
const SLOW_PAUSE: Duration = Duration::from_millis(500);
/// HTTP/2 stream and connection windows of a slow subscriber. hyper's
/// client defaults (2 MiB per stream, 5 MiB per connection) let the
/// daemon push thousands of records into a client that reads two a
/// second, so the daemon never sees it lag: the transport, not the bus,
/// absorbs the slowness. Even the protocol's default 64 KiB holds a whole
/// update (100-200 records, 25-50 KiB). With 4 KiB (about 16 records) the lag
/// reaches the daemon's ring, which is what this benchmark is about.
pub const SLOW_WINDOW: u32 = 4 * 1024;

/// Which RPC a subscriber follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Watch,
    Logs,
    Progress,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Watch, Kind::Logs, Kind::Progress];

    /// The `i`th of `n` subscribers: half `Watch`, a quarter each of the
    /// other two.
    pub fn of(i: usize, n: usize) -> Kind {
        match i * 4 / n {
            0 | 1 => Kind::Watch,
            2 => Kind::Logs,
            _ => Kind::Progress,
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// The RPC's name, for result lines.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Watch => "watch",
            Kind::Logs => "watch_logs",
            Kind::Progress => "watch_progress",
        }
    }
}

/// What one subscriber received.
#[derive(Debug, Default)]
pub struct Seen {
    /// (sequence, operation id) of each record, in arrival order.
    pub records: Vec<(u64, String)>,
    /// Records reported missing by Gap events.
    pub gap_records: u64,
    /// DropCounters events received.
    pub drop_events: u64,
    /// The last DropCounters received (cumulative for the subscriber).
    pub drops: DropCounters,
    /// Whether the operation's completed record arrived (live or
    /// re-delivered after a gap: a final state is never lost).
    pub saw_completion: bool,
}

type Events = Pin<Box<dyn Stream<Item = Result<Vec<StreamEvent>, tonic::Status>> + Send>>;

/// A connection of its own to the daemon; a slow subscriber's advertises
/// [`SLOW_WINDOW`].
pub async fn connect(socket: &Path, slow: bool) -> anyhow::Result<Channel> {
    let mut endpoint = uds_endpoint();
    if slow {
        endpoint = endpoint
            .initial_stream_window_size(SLOW_WINDOW)
            .initial_connection_window_size(SLOW_WINDOW);
    }
    Ok(connect_uds(endpoint, socket).await?)
}

/// Opens the stream of `kind` (returns once the daemon accepted it).
pub async fn open(channel: Channel, kind: Kind, options: WatchOptions) -> anyhow::Result<Events> {
    let mut client = TelemetryServiceClient::new(channel);
    let options = Some(options);
    Ok(match kind {
        Kind::Watch => Box::pin(
            client
                .watch(WatchRequest {
                    options,
                    kinds: Vec::new(),
                })
                .await?
                .into_inner()
                .map(|r| r.map(|r| r.events)),
        ),
        Kind::Logs => Box::pin(
            client
                .watch_logs(WatchLogsRequest { options })
                .await?
                .into_inner()
                .map(|r| r.map(|r| r.events)),
        ),
        Kind::Progress => Box::pin(
            client
                .watch_progress(WatchProgressRequest { options })
                .await?
                .into_inner()
                .map(|r| r.map(|r| r.events)),
        ),
    })
}

/// The operation a record belongs to ("" for none).
fn operation_of(record: &Record) -> &str {
    match &record.record {
        Some(record::Record::Log(r)) => &r.operation_id,
        Some(record::Record::Span(r)) => &r.operation_id,
        Some(record::Record::Progress(r)) => &r.operation_id,
        Some(record::Record::Error(r)) => &r.operation_id,
        Some(record::Record::Operation(r)) => &r.operation_id,
        Some(record::Record::OverallProgress(r)) => &r.operation_id,
        None => "",
    }
}

/// Adds one response's events to `seen`; returns the highest sequence.
fn absorb(seen: &mut Seen, events: Vec<StreamEvent>, mut head: u64) -> u64 {
    for event in events {
        match event.event {
            Some(stream_event::Event::Record(r)) => {
                let seq = r.cursor.as_ref().map_or(0, |c| c.sequence);
                head = head.max(seq);
                if let Some(record::Record::Operation(op)) = &r.record {
                    seen.saw_completion |= op.event() == OperationEvent::Completed;
                }
                seen.records.push((seq, operation_of(&r).to_owned()));
            }
            Some(stream_event::Event::Gap(g)) => {
                seen.gap_records += g.count;
                // What the gap covers is behind us too: a subscriber whose
                // last record was lost must not wait for it.
                let last = g.last_missing.as_ref().map_or(0, |c| c.sequence);
                head = head.max(last);
            }
            Some(stream_event::Event::Drops(d)) => {
                seen.drop_events += 1;
                seen.drops = d;
            }
            _ => {}
        }
    }
    head
}

/// Follows `events` until the sequence `stop` names has been received or
/// the stream ends. A `slow` subscriber pauses after every response until
/// `hurry` turns true (the update is over), then drains at full speed to
/// the operation's end, so it hears what it lost (Gap, DropCounters).
pub async fn follow(
    mut events: Events,
    slow: bool,
    mut stop: watch::Receiver<Option<u64>>,
    hurry: watch::Receiver<bool>,
) -> Seen {
    let mut seen = Seen::default();
    let mut head = 0;
    loop {
        if let Some(last) = *stop.borrow_and_update()
            && head >= last
        {
            break;
        }
        tokio::select! {
            item = events.next() => match item {
                Some(Ok(batch)) => {
                    head = absorb(&mut seen, batch, head);
                    if slow && !*hurry.borrow() {
                        tokio::time::sleep(SLOW_PAUSE).await;
                    }
                }
                _ => break,
            },
            changed = stop.changed() => if changed.is_err() { break },
        }
    }
    seen
}

/// Every record of `operation` a stream of `kind` delivers, read as a
/// snapshot once the operation is over: (sequence, operation id) in order.
pub async fn reference(
    channel: Channel,
    kind: Kind,
    operation: &str,
) -> anyhow::Result<Vec<(u64, String)>> {
    let options = WatchOptions {
        snapshot: true,
        operation_id: operation.to_owned(),
        ..WatchOptions::default()
    };
    let mut events = open(channel, kind, options).await?;
    let mut seen = Seen::default();
    while let Some(batch) = events.next().await {
        absorb(&mut seen, batch?, 0);
    }
    if seen.gap_records > 0 {
        anyhow::bail!(
            "the reference snapshot of {kind:?} has gaps ({})",
            seen.gap_records
        );
    }
    Ok(seen.records)
}
