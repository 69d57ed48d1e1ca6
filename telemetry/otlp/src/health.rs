//! Drop accounting and outage notices of the export.
//!
//! Everything here is lock-free counters touched from the SDK's processor
//! threads and from `on_end`/`emit` on the instrumented threads. Notices are
//! never logged from those places (a `tracing` event from inside a span's
//! close could re-enter the subscriber); a watcher task on the export runtime
//! turns state changes into one warning per outage and one notice of
//! recovery.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Target of the export's own notices: on the bus and stderr, never exported
/// (a daemon-side name, as the bus keeps `trident_telemetry` internals out).
pub const NOTICE_TARGET: &str = "tridentd::otlp";

/// Which signal lost data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Traces,
    Logs,
    Metrics,
}

impl Signal {
    pub const ALL: [Signal; 3] = [Signal::Traces, Signal::Logs, Signal::Metrics];

    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Traces => "traces",
            Signal::Logs => "logs",
            Signal::Metrics => "metrics",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Why data was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The bounded export queue was full (collector slow or down).
    QueueFull,
    /// The collector refused the request, or did not answer in time.
    ExportFailed,
}

impl DropReason {
    pub const ALL: [DropReason; 2] = [DropReason::QueueFull, DropReason::ExportFailed];

    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::ExportFailed => "export_failed",
        }
    }
}

/// A state change for the watcher to announce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// Data started to be dropped; `cause` is the first error seen.
    OutageStarted { cause: String },
    /// Exports succeed again; `dropped` records were lost during the outage.
    Recovered { dropped: u64 },
}

/// Shared between the processors, the exporters and the watcher.
#[derive(Debug, Default)]
pub struct ExportHealth {
    /// Lifetime drops by signal x reason (units: spans, log records, metric exports).
    dropped: [[AtomicU64; 2]; 3],
    in_outage: AtomicBool,
    /// The watcher has not yet told about the current outage.
    outage_unannounced: AtomicBool,
    /// The watcher has not yet told about the last recovery.
    recovery_unannounced: AtomicBool,
    dropped_at_outage_start: AtomicU64,
    dropped_at_recovery: AtomicU64,
    first_cause: std::sync::Mutex<String>,
}

impl ExportHealth {
    /// Counts lost data; the first loss after a healthy period opens an outage.
    pub fn dropped(
        &self,
        signal: Signal,
        reason: DropReason,
        count: u64,
        cause: &dyn Fn() -> String,
    ) {
        if count == 0 {
            return;
        }
        let before = self.total_dropped();
        self.dropped[signal.index()][reason as usize].fetch_add(count, Ordering::Relaxed);
        if !self.in_outage.swap(true, Ordering::AcqRel) {
            self.dropped_at_outage_start
                .store(before, Ordering::Relaxed);
            if let Ok(mut first) = self.first_cause.lock() {
                *first = format!("{} {}: {}", signal.as_str(), reason.as_str(), cause());
            }
            self.outage_unannounced.store(true, Ordering::Release);
        }
    }

    /// An export went through: an open outage ends.
    pub fn exported(&self) {
        if self.in_outage.swap(false, Ordering::AcqRel) {
            self.dropped_at_recovery
                .store(self.total_dropped(), Ordering::Relaxed);
            self.recovery_unannounced.store(true, Ordering::Release);
        }
    }

    /// Lifetime drops of one signal for one reason.
    pub fn dropped_count(&self, signal: Signal, reason: DropReason) -> u64 {
        self.dropped[signal.index()][reason as usize].load(Ordering::Relaxed)
    }

    /// Lifetime drops, all signals and reasons.
    pub fn total_dropped(&self) -> u64 {
        self.dropped
            .iter()
            .flatten()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// True while data is being lost.
    pub fn in_outage(&self) -> bool {
        self.in_outage.load(Ordering::Acquire)
    }

    /// State changes not yet announced, oldest first; each is returned once.
    pub fn take_notices(&self) -> Vec<Notice> {
        let mut notices = Vec::new();
        if self.outage_unannounced.swap(false, Ordering::AcqRel) {
            let cause = self
                .first_cause
                .lock()
                .map(|c| c.clone())
                .unwrap_or_default();
            notices.push(Notice::OutageStarted { cause });
        }
        if self.recovery_unannounced.swap(false, Ordering::AcqRel) {
            let dropped = self
                .dropped_at_recovery
                .load(Ordering::Relaxed)
                .saturating_sub(self.dropped_at_outage_start.load(Ordering::Relaxed));
            notices.push(Notice::Recovered { dropped });
        }
        notices
    }

    /// Logs pending notices (called by the watcher, outside any span).
    pub fn announce(&self, endpoint: &str) {
        for notice in self.take_notices() {
            match notice {
                Notice::OutageStarted { cause } => tracing::warn!(
                    target: NOTICE_TARGET,
                    endpoint,
                    cause = cause.as_str(),
                    "OTLP export is failing; telemetry is dropped (counted in trident.export.drops) until the collector answers again"
                ),
                Notice::Recovered { dropped } => tracing::info!(
                    target: NOTICE_TARGET,
                    endpoint,
                    dropped,
                    "OTLP export recovered"
                ),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_notice_per_outage_not_per_record() {
        let health = ExportHealth::default();
        for _ in 0..100 {
            health.dropped(Signal::Traces, DropReason::ExportFailed, 5, &|| {
                "refused".into()
            });
        }
        health.dropped(Signal::Logs, DropReason::QueueFull, 1, &|| "full".into());
        let notices = health.take_notices();
        assert_eq!(
            notices,
            vec![Notice::OutageStarted {
                cause: "traces export_failed: refused".into()
            }]
        );
        assert!(health.take_notices().is_empty());
        assert_eq!(
            health.dropped_count(Signal::Traces, DropReason::ExportFailed),
            500
        );
        assert_eq!(health.total_dropped(), 501);

        health.exported();
        health.exported();
        assert_eq!(
            health.take_notices(),
            vec![Notice::Recovered { dropped: 501 }]
        );
        assert!(!health.in_outage());

        health.dropped(Signal::Metrics, DropReason::ExportFailed, 1, &|| {
            "again".into()
        });
        assert!(matches!(
            health.take_notices()[..],
            [Notice::OutageStarted { .. }]
        ));
    }
}
