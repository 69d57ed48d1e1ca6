//! One subscriber: a position on the bus, a filter, and the events waiting
//! to be sent. Reading never blocks producers: a subscriber that fell
//! behind the ring gets a gap marker and continues at the oldest record.

mod replay;
mod start;

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use futures::Stream;
use prost::Message;
use trident_proto::v1::{
    Cursor, DropCounters, Gap, GapReason, Record, RecordKind, StreamEvent, stream_event,
};

use super::Bus;
use super::filter::WatchFilter;
use super::ring::{Entry, KIND_SLOTS, KindCounts};
use crate::journal::ReplayRequest;

/// Ring records examined per lock acquisition (bounds how long a reader
/// holds the lock producers take).
const READ_CHUNK: usize = 64;
/// Least time between two wake-ups of one subscriber.
const WAKE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);

/// One item of a subscriber's output: an event, or a record still in its
/// encoded form (sent as is by the gRPC service; decoded for in-process
/// subscribers).
#[derive(Debug)]
pub(crate) enum Out {
    Event(Box<StreamEvent>),
    /// Sequence and encoded record (without cursor).
    Raw(u64, bytes::Bytes),
}

impl Out {
    /// The event, decoding a still-encoded record (with this run's boot id
    /// when the subscriber asked for boot ids).
    pub fn into_event(self, bus: &Bus, with_boot_ids: bool) -> Option<StreamEvent> {
        match self {
            Out::Event(event) => Some(*event),
            Out::Raw(seq, bytes) => {
                let mut record = Record::decode(bytes).ok()?;
                record.cursor = Some(bus.cursor(seq));
                if with_boot_ids {
                    record.boot_id = bus.config().boot_id.clone();
                }
                Some(record_event(record))
            }
        }
    }
}

/// Work to do before reading the ring.
#[derive(Debug)]
enum Prelude {
    /// Replay records from the journal (`flush` first for this run's
    /// records); `previous_run` reports unjournaled sequences as gaps.
    Replay {
        request: Box<ReplayRequest>,
        flush: bool,
        previous_run: bool,
    },
    /// Send this event.
    Event(Box<StreamEvent>),
}

/// Keeps the bus's subscriber count.
#[derive(Debug)]
struct Registration(Bus);

impl Drop for Registration {
    fn drop(&mut self) {
        self.0.inner().subscribers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts this subscriber as waiting until dropped (even if the wait is
/// cancelled because the client went away).
struct Waiting<'a>(&'a Bus);

impl<'a> Waiting<'a> {
    fn new(bus: &'a Bus) -> Self {
        bus.inner().waiting.fetch_add(1, Ordering::SeqCst);
        Waiting(bus)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.inner().waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug)]
pub(crate) struct Subscriber {
    bus: Bus,
    /// Records carry their boot id (`WatchOptions.with_boot_ids`).
    with_boot_ids: bool,
    filter: WatchFilter,
    /// Next sequence to read from the ring.
    next: u64,
    /// Per-kind counts of every record with a sequence below `next`.
    passed: KindCounts,
    /// Snapshot: last sequence to deliver.
    stop_at: Option<u64>,
    /// Reason of the first gap (EVICTED when the start was already gone).
    first_gap_reason: GapReason,
    preludes: VecDeque<Prelude>,
    pending: VecDeque<Out>,
    max_batch: usize,
    drops: DropCounters,
    finished: bool,
    /// A gRPC Watch stream: it ends (once caught up) when the daemon shuts
    /// down, so a follower does not hold the exit for the grace period; the
    /// client resumes from its cursor on the next daemon.
    pub(crate) ends_with_remote_streams: bool,
    last_wake: std::time::Instant,
    _registration: Registration,
}

impl Subscriber {
    /// The subscriber as a stream of batches.
    pub fn into_stream(self) -> impl Stream<Item = Vec<Out>> + Send + 'static {
        futures::stream::unfold(self, |mut subscriber| async move {
            let batch = subscriber.next_batch().await?;
            Some((batch, subscriber))
        })
    }

    async fn next_batch(&mut self) -> Option<Vec<Out>> {
        loop {
            if !self.pending.is_empty() {
                let take = self.pending.len().min(self.max_batch);
                return Some(self.pending.drain(..take).collect());
            }
            if let Some(prelude) = self.preludes.pop_front() {
                self.run_prelude(prelude).await;
                continue;
            }
            if self.finished {
                return None;
            }
            if let Some(stop) = self.stop_at
                && self.next > stop
            {
                self.finished = true;
                self.push_event(StreamEvent {
                    event: Some(stream_event::Event::EndOfSnapshot(self.bus.cursor(stop))),
                });
                continue;
            }
            let bus = self.bus.clone();
            let notified = bus.inner().notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.read_ring() {
                continue;
            }
            if self.ends_with_remote_streams
                && bus.inner().remote_streams_closed.load(Ordering::SeqCst)
            {
                self.finished = true;
                continue;
            }
            // Caught up: park until a producer publishes.
            let waiting = Waiting::new(&bus);
            if bus.inner().head.load(Ordering::SeqCst) >= self.next {
                continue;
            }
            notified.await;
            drop(waiting);
            // Under a steady stream, collect a batch instead of waking per
            // record: at most one wake-up per WAKE_INTERVAL per subscriber
            // (an idle stream still gets its first record at once).
            let since = self.last_wake.elapsed();
            if since < WAKE_INTERVAL {
                tokio::time::sleep(WAKE_INTERVAL - since).await;
            }
            self.last_wake = std::time::Instant::now();
        }
    }

    /// Reads what the ring has from `next`; false when nothing new.
    fn read_ring(&mut self) -> bool {
        let mut chunk: Vec<(u64, Entry)> = Vec::new();
        let mut gap = None;
        {
            let state = self.bus.lock();
            let oldest = state.ring.oldest();
            if self.next < oldest {
                let evicted = state.ring.evicted();
                let mut missing = [0u64; KIND_SLOTS];
                for (slot, (e, p)) in missing.iter_mut().zip(evicted.iter().zip(&self.passed)) {
                    *slot = e.saturating_sub(*p);
                }
                let redeliver = state.operations.latest_within(self.next, oldest - 1);
                gap = Some((self.next, oldest - 1, missing, redeliver));
                self.passed = evicted;
                self.next = oldest;
            }
            let until = self.stop_at.unwrap_or(u64::MAX);
            state.ring.read(self.next, until, READ_CHUNK, &mut chunk);
        }
        let progressed = gap.is_some() || !chunk.is_empty();
        if let Some((first, last, missing, redeliver)) = gap {
            self.on_gap(first, last, missing, redeliver);
        }
        for (seq, entry) in chunk {
            self.passed[usize::from(entry.kind) % KIND_SLOTS] += 1;
            self.next = seq + 1;
            self.deliver(seq, &entry);
        }
        progressed
    }

    fn push_event(&mut self, event: StreamEvent) {
        self.pending.push_back(Out::Event(Box::new(event)));
    }

    fn deliver(&mut self, seq: u64, entry: &Entry) {
        if !self.filter.accepts_entry(entry) {
            return;
        }
        if !self.filter.needs_decode() {
            // Still encoded: the gRPC service sends these bytes as they are.
            self.pending.push_back(Out::Raw(seq, entry.bytes.clone()));
            return;
        }
        let Ok(mut record) = Record::decode(entry.bytes.clone()) else {
            return;
        };
        if self.filter.accepts_record(&record) {
            record.cursor = Some(self.bus.cursor(seq));
            record.boot_id = self.bus.config().boot_id.clone();
            self.push_record(record);
        }
    }

    /// Queues a decoded record, with its boot id only when asked for.
    fn push_record(&mut self, mut record: Record) {
        if !self.with_boot_ids {
            record.boot_id.clear();
        }
        self.push_event(record_event(record));
    }

    fn on_gap(&mut self, first: u64, last: u64, missing: KindCounts, redeliver: Vec<(u64, Entry)>) {
        let reason = std::mem::replace(&mut self.first_gap_reason, GapReason::SubscriberLagged);
        self.push_event(gap_event(
            self.bus.cursor(first),
            self.bus.cursor(last),
            last - first + 1,
            reason,
        ));
        // Latest progress and lifecycle states the gap covered: delivered
        // anyway, so a phase's final state is never lost.
        let redelivered_operations = redeliver
            .iter()
            .filter(|(_, e)| e.kind == RecordKind::Operation as u8)
            .count() as u64;
        for (seq, entry) in &redeliver {
            self.deliver(*seq, entry);
        }
        let kind = |k: RecordKind| missing[k as usize];
        let mut dropped = missing;
        dropped[RecordKind::Progress as usize] = 0;
        dropped[RecordKind::Operation as usize] =
            kind(RecordKind::Operation).saturating_sub(redelivered_operations);
        let coalesced = kind(RecordKind::Progress);
        self.drops.logs += dropped[RecordKind::Log as usize];
        self.drops.spans += dropped[RecordKind::Span as usize];
        self.drops.errors += dropped[RecordKind::Error as usize];
        self.drops.operations += dropped[RecordKind::Operation as usize];
        self.drops.progress_coalesced += coalesced;
        self.bus.inner().drops.add(&dropped, coalesced);
        self.push_event(StreamEvent {
            event: Some(stream_event::Event::Drops(self.drops)),
        });
    }
}

fn cursor(run_id: &str, sequence: u64) -> Cursor {
    Cursor {
        run_id: run_id.to_owned(),
        sequence,
    }
}

fn record_event(record: Record) -> StreamEvent {
    StreamEvent {
        event: Some(stream_event::Event::Record(record)),
    }
}

fn gap_event(first: Cursor, last: Cursor, count: u64, reason: GapReason) -> StreamEvent {
    StreamEvent {
        event: Some(stream_event::Event::Gap(Gap {
            first_missing: Some(first),
            last_missing: Some(last),
            count,
            reason: reason as i32,
        })),
    }
}
