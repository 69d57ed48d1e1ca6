//! Configuration of the bus: ring bounds and the on-disk journal.

use std::path::PathBuf;

/// Default ring bound by record count.
pub const DEFAULT_RING_RECORDS: usize = 65_536;
/// Default ring bound by encoded bytes (32 MiB).
pub const DEFAULT_RING_BYTES: usize = 32 * 1024 * 1024;
/// Default size at which a journal segment file is closed and a new one started.
pub const DEFAULT_JOURNAL_SEGMENT_BYTES: u64 = 8 * 1024 * 1024;
/// Default bound of the whole journal; the oldest segments are deleted past it.
pub const DEFAULT_JOURNAL_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Default capacity (records) of the channel feeding the journal writer.
pub const DEFAULT_JOURNAL_QUEUE: usize = 16_384;
/// Default number of recent log lines attached to an error report.
pub const DEFAULT_ERROR_RECENT_LOGS: usize = 20;
/// Default number of records per Watch response.
pub const DEFAULT_MAX_BATCH: usize = 256;
/// Default number of servicing operations whose latest progress state is kept.
pub const DEFAULT_TRACKED_OPERATIONS: usize = 64;
/// Name of the journal folder inside the daemon's state directory.
pub const JOURNAL_DIR_NAME: &str = "journal";

/// Bounds and storage of the bus.
#[derive(Clone, Debug)]
pub struct BusConfig {
    /// Most records kept in the in-memory ring.
    pub ring_records: usize,
    /// Most encoded bytes kept in the in-memory ring.
    pub ring_bytes: usize,
    /// Where operation records are journaled (`STATE_DIR/journal`); `None`
    /// keeps everything in memory only.
    pub journal_dir: Option<PathBuf>,
    /// Size at which a journal segment is rotated.
    pub journal_segment_bytes: u64,
    /// Bound of the journal's total size (whole segments are deleted).
    pub journal_max_bytes: u64,
    /// Capacity of the queue to the journal writer; records beyond it are
    /// dropped and counted, never waited for.
    pub journal_queue: usize,
    /// Log lines of an operation attached to its error reports.
    pub error_recent_logs: usize,
    /// Records per Watch response when the request does not say.
    pub default_max_batch: usize,
    /// Servicing operations whose latest progress and lifecycle state is
    /// kept for re-delivery after a gap and for ListOperations.
    pub tracked_operations: usize,
    /// Boot id of the host this run lives in (empty if unknown): every
    /// journaled record carries it, and Watch and ListBoots select by it.
    pub boot_id: String,
}

impl Default for BusConfig {
    fn default() -> Self {
        BusConfig {
            ring_records: DEFAULT_RING_RECORDS,
            ring_bytes: DEFAULT_RING_BYTES,
            journal_dir: None,
            journal_segment_bytes: DEFAULT_JOURNAL_SEGMENT_BYTES,
            journal_max_bytes: DEFAULT_JOURNAL_MAX_BYTES,
            journal_queue: DEFAULT_JOURNAL_QUEUE,
            error_recent_logs: DEFAULT_ERROR_RECENT_LOGS,
            default_max_batch: DEFAULT_MAX_BATCH,
            tracked_operations: DEFAULT_TRACKED_OPERATIONS,
            boot_id: String::new(),
        }
    }
}

impl BusConfig {
    /// The default configuration journaling to `STATE_DIR/journal`.
    pub fn with_state_dir(state_dir: impl Into<PathBuf>) -> Self {
        BusConfig {
            journal_dir: Some(state_dir.into().join(JOURNAL_DIR_NAME)),
            ..BusConfig::default()
        }
    }
}
