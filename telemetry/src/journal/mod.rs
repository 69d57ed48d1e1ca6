//! The on-disk journal: every record of a servicing operation (and every
//! operation lifecycle and error record) is appended to segment files under
//! `STATE_DIR/journal`, so the last operations can be replayed after a
//! daemon restart and a support engineer still has them.
//!
//! Format: segment files `segment-<index>.log`, each a sequence of
//! `u32` little-endian length + encoded `Record` (with its cursor). A
//! segment is rotated when it reaches the configured size; the oldest
//! segments are deleted past the configured total. One background thread
//! writes, fed by a bounded queue: producers never wait, a full queue drops
//! the record and counts it.

mod carried;
mod durable;
pub mod handover;
mod history;
mod open_spans;
mod segments;
mod writer;

pub(crate) use carried::HandoverHooks;
pub use carried::{CURSOR_SUFFIX, HandoverHook};
pub use handover::{HandedEnd, HandoverSummary, read_records};
pub use history::{InterruptedOperation, JournalHistory};
pub(crate) use history::{ReplayRequest, replay_step};

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::time::Duration;

use bytes::Bytes;

use crate::config::BusConfig;
use crate::error::TelemetryError;

/// How long `flush` waits for the writer before giving up (it never hangs
/// the daemon's shutdown on a stuck disk).
const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// A message to the writer thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// Append a record; `sync` asks for an fsync after it (operation end).
    Append { seq: u64, bytes: Bytes, sync: bool },
    /// Write and fsync everything so far, then acknowledge.
    Flush(SyncSender<()>),
    /// Flush, acknowledge and stop.
    Shutdown(SyncSender<()>),
}

/// Handle to the journal writer.
#[derive(Debug)]
pub(crate) struct Journal {
    sender: SyncSender<Command>,
    /// Records the writer could not write (I/O errors).
    failed: Arc<AtomicU64>,
}

impl Journal {
    /// Creates the directory if needed and starts the writer on a new segment.
    pub fn open(dir: &Path, config: &BusConfig, run_id: Arc<str>) -> Result<Self, TelemetryError> {
        std::fs::create_dir_all(dir).map_err(|source| TelemetryError::Journal {
            path: dir.to_owned(),
            source,
        })?;
        let (sender, receiver) = mpsc::sync_channel(config.journal_queue.max(1));
        let failed = Arc::new(AtomicU64::new(0));
        let writer = writer::Writer::new(dir, config, run_id, failed.clone())?;
        std::thread::Builder::new()
            .name("trident-journal".into())
            .spawn(move || writer.run(receiver))
            .map_err(TelemetryError::Writer)?;
        Ok(Journal { sender, failed })
    }

    /// Queues a record; a full queue drops it and counts the drop.
    pub fn append(&self, seq: u64, bytes: Bytes, sync: bool, drops: &AtomicU64) {
        match self.sender.try_send(Command::Append { seq, bytes, sync }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                drops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records lost to write errors since start.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Writes and fsyncs everything queued so far; waits at most
    /// `FLUSH_TIMEOUT`.
    pub fn flush(&self) {
        self.round_trip(Command::Flush);
    }

    /// Flushes and stops the writer.
    pub fn shutdown(&self) {
        self.round_trip(Command::Shutdown);
    }

    fn round_trip(&self, command: fn(SyncSender<()>) -> Command) {
        let (ack, done) = mpsc::sync_channel(1);
        if self.sender.send(command(ack)).is_ok() {
            let _ = done.recv_timeout(FLUSH_TIMEOUT);
        }
    }
}
