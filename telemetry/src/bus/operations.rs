//! Servicing operations known to the bus: their summaries (ListOperations),
//! where they start (Watch by operation id), and the latest record of each
//! of their progress phases and lifecycle events, re-delivered to a
//! subscriber whose gap covered it so a final state is never lost.

use std::collections::{HashMap, VecDeque};

use trident_proto::v1::OperationSummary;

use super::ring::Entry;

/// Key of the lifecycle "started" record in the latest-state table.
const KEY_STARTED: &str = "\0started";
/// Key of the lifecycle "completed" record in the latest-state table.
const KEY_COMPLETED: &str = "\0completed";

/// One operation tracked by the bus.
#[derive(Debug)]
pub(crate) struct TrackedOperation {
    pub summary: OperationSummary,
    /// Sequence of its first record in the current run (0: an earlier run).
    pub first_seq: u64,
    /// Latest record per phase id (and per lifecycle event).
    latest: HashMap<String, (u64, Entry)>,
}

/// The table of tracked operations, oldest first, bounded.
#[derive(Debug)]
pub(crate) struct OperationTable {
    operations: VecDeque<TrackedOperation>,
    capacity: usize,
}

impl OperationTable {
    pub fn new(capacity: usize) -> Self {
        OperationTable {
            operations: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Adds an operation known from the journal of an earlier run.
    pub fn add_previous(&mut self, summary: OperationSummary) {
        self.insert(TrackedOperation {
            summary,
            first_seq: 0,
            latest: HashMap::new(),
        });
    }

    /// Records that an operation started at `seq` with this entry.
    pub fn started(&mut self, summary: OperationSummary, seq: u64, entry: Entry) {
        let mut latest = HashMap::new();
        latest.insert(KEY_STARTED.to_owned(), (seq, entry));
        self.insert(TrackedOperation {
            summary,
            first_seq: seq,
            latest,
        });
    }

    /// Records an operation's completion.
    pub fn completed(&mut self, update: &OperationSummary, seq: u64, entry: Entry) {
        if let Some(op) = self.find_mut(&update.operation_id) {
            op.summary.running = false;
            op.summary.result = update.result;
            op.summary.reboot_status = update.reboot_status;
            op.summary.completed = update.completed;
            op.latest.insert(KEY_COMPLETED.to_owned(), (seq, entry));
        }
    }

    /// Records the newest state of a progress phase.
    pub fn progress(&mut self, operation_id: &str, phase_id: &str, seq: u64, entry: Entry) {
        if let Some(op) = self.find_mut(operation_id) {
            match op.latest.get_mut(phase_id) {
                Some(slot) => *slot = (seq, entry),
                None => {
                    op.latest.insert(phase_id.to_owned(), (seq, entry));
                }
            }
        }
    }

    /// Sequence of an operation's first record in the current run.
    pub fn first_seq(&self, operation_id: &str) -> Option<u64> {
        self.operations
            .iter()
            .find(|op| op.summary.operation_id == operation_id)
            .map(|op| op.first_seq)
            .filter(|seq| *seq > 0)
    }

    /// Latest records with sequences in `first..=last`, in sequence order.
    pub fn latest_within(&self, first: u64, last: u64) -> Vec<(u64, Entry)> {
        let mut found: Vec<(u64, Entry)> = self
            .operations
            .iter()
            .filter(|op| op.first_seq > 0 && op.first_seq <= last)
            .flat_map(|op| op.latest.values())
            .filter(|(seq, _)| (first..=last).contains(seq))
            .cloned()
            .collect();
        found.sort_by_key(|(seq, _)| *seq);
        found
    }

    /// Summaries, oldest first.
    pub fn summaries(&self) -> Vec<OperationSummary> {
        self.operations
            .iter()
            .map(|op| op.summary.clone())
            .collect()
    }

    fn find_mut(&mut self, operation_id: &str) -> Option<&mut TrackedOperation> {
        self.operations
            .iter_mut()
            .rev()
            .find(|op| op.summary.operation_id == operation_id)
    }

    fn insert(&mut self, op: TrackedOperation) {
        if self.operations.len() >= self.capacity {
            // Evict the oldest finished operation; running ones are kept
            // unless every tracked operation is running.
            let index = self
                .operations
                .iter()
                .position(|o| !o.summary.running)
                .unwrap_or(0);
            self.operations.remove(index);
        }
        self.operations.push_back(op);
    }
}
