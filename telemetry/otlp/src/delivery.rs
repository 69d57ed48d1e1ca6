//! Delivery across restarts and reboots: a persisted export cursor per
//! signal (traces, logs), so what one daemon run queued and never delivered
//! (the reboot cut the export short, the collector was down) is exported by
//! the next run from the telemetry journal (`crate::replay`), and what was
//! delivered is not sent again.
//!
//! The cursor is `STATE_DIR/journal/otlp-<signal>.cursor` (in the journal
//! folder, so a journal handover carries it to the volume that boots next,
//! after the export flushed): one line
//! `<run id> <sequence> <unix ms>`: every journaled record of that run up to
//! that bus sequence, and of earlier runs, was delivered. How it advances:
//! the bus layer tells which bus record each exported span close or log
//! event is ([`trident_telemetry::layer::take_published_sequence`], same
//! thread, just before); the bounded processor queues that sequence beside
//! the record (a non-blocking channel send, in queue order); each export
//! takes as many sequences as it exported, and when it went through the
//! newest of them is written (temp file, fsync, rename). A failed export
//! or a record dropped at the bound stops the cursor for the rest of the
//! run (drops are counted as ever): what came after it is exported again by
//! the next run, so after an outage a record can arrive twice, never zero
//! times while the journal holds it.

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::health::Signal;

/// Sequence a replayed record stands for: "everything of earlier runs".
pub(crate) const REPLAYED: u64 = 0;

thread_local! {
    /// Set while this thread replays journaled records.
    static REPLAYING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the records it exports counted as replayed.
pub(crate) fn replaying<R>(f: impl FnOnce() -> R) -> R {
    REPLAYING.with(|flag| flag.set(true));
    let result = f();
    REPLAYING.with(|flag| flag.set(false));
    result
}

/// The bus sequence of the record being queued on this thread.
pub(crate) fn sequence_being_queued() -> Option<u64> {
    if REPLAYING.with(Cell::get) {
        Some(REPLAYED)
    } else {
        trident_telemetry::layer::take_published_sequence()
    }
}

/// A cursor as the file says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedCursor {
    pub run_id: String,
    pub sequence: u64,
    /// When it was written (milliseconds since the epoch): records of other
    /// runs after this time were not delivered.
    pub unix_ms: u64,
}

impl SavedCursor {
    fn parse(text: &str) -> Option<SavedCursor> {
        let mut parts = text.split_whitespace();
        let cursor = SavedCursor {
            run_id: parts.next()?.to_owned(),
            sequence: parts.next()?.parse().ok()?,
            unix_ms: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(cursor)
    }

    /// Whether a journaled record (run, sequence, time) was not delivered.
    pub fn is_before(&self, run_id: &str, sequence: u64, unix_ms: u64) -> bool {
        if run_id == self.run_id {
            sequence > self.sequence
        } else {
            unix_ms > self.unix_ms
        }
    }
}

/// One signal's delivery cursor for this run.
#[derive(Debug)]
pub struct DeliveryCursor {
    path: PathBuf,
    run_id: String,
    queued: SyncSender<Option<u64>>,
    exported: Mutex<Receiver<Option<u64>>>,
    stopped: AtomicBool,
    written: AtomicU64,
}

/// File name of `signal`'s cursor.
fn file_name(signal: Signal) -> String {
    format!(
        "otlp-{}{}",
        signal.as_str(),
        trident_telemetry::journal::CURSOR_SUFFIX
    )
}

impl DeliveryCursor {
    /// The cursor of `signal` in `dir` for run `run_id`, and the one the
    /// previous run left (`None`: the first run exporting here, nothing to
    /// replay). A missing file is written at once as "this run from its
    /// start", so a crash before the first delivery still replays this run.
    /// `capacity` bounds the sequences in flight (the signal's queue).
    pub fn open(
        dir: &Path,
        signal: Signal,
        run_id: &str,
        capacity: usize,
    ) -> (DeliveryCursor, Option<SavedCursor>) {
        let path = dir.join(file_name(signal));
        let previous = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| SavedCursor::parse(&text));
        let (queued, exported) = sync_channel(capacity.saturating_mul(2).max(16));
        let cursor = DeliveryCursor {
            path,
            run_id: run_id.to_owned(),
            queued,
            exported: Mutex::new(exported),
            stopped: AtomicBool::new(false),
            written: AtomicU64::new(0),
        };
        if previous.is_none() {
            cursor.write(0);
        }
        (cursor, previous)
    }

    /// A record was queued for export: bus sequence `sequence` of this run
    /// (`REPLAYED` for a record replayed from the journal, `None` when
    /// unknown). Never blocks.
    pub fn queued(&self, sequence: Option<u64>) {
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.queued.try_send(sequence)
        {
            self.stop();
        }
    }

    /// A record was dropped before the export: the cursor stops here.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    /// An export of `count` records ended: `delivered` or not.
    pub fn exported(&self, count: usize, delivered: bool) {
        if !delivered {
            self.stop();
        }
        let newest = {
            let exported = self
                .exported
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            exported.try_iter().take(count).flatten().max()
        };
        if let Some(sequence) = newest
            && !self.stopped.load(Ordering::Acquire)
        {
            self.write(sequence);
        }
    }

    /// Writes "delivered up to `sequence` of this run" (a sequence below
    /// one already written is not written again).
    fn write(&self, sequence: u64) {
        let before = self.written.fetch_max(sequence, Ordering::AcqRel);
        if sequence < before || (sequence == before && sequence != 0) {
            return;
        }
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let line = format!("{} {sequence} {unix_ms}\n", self.run_id);
        if let Err(error) = write_atomically(&self.path, line.as_bytes()) {
            // Not on the bus (export internals stay off it); the next run
            // replays from the last cursor written, at worst twice.
            eprintln!(
                "tridentd: cannot write the OTLP export cursor {}: {error}",
                self.path.display()
            );
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temp = path.with_extension("tmp");
    let mut file = std::fs::File::create(&temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temp, path)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn saved(dir: &Path) -> SavedCursor {
        SavedCursor::parse(&std::fs::read_to_string(dir.join("otlp-traces.cursor")).unwrap())
            .unwrap()
    }

    #[test]
    fn the_cursor_follows_delivered_exports_and_stops_at_the_first_failure() {
        let dir = tempfile::tempdir().unwrap();
        let (cursor, previous) = DeliveryCursor::open(dir.path(), Signal::Traces, "run-1", 8);
        assert_eq!(previous, None);
        assert_eq!(saved(dir.path()).sequence, 0, "a first run starts at 0");
        for sequence in [3, 5, 9] {
            cursor.queued(Some(sequence));
        }
        cursor.exported(2, true);
        assert_eq!(saved(dir.path()).sequence, 5);
        cursor.queued(Some(12));
        cursor.exported(2, false);
        cursor.queued(Some(20));
        cursor.exported(1, true);
        let kept = saved(dir.path());
        assert_eq!((kept.run_id.as_str(), kept.sequence), ("run-1", 5));

        let (_, previous) = DeliveryCursor::open(dir.path(), Signal::Traces, "run-2", 8);
        let previous = previous.unwrap();
        assert!(previous.is_before("run-1", 9, 0));
        assert!(!previous.is_before("run-1", 5, u64::MAX));
        assert!(previous.is_before("run-0", 1, previous.unix_ms + 1));
        assert!(!previous.is_before("run-0", 1, previous.unix_ms));
    }

    #[test]
    fn a_damaged_cursor_file_counts_as_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("otlp-logs.cursor"), "run-1 many 3\n").unwrap();
        let (_, previous) = DeliveryCursor::open(dir.path(), Signal::Logs, "run-2", 8);
        assert_eq!(previous, None);
    }
}
