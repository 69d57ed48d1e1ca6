//! Bus-wide drop counters, by record kind.

use std::sync::atomic::{AtomicU64, Ordering};

use trident_proto::v1::{DropCounters, RecordKind};

use super::ring::{KIND_SLOTS, KindCounts};

/// Bus-wide drop counters.
#[derive(Debug, Default)]
pub(crate) struct DropTotals {
    pub by_kind: [AtomicU64; KIND_SLOTS],
    pub progress_coalesced: AtomicU64,
    pub journal: AtomicU64,
}

impl DropTotals {
    pub fn add(&self, counts: &KindCounts, coalesced: u64) {
        for (slot, count) in self.by_kind.iter().zip(counts) {
            if *count > 0 {
                slot.fetch_add(*count, Ordering::Relaxed);
            }
        }
        if coalesced > 0 {
            self.progress_coalesced
                .fetch_add(coalesced, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> DropCounters {
        let kind = |k: RecordKind| self.by_kind[k as usize].load(Ordering::Relaxed);
        DropCounters {
            logs: kind(RecordKind::Log),
            spans: kind(RecordKind::Span),
            progress: kind(RecordKind::Progress),
            errors: kind(RecordKind::Error),
            operations: kind(RecordKind::Operation),
            progress_coalesced: self.progress_coalesced.load(Ordering::Relaxed),
            journal: self.journal.load(Ordering::Relaxed),
        }
    }
}
