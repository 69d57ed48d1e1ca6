//! Progress of servicing phases, reported in one line per update:
//!
//! ```no_run
//! use trident_telemetry::progress::{Phase, Unit};
//! let phase = Phase::start("write/root-a", "Write root-a", Unit::Bytes, Some(1 << 30));
//! phase.add(4096);      // rate-limited update
//! let verify = Phase::child(&phase, "write/root-a/verify", "Verify", Unit::Bytes, None);
//! verify.done();
//! phase.done();         // final state: always emitted
//! ```
//!
//! A phase is a tracing span (static name [`PHASE_SPAN`], run-time name
//! `phase <id>` in `otel.name`) opened as a child of the current span (or of
//! its parent phase) and closed when the phase ends, with
//! `otel.status_code = "ERROR"` when it failed: the bus records it as a span
//! (so `trident traces` shows the phase tree with durations) and OTLP export
//! sends it as a child span of the operation. Inside that span the phase
//! reports through `tracing` events with target [`PROGRESS_TARGET`], which
//! the bus layer turns into `ProgressRecord`s of the operation. Updates are
//! emitted at most every [`MIN_UPDATE_INTERVAL`]; state changes always are.
//! A phase dropped without `done()` is reported failed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use trident_proto::v1::{PhaseState, ProgressUnit};

/// Target of the events that carry progress (and of the phase spans).
pub const PROGRESS_TARGET: &str = "trident::progress";
/// Static name of a phase's span.
pub const PHASE_SPAN: &str = "phase";
/// Least time between two emitted updates of one phase.
pub const MIN_UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// Stored total meaning "unknown".
const UNKNOWN_TOTAL: u64 = u64::MAX;

/// Field names of progress events (the layer reads them back).
pub(crate) mod fields {
    pub const PHASE_ID: &str = "phase_id";
    pub const PARENT_PHASE_ID: &str = "parent_phase_id";
    pub const NAME: &str = "phase_name";
    pub const UNIT: &str = "unit";
    pub const CURRENT: &str = "current";
    pub const TOTAL: &str = "total";
    pub const STATE: &str = "state";
    pub const STARTED_UNIX_NANOS: &str = "started_unix_nanos";
}

/// Unit of a phase's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Bytes (e.g. written, downloaded).
    Bytes,
    /// Countable items (e.g. partitions, files).
    Items,
}

impl From<Unit> for ProgressUnit {
    fn from(unit: Unit) -> Self {
        match unit {
            Unit::Bytes => ProgressUnit::Bytes,
            Unit::Items => ProgressUnit::Items,
        }
    }
}

/// A running phase; report with [`set`](Phase::set) / [`add`](Phase::add),
/// finish with [`done`](Phase::done) or [`fail`](Phase::fail).
#[derive(Debug)]
pub struct Phase {
    id: String,
    parent_id: String,
    name: String,
    unit: Unit,
    span: tracing::Span,
    started: SystemTime,
    started_instant: Instant,
    current: AtomicU64,
    total: AtomicU64,
    /// Nanoseconds after `started_instant` of the last emitted update.
    last_emit: AtomicU64,
    finished: AtomicBool,
}

impl Phase {
    /// Starts a top-level phase of the current operation (the current span)
    /// and reports it running at 0.
    pub fn start(
        id: impl Into<String>,
        name: impl Into<String>,
        unit: Unit,
        total: Option<u64>,
    ) -> Phase {
        Phase::begin(
            id.into(),
            String::new(),
            name.into(),
            unit,
            total,
            &tracing::Span::current(),
        )
    }

    /// Starts a phase nested in `parent`, in the parent's operation.
    pub fn child(
        parent: &Phase,
        id: impl Into<String>,
        name: impl Into<String>,
        unit: Unit,
        total: Option<u64>,
    ) -> Phase {
        Phase::begin(
            id.into(),
            parent.id.clone(),
            name.into(),
            unit,
            total,
            &parent.span,
        )
    }

    fn begin(
        id: String,
        parent_id: String,
        name: String,
        unit: Unit,
        total: Option<u64>,
        parent: &tracing::Span,
    ) -> Phase {
        let span = tracing::info_span!(target: PROGRESS_TARGET, parent: parent, PHASE_SPAN,
            otel.name = %format_args!("phase {id}"), phase_id = %id,
            otel.status_code = tracing::field::Empty);
        let phase = Phase {
            id,
            parent_id,
            name,
            unit,
            span,
            started: SystemTime::now(),
            started_instant: Instant::now(),
            current: AtomicU64::new(0),
            total: AtomicU64::new(total.unwrap_or(UNKNOWN_TOTAL)),
            last_emit: AtomicU64::new(0),
            finished: AtomicBool::new(false),
        };
        phase.emit(PhaseState::Running);
        phase
    }

    /// The phase id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Sets the counter (e.g. bytes written so far).
    pub fn set(&self, current: u64) {
        self.current.store(current, Ordering::Relaxed);
        self.maybe_emit();
    }

    /// Adds to the counter.
    pub fn add(&self, n: u64) {
        self.current.fetch_add(n, Ordering::Relaxed);
        self.maybe_emit();
    }

    /// The phase finished successfully (reported immediately).
    pub fn done(self) {
        self.finish(PhaseState::Done);
    }

    /// The phase failed (reported immediately).
    pub fn fail(self) {
        self.finish(PhaseState::Failed);
    }

    fn finish(&self, state: PhaseState) {
        if !self.finished.swap(true, Ordering::AcqRel) {
            self.emit(state);
            if state == PhaseState::Failed {
                self.span.record("otel.status_code", "ERROR");
            }
        }
    }

    fn maybe_emit(&self) {
        let now = u64::try_from(self.started_instant.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let last = self.last_emit.load(Ordering::Relaxed);
        let interval = u64::try_from(MIN_UPDATE_INTERVAL.as_nanos()).unwrap_or(u64::MAX);
        if now.saturating_sub(last) >= interval
            && self
                .last_emit
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.emit(PhaseState::Running);
        }
    }

    fn emit(&self, state: PhaseState) {
        let current = self.current.load(Ordering::Relaxed);
        let total = self.total.load(Ordering::Relaxed);
        let started = u64::try_from(
            self.started
                .duration_since(SystemTime::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        )
        .unwrap_or(0);
        let unit = ProgressUnit::from(self.unit) as u64;
        let state = state as u64;
        if total == UNKNOWN_TOTAL {
            tracing::info!(target: PROGRESS_TARGET, parent: &self.span,
                phase_id = %self.id, parent_phase_id = %self.parent_id, phase_name = %self.name,
                unit, current, state, started_unix_nanos = started, "phase progress");
        } else {
            tracing::info!(target: PROGRESS_TARGET, parent: &self.span,
                phase_id = %self.id, parent_phase_id = %self.parent_id, phase_name = %self.name,
                unit, current, total, state, started_unix_nanos = started, "phase progress");
        }
    }
}

impl Drop for Phase {
    /// A phase that was neither done nor failed is reported failed.
    fn drop(&mut self) {
        self.finish(PhaseState::Failed);
    }
}
