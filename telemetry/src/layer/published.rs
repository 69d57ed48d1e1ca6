//! The bus sequence of the record this thread published last, for an
//! exporter layer placed after the bus layer: it exports the same span
//! close or log event on the same thread right after, so it can tell which
//! bus record it queued (the OTLP export's delivery cursor).

use std::cell::Cell;

thread_local! {
    static PUBLISHED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Remembers `sequence` as the record this thread just published.
pub(super) fn set(sequence: u64) {
    PUBLISHED.with(|last| last.set(Some(sequence)));
}

/// The sequence of the span close or log record the bus layer published
/// last on this thread, taken (a second call says `None`). An exporter
/// layer after the bus layer calls it while exporting the same event.
pub fn take_published_sequence() -> Option<u64> {
    PUBLISHED.with(Cell::take)
}
