//! The operation's overall progress as the daemon derived it (bytes,
//! steps, smoothed rate, ETA), and the texts every view shows of it: the
//! top line of the tty view, the plain progress line, the closing summary.
//! The figures are the daemon's, so the CLI, a Python client and the
//! dashboards agree; the CLI only counts the ETA down between records.

use std::time::{Duration, SystemTime};

use trident_proto::v1::{OverallProgress, ProgressUnit};

use super::format;

/// The newest overall record and when it was reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OverallView {
    pub record: OverallProgress,
    pub at: Option<SystemTime>,
}

impl OverallView {
    /// Fraction of the bytes done, when the total is known.
    pub fn fraction(&self) -> Option<f64> {
        let total = self.record.bytes_total?;
        if total == 0 {
            return Some(1.0);
        }
        Some((self.record.bytes_done as f64 / total as f64).clamp(0.0, 1.0))
    }

    /// The daemon's ETA counted down to `now`. None when the daemon gave
    /// none, or once it ran out without a newer record: an ETA is never
    /// shown frozen or past due.
    pub fn eta(&self, now: SystemTime) -> Option<Duration> {
        let eta = Duration::try_from(self.record.eta?).ok()?;
        let since = self
            .at
            .and_then(|at| now.duration_since(at).ok())
            .unwrap_or_default();
        eta.checked_sub(since).filter(|left| !left.is_zero())
    }

    /// The smoothed rate in bytes per second, when measured.
    pub fn rate(&self) -> Option<f64> {
        self.record.bytes_per_second.filter(|r| r.is_finite())
    }

    /// "105 MiB/250 MiB  5.0 MiB/s  ETA 29.0s  step 3 of 9" (`sep` between).
    pub fn figures(&self, now: SystemTime, sep: &str) -> String {
        let bytes = ProgressUnit::Bytes;
        let mut parts = Vec::new();
        let done = format::amount(bytes, self.record.bytes_done);
        parts.push(match self.record.bytes_total {
            Some(total) => format!("{done}/{}", format::amount(bytes, total)),
            None => done,
        });
        if let Some(rate) = self.rate() {
            parts.push(format::rate(bytes, rate));
        }
        if let Some(eta) = self.eta(now) {
            parts.push(format!("ETA {}", format::duration(eta)));
        }
        parts.push(self.steps());
        parts.join(sep)
    }

    /// SWUpdate's "step n of m": the step running now counts (two done,
    /// the third running: "step 3 of 9"); once finished, [`Self::steps_done`].
    pub fn steps(&self) -> String {
        let r = &self.record;
        if r.steps_planned == 0 || r.finished {
            return self.steps_done();
        }
        let running = u32::from(!r.current_step.is_empty());
        let step = r.steps_done.saturating_add(running).min(r.steps_planned);
        format!("step {step} of {}", r.steps_planned)
    }

    /// "7 of 9 steps", or "7 steps done" when the plan did not say.
    pub fn steps_done(&self) -> String {
        let r = &self.record;
        if r.steps_planned == 0 {
            format!("{} steps done", r.steps_done)
        } else {
            format!("{} of {} steps", r.steps_done, r.steps_planned)
        }
    }
}
