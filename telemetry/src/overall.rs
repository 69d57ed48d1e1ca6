//! Overall progress of a servicing operation, derived in this one place
//! from its phase records (the bus layer feeds it every phase update and
//! publishes what it returns), so the CLI, the Python client and the
//! dashboards all show the same figures.
//!
//! - Bytes: the operation's byte work, counted once. The total comes from
//!   the plan ([`plan_bytes`], called by the engine once the image metadata
//!   is read); bytes done are the sum of the top-level byte phases (a child
//!   phase's bytes are already in its parent's).
//! - Steps: top-level phases done, of the planned count ([`plan_steps`],
//!   declared by the engine when the operation knows its plan; declared
//!   again when the plan changes, the newest count wins).
//! - Rate: exponentially weighted over bytes (never items: items of very
//!   different sizes make an item rate meaningless): decayed bytes over
//!   decayed seconds, time constant [`RATE_TIME_CONSTANT`], sampled at most
//!   every [`RATE_SAMPLE`].
//! - ETA: remaining bytes at the smoothed rate, only once it can be honest:
//!   a known total, a measured rate, at least [`ETA_MIN_FRACTION`] of the
//!   bytes done and [`ETA_MIN_SAMPLES`] rate samples. Otherwise absent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use trident_proto::v1::{OverallProgress, PhaseState, ProgressRecord, ProgressUnit};

/// Target of the plan event (the layer routes it here, not to the ring).
pub const PLAN_TARGET: &str = "trident::progress::plan";
/// Time constant of the rate's exponential smoothing.
pub const RATE_TIME_CONSTANT: Duration = Duration::from_secs(5);
/// Least time between two rate samples.
pub const RATE_SAMPLE: Duration = Duration::from_millis(250);
/// Fraction of the bytes done before an ETA is given.
pub const ETA_MIN_FRACTION: f64 = 0.03;
/// Rate samples taken before an ETA is given.
pub const ETA_MIN_SAMPLES: u32 = 4;
/// Operations tracked at once (oldest dropped beyond; they are finished
/// when their completion was missed).
const MAX_TRACKED: usize = 64;

/// Field names of the plan event.
pub(crate) mod fields {
    pub const BYTES_TOTAL: &str = "bytes_total";
    pub const STEPS_PLANNED: &str = "steps_planned";
}

/// Declares the current operation's byte total (from the image metadata).
/// Call inside the operation's span, before its byte phases start.
pub fn plan_bytes(bytes_total: u64) {
    tracing::info!(target: PLAN_TARGET, bytes_total, "overall plan: bytes");
}

/// Declares how many top-level phases the current operation runs in all
/// ("step n of m"). Call inside the operation's span, as early as the plan
/// is known; call again if the plan changes (a step found not to apply).
pub fn plan_steps(steps_planned: u32) {
    tracing::info!(target: PLAN_TARGET, steps_planned, "overall plan: steps");
}

/// One top-level phase as counted.
#[derive(Debug, Clone, Copy)]
struct Step {
    bytes: bool,
    current: u64,
    total: Option<u64>,
    done: bool,
}

/// The derivation state of one operation.
#[derive(Debug)]
struct OperationProgress {
    started: Instant,
    planned_bytes: Option<u64>,
    planned_steps: u32,
    /// Top-level phases, in the order they started.
    steps: Vec<(String, Step)>,
    /// Byte phases nested in another phase: (phase id, parent id, step).
    /// Under a phase that counts items (install's region writes under
    /// "Verify region hashes") they are the operation's byte work; under a
    /// byte phase they are parts of its bytes and are not counted again.
    nested: Vec<(String, String, Step)>,
    current_step: String,
    /// (time, bytes done) of the last rate sample.
    last_sample: Option<(Instant, u64)>,
    /// Decayed sums of the rate (bytes moved, seconds elapsed).
    weighted_bytes: f64,
    weighted_secs: f64,
    rate: Option<f64>,
    samples: u32,
}

impl OperationProgress {
    fn new(now: Instant) -> Self {
        OperationProgress {
            started: now,
            planned_bytes: None,
            planned_steps: 0,
            steps: Vec::new(),
            nested: Vec::new(),
            current_step: String::new(),
            last_sample: None,
            weighted_bytes: 0.0,
            weighted_secs: 0.0,
            rate: None,
            samples: 0,
        }
    }

    fn bytes_done(&self) -> u64 {
        let top: u64 = self
            .steps
            .iter()
            .filter(|(_, s)| s.bytes)
            .map(|(_, s)| s.current)
            .sum();
        top + self.counted_nested().map(|s| s.current).sum::<u64>()
    }

    /// Nested byte phases whose parent does not count bytes itself.
    fn counted_nested(&self) -> impl Iterator<Item = &Step> {
        self.nested
            .iter()
            .filter(|(_, parent, _)| !self.steps.iter().any(|(id, s)| id == parent && s.bytes))
            .map(|(_, _, s)| s)
    }

    fn has_byte_work(&self) -> bool {
        self.steps.iter().any(|(_, s)| s.bytes) || self.counted_nested().next().is_some()
    }

    fn update_nested(&mut self, record: &ProgressRecord) {
        if record.unit() != ProgressUnit::Bytes {
            return;
        }
        let step = Step {
            bytes: true,
            current: record.current,
            total: record.total,
            done: record.state() == PhaseState::Done,
        };
        match self
            .nested
            .iter_mut()
            .find(|(id, _, _)| *id == record.phase_id)
        {
            Some((_, _, slot)) => *slot = step,
            None => self.nested.push((
                record.phase_id.clone(),
                record.parent_phase_id.clone(),
                step,
            )),
        }
    }

    /// The plan's total, else the sum of the byte phases' totals when all
    /// are known (a lower bound of the work, but the best there is).
    fn bytes_total(&self) -> Option<u64> {
        if self.planned_bytes.is_some() {
            return self.planned_bytes;
        }
        let mut byte_steps = self
            .steps
            .iter()
            .filter(|(_, s)| s.bytes)
            .map(|(_, s)| s)
            .chain(self.counted_nested())
            .peekable();
        byte_steps.peek()?;
        byte_steps.map(|s| s.total).sum()
    }

    fn update_step(&mut self, record: &ProgressRecord) {
        let state = record.state();
        let step = Step {
            bytes: record.unit() == ProgressUnit::Bytes,
            current: record.current,
            total: record.total,
            done: state == PhaseState::Done,
        };
        match self.steps.iter_mut().find(|(id, _)| *id == record.phase_id) {
            Some((_, slot)) => *slot = step,
            None => self.steps.push((record.phase_id.clone(), step)),
        }
        if state == PhaseState::Running {
            self.current_step.clone_from(&record.name);
        } else if self.current_step == record.name {
            self.current_step.clear();
        }
    }

    /// Exponentially weighted rate over bytes: bytes and seconds decay by
    /// the same weight, so the rate is bytes per second of the recent past
    /// (no bias toward the first sample, unlike a plain EWMA of rates).
    fn sample_rate(&mut self, now: Instant) {
        if !self.has_byte_work() {
            return;
        }
        let done = self.bytes_done();
        let Some((at, bytes)) = self.last_sample else {
            self.last_sample = Some((now, done));
            return;
        };
        let dt = now.saturating_duration_since(at);
        if dt < RATE_SAMPLE {
            return;
        }
        let secs = dt.as_secs_f64();
        let decay = (-secs / RATE_TIME_CONSTANT.as_secs_f64()).exp();
        self.weighted_bytes = self.weighted_bytes * decay + done.saturating_sub(bytes) as f64;
        self.weighted_secs = self.weighted_secs * decay + secs;
        self.rate = Some(self.weighted_bytes / self.weighted_secs);
        self.samples += 1;
        self.last_sample = Some((now, done));
    }

    fn eta(&self, done: u64, total: Option<u64>) -> Option<Duration> {
        let total = total.filter(|t| *t > 0)?;
        let rate = self.rate.filter(|r| *r > 0.0)?;
        let fraction = done as f64 / total as f64;
        if self.samples < ETA_MIN_SAMPLES || fraction < ETA_MIN_FRACTION {
            return None;
        }
        Duration::try_from_secs_f64(total.saturating_sub(done) as f64 / rate).ok()
    }

    fn view(&self, operation_id: &str, now: Instant, finished: bool) -> OverallProgress {
        let bytes_done = self.bytes_done();
        let bytes_total = self.bytes_total();
        let steps_done = self.steps.iter().filter(|(_, s)| s.done).count();
        OverallProgress {
            operation_id: operation_id.to_owned(),
            bytes_total,
            bytes_done,
            steps_done: u32::try_from(steps_done).unwrap_or(u32::MAX),
            steps_planned: self.planned_steps,
            bytes_per_second: self.rate,
            eta: if finished {
                None
            } else {
                self.eta(bytes_done, bytes_total)
                    .and_then(|d| prost_types::Duration::try_from(d).ok())
            },
            elapsed: prost_types::Duration::try_from(now.saturating_duration_since(self.started))
                .ok(),
            current_step: if finished {
                String::new()
            } else {
                self.current_step.clone()
            },
            finished,
        }
    }
}

/// Overall progress of every running operation.
#[derive(Debug, Default)]
pub struct OverallTracker {
    operations: HashMap<Arc<str>, OperationProgress>,
}

impl OverallTracker {
    /// An operation started at `now` (its elapsed time counts from here).
    pub fn started(&mut self, operation: &Arc<str>, now: Instant) {
        if self.operations.len() >= MAX_TRACKED
            && let Some(oldest) = self
                .operations
                .iter()
                .min_by_key(|(_, p)| p.started)
                .map(|(id, _)| id.clone())
        {
            self.operations.remove(&oldest);
        }
        self.operations
            .insert(operation.clone(), OperationProgress::new(now));
    }

    /// The operation declared its byte total and/or its step count (what
    /// it did not declare stays as it was). Returns the new overall view.
    pub fn plan(
        &mut self,
        operation: &Arc<str>,
        bytes_total: Option<u64>,
        steps: Option<u32>,
        now: Instant,
    ) -> OverallProgress {
        let op = self.entry(operation, now);
        if bytes_total.is_some() {
            op.planned_bytes = bytes_total;
        }
        if let Some(steps) = steps {
            op.planned_steps = steps;
        }
        op.view(operation, now, false)
    }

    /// A phase record of the operation; returns the new overall view.
    /// Child phases are not steps; a child byte phase adds its bytes when
    /// its parent counts items.
    pub fn phase(
        &mut self,
        operation: &Arc<str>,
        record: &ProgressRecord,
        now: Instant,
    ) -> OverallProgress {
        let op = self.entry(operation, now);
        if record.parent_phase_id.is_empty() {
            op.update_step(record);
        } else {
            op.update_nested(record);
        }
        op.sample_rate(now);
        op.view(operation, now, false)
    }

    /// The operation completed: its final view (None when it reported no
    /// phase), and it is forgotten.
    pub fn finished(&mut self, operation: &str, now: Instant) -> Option<OverallProgress> {
        let op = self.operations.remove(operation)?;
        (!op.steps.is_empty()).then(|| op.view(operation, now, true))
    }

    fn entry(&mut self, operation: &Arc<str>, now: Instant) -> &mut OperationProgress {
        self.operations
            .entry(operation.clone())
            .or_insert_with(|| OperationProgress::new(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        id: &str,
        parent: &str,
        unit: ProgressUnit,
        current: u64,
        total: u64,
    ) -> ProgressRecord {
        ProgressRecord {
            phase_id: id.to_owned(),
            parent_phase_id: parent.to_owned(),
            name: format!("phase {id}"),
            unit: unit as i32,
            current,
            total: Some(total),
            state: PhaseState::Running as i32,
            ..ProgressRecord::default()
        }
    }

    #[test]
    fn bytes_count_once_and_eta_waits_until_honest() {
        let op: Arc<str> = Arc::from("op");
        let t0 = Instant::now();
        let mut tracker = OverallTracker::default();
        tracker.started(&op, t0);
        tracker.plan(&op, None, Some(3), t0);
        tracker.plan(&op, Some(1000), None, t0);
        let mut view = OverallProgress::default();
        // 10 bytes per 500 ms = 20 B/s, steady; a child repeats the bytes.
        for i in 1..=20u64 {
            let at = t0 + Duration::from_millis(500 * i);
            tracker.phase(&op, &record("w", "", ProgressUnit::Bytes, i * 10, 1000), at);
            view = tracker.phase(
                &op,
                &record("w/c", "w", ProgressUnit::Bytes, i * 10, 1000),
                at,
            );
            if i * 10 < 30 {
                assert_eq!(
                    view.eta, None,
                    "no ETA before {ETA_MIN_FRACTION} of the bytes"
                );
            }
        }
        assert_eq!(view.bytes_done, 200);
        assert_eq!(view.bytes_total, Some(1000));
        assert_eq!(view.steps_planned, 3);
        let rate = view.bytes_per_second.unwrap_or_default();
        assert!((rate - 20.0).abs() < 0.5, "rate {rate}");
        let eta = view.eta.map(|d| d.seconds).unwrap_or_default();
        assert!((39..=41).contains(&eta), "800 B at 20 B/s, got {eta}s");
    }

    #[test]
    fn items_never_make_a_rate_and_steps_count_top_level_phases() {
        let op: Arc<str> = Arc::from("op");
        let t0 = Instant::now();
        let mut tracker = OverallTracker::default();
        let mut done = record("v", "", ProgressUnit::Items, 1, 1);
        done.state = PhaseState::Done as i32;
        tracker.phase(&op, &done, t0);
        let view = tracker.phase(
            &op,
            &record("x", "", ProgressUnit::Items, 5, 9),
            t0 + Duration::from_secs(3),
        );
        assert_eq!(view.bytes_total, None, "no byte phase, no plan");
        assert_eq!(view.bytes_per_second, None, "no rate from items");
        assert_eq!(view.eta, None);
        assert_eq!(view.steps_done, 1);
        assert_eq!(view.current_step, "phase x");
        let last = tracker.finished(&op, t0 + Duration::from_secs(4));
        assert!(last.is_some_and(|v| v.finished && v.eta.is_none()));
        assert!(
            tracker.finished(&op, t0).is_none(),
            "forgotten once finished"
        );
    }

    #[test]
    fn byte_phases_nested_in_an_item_phase_are_the_operations_bytes() {
        let op: Arc<str> = Arc::from("op");
        let t0 = Instant::now();
        let mut tracker = OverallTracker::default();
        // Install: "verify" counts regions, its children write bytes.
        tracker.phase(&op, &record("verify", "", ProgressUnit::Items, 0, 3), t0);
        tracker.phase(
            &op,
            &record("write/a", "verify", ProgressUnit::Bytes, 300, 300),
            t0 + Duration::from_secs(1),
        );
        let view = tracker.phase(
            &op,
            &record("write/b", "verify", ProgressUnit::Bytes, 50, 700),
            t0 + Duration::from_secs(2),
        );
        assert_eq!(view.bytes_done, 350);
        assert_eq!(view.bytes_total, Some(1000), "the children's totals");
        assert_eq!(view.steps_done, 0, "children are not steps");
        assert!(view.bytes_per_second.is_some(), "a rate from nested bytes");
    }
}
