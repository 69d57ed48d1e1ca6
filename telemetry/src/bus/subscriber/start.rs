//! Where a subscription starts: after a cursor (of this run, or of an
//! earlier one replayed from the journal), at the last N records, at an
//! operation's first record, at the oldest record (snapshot) or at the head.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use prost::Message;
use trident_proto::v1::{
    Cursor, DropCounters, GapReason, Record, RecordKind, RunChange, StreamEvent, WatchOptions,
    stream_event,
};

use super::super::filter::WatchFilter;
use super::super::ring::Ring;
use super::super::{Bus, BusState, Subscription, kind_mask};
use super::{Prelude, Registration, Subscriber, cursor, gap_event};
use crate::journal::ReplayRequest;

impl Subscriber {
    /// Resolves the start position of a subscription.
    pub fn start(bus: Bus, subscription: Subscription) -> Subscriber {
        bus.inner().subscribers.fetch_add(1, Ordering::Relaxed);
        let options = subscription.options;
        let mut filter = WatchFilter::new(
            &options,
            kind_mask(&subscription.kinds),
            &bus.config().boot_id,
        );
        let max_batch = match options.max_batch {
            0 => bus.config().default_max_batch,
            n => n as usize,
        };
        let state = bus.lock();
        let oldest = state.ring.oldest();
        // A past boot has nothing more to come: its stream ends once replayed.
        let stop_at = (options.snapshot || !filter.ring_in_boot()).then_some(state.ring.head());
        let mut plan = StartPlan {
            bus: &bus,
            state: &state,
            filter: &filter,
            journaled: bus.config().journal_dir.is_some(),
            preludes: VecDeque::new(),
            first_gap_reason: GapReason::SubscriberLagged,
        };
        let start = match &options.after {
            Some(after) => plan.after_cursor(after),
            None if filter.boot().is_some() => plan.boot_start(),
            None => plan.without_cursor(&options),
        };
        let start = plan.replay_evicted_part(start.max(1));
        let StartPlan {
            preludes,
            first_gap_reason,
            ..
        } = plan;
        if filter.has_span_name() && start > oldest {
            learn_spans_in_scope(&state.ring, &mut filter, oldest, start);
        }
        let passed = state.ring.counts_before(start.max(oldest));
        drop(state);
        Subscriber {
            bus: bus.clone(),
            with_boot_ids: options.with_boot_ids,
            filter,
            next: start,
            passed,
            stop_at,
            first_gap_reason,
            preludes,
            pending: VecDeque::new(),
            max_batch: max_batch.max(1),
            drops: DropCounters::default(),
            finished: false,
            ends_with_remote_streams: false,
            last_wake: std::time::Instant::now(),
            _registration: Registration(bus),
        }
    }
}

/// A start position being resolved under the bus lock, and what must be
/// delivered before it (journal replays, events).
struct StartPlan<'a> {
    bus: &'a Bus,
    state: &'a BusState,
    filter: &'a WatchFilter,
    journaled: bool,
    preludes: VecDeque<Prelude>,
    first_gap_reason: GapReason,
}

impl StartPlan<'_> {
    /// After a cursor of this run: the next sequence (a gap there means the
    /// records were evicted). After a cursor of an earlier run: that run's
    /// journaled rest (without a journal, a gap saying it is gone), a
    /// `RunChange`, then this run from its first record.
    fn after_cursor(&mut self, after: &Cursor) -> u64 {
        self.first_gap_reason = GapReason::Evicted;
        if after.run_id == self.bus.run_id() {
            return after.sequence.saturating_add(1);
        }
        let earlier_run = if self.journaled {
            Prelude::Replay {
                request: Box::new(ReplayRequest {
                    run_id: Some(after.run_id.clone()),
                    after: after.sequence,
                    before: None,
                    operation_id: self.filter.operation().map(str::to_owned),
                    exclude_run: None,
                    boot_id: self.filter.boot().map(str::to_owned),
                    position: Default::default(),
                }),
                flush: false,
                previous_run: true,
            }
        } else {
            let missing = cursor(&after.run_id, after.sequence + 1);
            Prelude::Event(Box::new(gap_event(
                missing.clone(),
                missing,
                0,
                GapReason::PreviousRun,
            )))
        };
        self.preludes.push_back(earlier_run);
        self.preludes
            .push_back(Prelude::Event(Box::new(StreamEvent {
                event: Some(stream_event::Event::RunChange(RunChange {
                    previous_run_id: after.run_id.clone(),
                    current_run_id: self.bus.run_id().to_owned(),
                })),
            })));
        1
    }

    /// Without a cursor: the last N matching records (`tail`), the watched
    /// operation's first record, the oldest record (`snapshot`), or the head.
    fn without_cursor(&mut self, options: &WatchOptions) -> u64 {
        let filter = self.filter;
        if let Some(tail) = options.tail {
            tail_start(&self.state.ring, filter, tail as usize)
        } else if let Some(operation) = filter.operation() {
            self.operation_start(operation)
        } else if options.snapshot {
            self.state.ring.oldest()
        } else {
            self.state.ring.head() + 1
        }
    }

    /// Without a cursor, limited to a boot: the boot's first record. Its
    /// earlier runs come from the journal; the ring follows only when this
    /// run is in that boot (else the stream ends after the replay).
    fn boot_start(&mut self) -> u64 {
        if self.journaled {
            self.preludes.push_back(Prelude::Replay {
                request: Box::new(ReplayRequest {
                    operation_id: self.filter.operation().map(str::to_owned),
                    exclude_run: Some(self.bus.run_id().to_owned()),
                    boot_id: self.filter.boot().map(str::to_owned),
                    ..ReplayRequest::default()
                }),
                flush: false,
                previous_run: false,
            });
        }
        if self.filter.ring_in_boot() {
            self.state.ring.oldest()
        } else {
            self.state.ring.head() + 1
        }
    }

    /// The first record of an operation started in this run. Otherwise an
    /// operation of an earlier run (its records are on disk), or records
    /// that carry the id without a lifecycle: scan what the ring holds.
    fn operation_start(&mut self, operation: &str) -> u64 {
        if let Some(first) = self.state.operations.first_seq(operation) {
            return first;
        }
        if self.journaled {
            self.preludes.push_back(Prelude::Replay {
                request: Box::new(ReplayRequest {
                    operation_id: Some(operation.to_owned()),
                    exclude_run: Some(self.bus.run_id().to_owned()),
                    boot_id: self.filter.boot().map(str::to_owned),
                    ..ReplayRequest::default()
                }),
                flush: false,
                previous_run: false,
            });
        }
        self.state.ring.oldest()
    }

    /// Records of this run already gone from the ring, but journaled because
    /// they belong to the watched operation: replayed from the journal, and
    /// the ring read from its oldest record.
    fn replay_evicted_part(&mut self, start: u64) -> u64 {
        let oldest = self.state.ring.oldest();
        let Some(operation) = self.filter.operation() else {
            return start;
        };
        if start >= oldest || !self.journaled {
            return start;
        }
        self.preludes.push_back(Prelude::Replay {
            request: Box::new(ReplayRequest {
                run_id: Some(self.bus.run_id().to_owned()),
                after: start - 1,
                before: Some(oldest),
                operation_id: Some(operation.to_owned()),
                exclude_run: None,
                boot_id: self.filter.boot().map(str::to_owned),
                position: Default::default(),
            }),
            flush: true,
            previous_run: false,
        });
        oldest
    }
}

/// A `span_name` filter starting after the oldest record: learns which spans
/// opened before the start are in scope (their descendants are too).
fn learn_spans_in_scope(ring: &Ring, filter: &mut WatchFilter, oldest: u64, start: u64) {
    let mut earlier = Vec::new();
    ring.read(oldest, start - 1, usize::MAX, &mut earlier);
    for (_, entry) in earlier
        .iter()
        .filter(|(_, e)| e.kind == RecordKind::Span as u8)
    {
        if let Ok(record) = Record::decode(entry.bytes.clone()) {
            filter.accepts_record(&record);
        }
    }
}

/// Where a `tail N` subscription starts: at the Nth newest matching record.
fn tail_start(ring: &Ring, filter: &WatchFilter, tail: usize) -> u64 {
    let mut start = ring.head() + 1;
    if tail == 0 {
        return start;
    }
    let mut found = 0;
    ring.visit_newest_first(|seq, entry| {
        if filter.accepts_entry(entry)
            && Record::decode(entry.bytes.clone()).is_ok_and(|r| filter.matches_static(&r))
        {
            found += 1;
            start = seq;
        }
        found < tail
    });
    if found < tail { ring.oldest() } else { start }
}
