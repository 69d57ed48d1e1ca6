//! One subscriber of the telemetry bus (`Watch`, `WatchLogs` or
//! `WatchProgress`), following live until told where the operation ended,
//! and the reference list of an operation's records (a snapshot read
//! after it completed).

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::watch;
use tonic::transport::Channel;
use trident_proto::v1::{
    Record, StreamEvent, WatchLogsRequest, WatchOptions, WatchProgressRequest, WatchRequest,
    record, stream_event, telemetry_service_client::TelemetryServiceClient,
};

/// A deliberately slow subscriber pauses this long after each response.
const SLOW_PAUSE: Duration = Duration::from_millis(500);

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
}

type Events = Pin<Box<dyn Stream<Item = Result<Vec<StreamEvent>, tonic::Status>> + Send>>;

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
                seen.records.push((seq, operation_of(&r).to_owned()));
            }
            Some(stream_event::Event::Gap(g)) => seen.gap_records += g.count,
            Some(stream_event::Event::Drops(_)) => seen.drop_events += 1,
            _ => {}
        }
    }
    head
}

/// Follows `events` until the sequence `stop` names has been received,
/// `quit` turns true, or the stream ends; `slow` pauses after every
/// response.
pub async fn follow(
    mut events: Events,
    slow: bool,
    mut stop: watch::Receiver<Option<u64>>,
    mut quit: watch::Receiver<bool>,
) -> Seen {
    let mut seen = Seen::default();
    let mut head = 0;
    loop {
        if let Some(last) = *stop.borrow_and_update()
            && head >= last
        {
            break;
        }
        if *quit.borrow_and_update() {
            break;
        }
        tokio::select! {
            _ = quit.changed() => {}
            item = events.next() => match item {
                Some(Ok(batch)) => {
                    head = absorb(&mut seen, batch, head);
                    if slow {
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
