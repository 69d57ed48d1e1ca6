//! The bus: one place that owns the recent records (the ring), the tracked
//! operations and the drop counters. Producers append under a short lock
//! and never wait for a consumer; subscribers read from their own position
//! and are woken when something new arrives.

mod boots;
mod drops;
pub(crate) mod filter;
mod last_error;
pub(crate) mod operations;
mod overall_feed;
pub(crate) mod ring;
pub(crate) mod subscriber;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::Notify;
use trident_proto::v1::{
    Cursor, DropCounters, ErrorReport, GetBusStatusResponse, OperationSummary, RecordKind,
    StreamEvent, WatchOptions,
};

use crate::config::BusConfig;
use crate::journal::{Journal, JournalHistory};
use crate::overall::OverallTracker;
use drops::DropTotals;
use operations::OperationTable;
use ring::{Entry, Ring};

/// What to deliver to a subscriber.
#[derive(Clone, Debug, Default)]
pub struct Subscription {
    /// Where to start, what to filter, whether to follow.
    pub options: WatchOptions,
    /// Kinds to deliver; empty means every kind.
    pub kinds: Vec<RecordKind>,
}

/// Handle to the bus; cheap to clone, all clones share one bus.
#[derive(Clone, Debug)]
pub struct Bus {
    inner: Arc<BusInner>,
}

#[derive(Debug)]
pub(crate) struct BusInner {
    pub run_id: Arc<str>,
    pub started: SystemTime,
    pub config: BusConfig,
    pub state: Mutex<BusState>,
    pub notify: Notify,
    /// Sequence of the newest record, readable without the lock.
    pub head: AtomicU64,
    /// Subscribers parked waiting for a record; producers skip the wake-up
    /// call when nobody waits (the common case under load).
    pub waiting: AtomicUsize,
    pub subscribers: AtomicU32,
    /// Set by [`Bus::end_remote_streams`]: gRPC followers end once caught up.
    pub remote_streams_closed: AtomicBool,
    pub drops: DropTotals,
    pub last_error: Mutex<Option<ErrorReport>>,
    pub journal: Option<Journal>,
    /// Journaled records of earlier runs, for replay and ListOperations.
    pub history: Option<JournalHistory>,
    /// Overall progress of the running operations (derived from phases).
    pub overall: Mutex<OverallTracker>,
    /// Run before the journal is handed over (journal readers' cursors).
    pub handover_hooks: crate::journal::HandoverHooks,
}

/// State behind the bus lock.
#[derive(Debug)]
pub(crate) struct BusState {
    pub ring: Ring,
    pub operations: OperationTable,
}

/// What publishing a record also updates.
#[derive(Debug)]
pub(crate) enum Effect<'a> {
    None,
    Progress { phase_id: &'a str },
    Started(OperationSummary),
    Completed(OperationSummary),
}

impl Bus {
    /// A bus without journal (whatever `journal_dir` says): records live in
    /// the ring only. Cannot fail.
    pub fn in_memory(config: BusConfig) -> Bus {
        let config = BusConfig {
            journal_dir: None,
            ..config
        };
        Bus::assemble(
            Arc::from(uuid::Uuid::new_v4().to_string()),
            config,
            None,
            None,
        )
    }

    /// The bus of `run_id` over `journal` and what `history` holds of
    /// earlier runs (see [`Bus::new`] for a bus on a state directory).
    pub(crate) fn assemble(
        run_id: Arc<str>,
        config: BusConfig,
        journal: Option<Journal>,
        history: Option<JournalHistory>,
    ) -> Bus {
        let mut operations = OperationTable::new(config.tracked_operations);
        let mut last_error = None;
        if let Some(history) = &history {
            for summary in history.operations() {
                operations.add_previous(summary);
            }
            last_error = history.last_error();
        }
        let ring = Ring::new(config.ring_records, config.ring_bytes);
        Bus {
            inner: Arc::new(BusInner {
                run_id,
                started: SystemTime::now(),
                config,
                state: Mutex::new(BusState { ring, operations }),
                notify: Notify::new(),
                head: AtomicU64::new(0),
                waiting: AtomicUsize::new(0),
                subscribers: AtomicU32::new(0),
                remote_streams_closed: AtomicBool::new(false),
                drops: DropTotals::default(),
                last_error: Mutex::new(last_error),
                journal,
                history,
                overall: Mutex::new(OverallTracker::default()),
                handover_hooks: Default::default(),
            }),
        }
    }

    /// Unique id (UUID v4) of this daemon run.
    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// Runs `hook` before each journal handover ([`Bus::hand_over_journal`]):
    /// a reader of the journal that keeps a cursor file in the journal
    /// folder (`*.cursor`, carried to the receiving volume) brings it up to
    /// date there, e.g. the OTLP export flushes.
    pub fn before_journal_handover(&self, hook: crate::journal::HandoverHook) {
        self.inner.handover_hooks.add(hook);
    }

    /// Configuration the bus runs with.
    pub fn config(&self) -> &BusConfig {
        &self.inner.config
    }

    /// The cursor naming a sequence of this run.
    pub fn cursor(&self, sequence: u64) -> Cursor {
        Cursor {
            run_id: self.inner.run_id.to_string(),
            sequence,
        }
    }

    pub(crate) fn inner(&self) -> &Arc<BusInner> {
        &self.inner
    }

    /// The overall-progress derivation (its own lock, taken before the
    /// bus lock is, never inside it).
    pub(crate) fn overall(&self) -> MutexGuard<'_, OverallTracker> {
        self.inner
            .overall
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, BusState> {
        // A panic while holding the lock leaves the ring consistent (every
        // mutation completes before anything can panic), so keep going.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Appends a record; never waits for a subscriber or the journal.
    pub(crate) fn publish(&self, entry: Entry, effect: Effect<'_>) -> u64 {
        let journaled = entry.operation.is_some()
            || entry.kind == RecordKind::Operation as u8
            || entry.kind == RecordKind::Error as u8;
        let sync = matches!(effect, Effect::Completed(_));
        let seq = {
            let mut state = self.lock();
            // Cloning promotes the bytes to shared storage: only when needed.
            let bytes = (journaled && self.inner.journal.is_some()).then(|| entry.bytes.clone());
            let seq = match effect {
                Effect::None => state.ring.push(entry),
                Effect::Progress { phase_id } => {
                    let operation = entry.operation.clone();
                    let kept = entry.clone();
                    let seq = state.ring.push(entry);
                    if let Some(operation) = operation {
                        state.operations.progress(&operation, phase_id, seq, kept);
                    }
                    seq
                }
                Effect::Started(mut summary) => {
                    let kept = entry.clone();
                    let seq = state.ring.push(entry);
                    summary.first_cursor = Some(self.cursor(seq));
                    state.operations.started(summary, seq, kept);
                    seq
                }
                Effect::Completed(summary) => {
                    let kept = entry.clone();
                    let seq = state.ring.push(entry);
                    state.operations.completed(&summary, seq, kept);
                    seq
                }
            };
            // With `waiting` (both SeqCst): a subscriber about to park either
            // sees this head or is seen waiting and woken below.
            self.inner.head.store(seq, Ordering::SeqCst);
            // Sent under the lock so the journal sees sequence order.
            if let (Some(bytes), Some(journal)) = (bytes, &self.inner.journal) {
                journal.append(seq, bytes, sync, &self.inner.drops.journal);
            }
            seq
        };
        if self.inner.waiting.load(Ordering::SeqCst) > 0 {
            self.inner.notify.notify_waiters();
        }
        seq
    }

    /// Servicing operations known to the bus and its journal, oldest first.
    pub fn operations(&self) -> Vec<OperationSummary> {
        self.lock().operations.summaries()
    }

    /// Head, ring occupancy, drop counters and subscribers.
    pub fn status(&self) -> GetBusStatusResponse {
        let state = self.lock();
        GetBusStatusResponse {
            run_id: self.inner.run_id.to_string(),
            head_sequence: state.ring.head(),
            oldest_sequence: state.ring.oldest(),
            ring_records: state.ring.len() as u64,
            ring_bytes: state.ring.bytes() as u64,
            ring_capacity_records: state.ring.capacity_records() as u64,
            ring_capacity_bytes: state.ring.capacity_bytes() as u64,
            drops: Some(DropCounters {
                journal: self.journal_drops(),
                ..self.inner.drops.snapshot()
            }),
            subscribers: self.inner.subscribers.load(Ordering::Relaxed),
            started: Some(crate::record::timestamp(self.inner.started)),
        }
    }

    /// Records the journal could not take (its queue was full) or could
    /// not write (I/O errors), since start.
    pub fn journal_drops(&self) -> u64 {
        let failed = self.inner.journal.as_ref().map_or(0, Journal::failed);
        self.inner.drops.journal.load(Ordering::Relaxed) + failed
    }

    /// Streams the events of a subscription, one at a time (records,
    /// gaps, drop counters, run changes, end of snapshot).
    pub fn subscribe(&self, subscription: Subscription) -> BoxStream<'static, StreamEvent> {
        self.subscribe_batches(subscription)
            .flat_map(futures::stream::iter)
            .boxed()
    }

    /// Streams the events of a subscription in batches. An in-process
    /// subscription (a servicing stream, the metrics observer) does not end
    /// with [`end_remote_streams`](Bus::end_remote_streams): a servicing
    /// stream must still deliver its operation's end during shutdown.
    pub fn subscribe_batches(
        &self,
        subscription: Subscription,
    ) -> BoxStream<'static, Vec<StreamEvent>> {
        let bus = self.clone();
        let with_boot_ids = subscription.options.with_boot_ids;
        subscriber::Subscriber::start(self.clone(), subscription)
            .into_stream()
            .map(move |batch| {
                batch
                    .into_iter()
                    .filter_map(|out| out.into_event(&bus, with_boot_ids))
                    .collect()
            })
            .boxed()
    }

    /// Batches as the subscriber produces them (records possibly still
    /// encoded), for the gRPC service.
    pub(crate) fn subscribe_out(
        &self,
        subscription: Subscription,
    ) -> BoxStream<'static, Vec<subscriber::Out>> {
        let mut subscriber = subscriber::Subscriber::start(self.clone(), subscription);
        subscriber.ends_with_remote_streams = true;
        subscriber.into_stream().boxed()
    }

    /// Ends every gRPC Watch stream once it has delivered what the bus holds
    /// (call when the daemon starts shutting down): followers must not keep
    /// the daemon alive, and they resume from their cursor on the next run.
    /// In-process subscriptions (servicing streams) are not affected.
    pub fn end_remote_streams(&self) {
        self.inner
            .remote_streams_closed
            .store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Writes and fsyncs everything journaled so far. Blocks until done (or
    /// the journal writer is gone); call on shutdown and when an operation
    /// completes.
    pub fn flush(&self) {
        if let Some(journal) = &self.inner.journal {
            journal.flush();
        }
    }

    /// Flushes the journal and stops its writer. Records published later
    /// still reach the ring but no longer the journal.
    pub fn shutdown(&self) {
        if let Some(journal) = &self.inner.journal {
            journal.shutdown();
        }
    }
}

/// Kind of a subscriber's wanted set, as a bit mask over `RecordKind`.
pub(crate) fn kind_mask(kinds: &[RecordKind]) -> u8 {
    if kinds.is_empty() || kinds.contains(&RecordKind::Unspecified) {
        return 0xff;
    }
    kinds.iter().fold(0u8, |mask, k| mask | (1 << (*k as u8)))
}
