//! One phase of the progress view and what is derived from its counters
//! (rate, ETA, fraction), all from record timestamps.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use trident_proto::v1::{PhaseState, ProgressUnit};

use super::event::LogLine;

/// One phase and its counters.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseView {
    pub id: String,
    pub parent: String,
    pub name: String,
    pub unit: ProgressUnit,
    pub current: u64,
    pub total: Option<u64>,
    pub state: PhaseState,
    pub started: Option<SystemTime>,
    pub updated: Option<SystemTime>,
    /// (time, current) samples inside the rate window, oldest first.
    pub(crate) samples: VecDeque<(SystemTime, u64)>,
    /// Log lines that arrived while this phase was the running one.
    pub logs: VecDeque<LogLine>,
    /// Nesting depth (0 for top-level phases).
    pub depth: usize,
}

impl PhaseView {
    /// Units per second over the last samples, if measurable.
    pub fn rate(&self) -> Option<f64> {
        let (t0, c0) = *self.samples.front()?;
        let (t1, c1) = *self.samples.back()?;
        let secs = t1.duration_since(t0).ok()?.as_secs_f64();
        (secs > 0.0 && c1 >= c0).then(|| (c1 - c0) as f64 / secs)
    }

    /// Time left at the current rate as of the last update, for byte
    /// phases with a known total only: items of a phase are of unknown,
    /// often very different sizes, so an item rate predicts nothing.
    pub fn eta(&self) -> Option<Duration> {
        let total = self.total?;
        let rate = self.rate()?;
        if rate <= 0.0 || self.state != PhaseState::Running || self.unit != ProgressUnit::Bytes {
            return None;
        }
        Duration::try_from_secs_f64(total.saturating_sub(self.current) as f64 / rate).ok()
    }

    /// The ETA counted down to `now`; None once it ran out without a newer
    /// update (never shown frozen or past due).
    pub fn eta_at(&self, now: SystemTime) -> Option<Duration> {
        let since = self
            .updated
            .and_then(|at| now.duration_since(at).ok())
            .unwrap_or_default();
        self.eta()?
            .checked_sub(since)
            .filter(|left| !left.is_zero())
    }

    /// Time the phase has been running as of `now` (its end when final).
    pub fn running_for(&self, now: SystemTime) -> Option<Duration> {
        let end = if self.state == PhaseState::Running {
            now
        } else {
            self.updated?
        };
        end.duration_since(self.started?).ok()
    }

    /// Fraction done in [0, 1], when the total is known.
    pub fn fraction(&self) -> Option<f64> {
        let total = self.total?;
        if total == 0 {
            return Some(1.0);
        }
        Some((self.current as f64 / total as f64).clamp(0.0, 1.0))
    }

    /// Wall time the phase took (or has taken so far, as of its last update).
    pub fn elapsed(&self) -> Option<Duration> {
        self.updated?.duration_since(self.started?).ok()
    }
}
