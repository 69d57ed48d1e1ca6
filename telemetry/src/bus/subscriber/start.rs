//! Where a subscription starts: after a cursor (of this run, or of an
//! earlier one replayed from the journal), at the last N records, at an
//! operation's first record, at the oldest record (snapshot) or at the head.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use prost::Message;
use trident_proto::v1::{
    DropCounters, GapReason, Record, RecordKind, RunChange, StreamEvent, stream_event,
};

use super::super::filter::WatchFilter;
use super::super::ring::Ring;
use super::super::{Bus, Subscription, kind_mask};
use super::{Prelude, Registration, Subscriber, cursor, gap_event};
use crate::journal::ReplayRequest;

impl Subscriber {
    /// Resolves the start position of a subscription.
    pub fn start(bus: Bus, subscription: Subscription) -> Subscriber {
        bus.inner().subscribers.fetch_add(1, Ordering::Relaxed);
        let options = subscription.options;
        let mut filter = WatchFilter::new(&options, kind_mask(&subscription.kinds));
        let max_batch = match options.max_batch {
            0 => bus.config().default_max_batch,
            n => n as usize,
        };
        let journal_dir = bus.config().journal_dir.clone();
        let mut preludes = VecDeque::new();
        let state = bus.lock();
        let head = state.ring.head();
        let oldest = state.ring.oldest();
        let stop_at = options.snapshot.then_some(head);
        let mut first_gap_reason = GapReason::SubscriberLagged;
        let start = if let Some(after) = &options.after {
            first_gap_reason = GapReason::Evicted;
            if after.run_id == bus.run_id() {
                after.sequence.saturating_add(1)
            } else {
                if journal_dir.is_some() {
                    preludes.push_back(Prelude::Replay {
                        request: Box::new(ReplayRequest {
                            run_id: Some(after.run_id.clone()),
                            after: after.sequence,
                            before: None,
                            operation_id: filter.operation().map(str::to_owned),
                            exclude_run: None,
                            position: Default::default(),
                        }),
                        flush: false,
                        previous_run: true,
                    });
                } else {
                    preludes.push_back(Prelude::Event(Box::new(gap_event(
                        cursor(&after.run_id, after.sequence + 1),
                        cursor(&after.run_id, after.sequence + 1),
                        0,
                        GapReason::PreviousRun,
                    ))));
                }
                preludes.push_back(Prelude::Event(Box::new(StreamEvent {
                    event: Some(stream_event::Event::RunChange(RunChange {
                        previous_run_id: after.run_id.clone(),
                        current_run_id: bus.run_id().to_owned(),
                    })),
                })));
                1
            }
        } else if let Some(tail) = options.tail {
            tail_start(&state.ring, &filter, tail as usize)
        } else if let Some(op) = filter.operation() {
            match state.operations.first_seq(op) {
                Some(first) => first,
                None => {
                    // Not started in this run: an operation of an earlier
                    // run (its records are on disk), or records that carry
                    // the id without a lifecycle (scan what the ring holds).
                    if journal_dir.is_some() {
                        preludes.push_back(Prelude::Replay {
                            request: Box::new(ReplayRequest {
                                operation_id: Some(op.to_owned()),
                                exclude_run: Some(bus.run_id().to_owned()),
                                ..ReplayRequest::default()
                            }),
                            flush: false,
                            previous_run: false,
                        });
                    }
                    oldest
                }
            }
        } else if options.snapshot {
            oldest
        } else {
            head + 1
        };
        // Records of this run already gone from the ring, but journaled
        // because they belong to the watched operation.
        let mut start = start.max(1);
        if start < oldest
            && journal_dir.is_some()
            && let Some(op) = filter.operation()
        {
            preludes.push_back(Prelude::Replay {
                request: Box::new(ReplayRequest {
                    run_id: Some(bus.run_id().to_owned()),
                    after: start - 1,
                    before: Some(oldest),
                    operation_id: Some(op.to_owned()),
                    exclude_run: None,
                    position: Default::default(),
                }),
                flush: true,
                previous_run: false,
            });
            start = oldest;
        }
        if filter.has_span_name() && start > oldest {
            // Spans opened before the start: learn which are in scope.
            let mut earlier = Vec::new();
            state.ring.read(oldest, start - 1, usize::MAX, &mut earlier);
            for (_, entry) in earlier
                .iter()
                .filter(|(_, e)| e.kind == RecordKind::Span as u8)
            {
                if let Ok(record) = Record::decode(entry.bytes.clone()) {
                    filter.accepts_record(&record);
                }
            }
        }
        let passed = state.ring.counts_before(start.max(oldest));
        drop(state);
        Subscriber {
            bus: bus.clone(),
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
