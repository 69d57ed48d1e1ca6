//! The plain view for CI logs and pipes: append-only lines. One line per
//! phase change; at most one progress line per phase every 5 s or 5 %;
//! every kept log line; every stream notice. [`PlainView::lines`] is a pure
//! function of the model and of what it printed before.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use trident_proto::v1::{PhaseState, StatusCode};

use super::event::LogLine;
use super::format;
use super::model::{Model, PhaseView};
use super::tty::notice_text;

/// Minimum time between two progress lines of one phase...
pub const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);
/// ...unless it moved by at least this fraction.
pub const PROGRESS_STEP: f64 = 0.05;

#[derive(Debug, Clone, Default)]
struct PhasePrinted {
    state: Option<PhaseState>,
    at: Option<SystemTime>,
    fraction: Option<f64>,
    current: u64,
}

/// What was printed so far.
#[derive(Debug, Clone, Default)]
pub struct PlainView {
    started: bool,
    logs: u64,
    notices: usize,
    phases: HashMap<String, PhasePrinted>,
    overall: PhasePrinted,
    finished: bool,
}

impl PlainView {
    /// The lines to append since the previous call.
    pub fn lines(&mut self, model: &Model) -> Vec<String> {
        let mut out = Vec::new();
        let clock = clock(model);
        self.started_line(model, &clock, &mut out);
        self.overall_line(model, &clock, &mut out);
        for phase in &model.phases {
            self.phase_lines(phase, &clock, &mut out);
        }
        for (index, log) in &model.recent_logs {
            if *index > self.logs {
                self.logs = *index;
                out.push(format!("{clock} {}", log_text(log)));
            }
        }
        for notice in model.notices.iter().skip(self.notices) {
            out.push(format!("{clock} ! {}", notice_text(notice)));
        }
        self.notices = model.notices.len();
        if !self.finished && model.outcome.is_some() {
            self.finished = true;
            outcome_lines(model, &clock, &mut out);
        }
        out
    }

    /// "<rpc> started: operation <id>, trace <id>", once the id is known.
    fn started_line(&mut self, model: &Model, clock: &str, out: &mut Vec<String>) {
        let Some(op) = &model.operation else { return };
        if self.started || op.id.is_empty() {
            return;
        }
        self.started = true;
        let rpc = if op.rpc.is_empty() {
            "operation"
        } else {
            &op.rpc
        };
        out.push(format!(
            "{clock} {rpc} started: operation {}, trace {}",
            op.id, op.trace_id
        ));
    }

    /// "overall: 42% 105 MiB/250 MiB 5.0 MiB/s ETA 29.0s step 3 of 9", at most
    /// every [`PROGRESS_INTERVAL`] or [`PROGRESS_STEP`] (the first one at
    /// once), never after the operation finished (the summary says it).
    fn overall_line(&mut self, model: &Model, clock: &str, out: &mut Vec<String>) {
        let Some(overall) = &model.overall else {
            return;
        };
        if overall.record.finished || model.outcome.is_some() {
            return;
        }
        let printed = &mut self.overall;
        let first = printed.at.is_none();
        let waited = match (overall.at, printed.at) {
            (Some(now), Some(then)) => now
                .duration_since(then)
                .is_ok_and(|d| d >= PROGRESS_INTERVAL),
            _ => false,
        };
        let moved = match (overall.fraction(), printed.fraction) {
            (Some(now), Some(then)) => now - then >= PROGRESS_STEP,
            _ => false,
        };
        let changed = overall.record.bytes_done != printed.current;
        if !(first || (changed && (waited || moved))) {
            return;
        }
        let pct = overall
            .fraction()
            .map(|f| format!(" {:.0}%", (f * 100.0).floor()))
            .unwrap_or_default();
        let now = overall.at.unwrap_or(SystemTime::UNIX_EPOCH);
        out.push(format!(
            "{clock} overall:{pct} {}",
            overall.figures(now, " ")
        ));
        *printed = PhasePrinted {
            state: None,
            at: overall.at.or(Some(SystemTime::UNIX_EPOCH)),
            fraction: overall.fraction(),
            current: overall.record.bytes_done,
        };
    }

    /// A line when the phase changes state; while it runs, a progress line
    /// at most every [`PROGRESS_INTERVAL`] or [`PROGRESS_STEP`].
    fn phase_lines(&mut self, phase: &PhaseView, clock: &str, out: &mut Vec<String>) {
        let printed = self.phases.entry(phase.id.clone()).or_default();
        if printed.state != Some(phase.state) {
            out.push(format!(
                "{clock} phase {}: {}",
                phase.name,
                state_text(phase)
            ));
            *printed = PhasePrinted {
                state: Some(phase.state),
                at: phase.updated,
                fraction: phase.fraction(),
                current: phase.current,
            };
            return;
        }
        if !progress_due(phase, printed) {
            return;
        }
        out.push(format!("{clock} {}", progress_text(phase)));
        printed.at = phase.updated;
        printed.fraction = phase.fraction();
        printed.current = phase.current;
    }
}

/// "started", "done in 4.2s", "FAILED", "pending".
fn state_text(phase: &PhaseView) -> String {
    match phase.state {
        PhaseState::Running => "started".to_string(),
        PhaseState::Done => format!(
            "done{}",
            phase
                .elapsed()
                .map(|d| format!(" in {}", format::duration(d)))
                .unwrap_or_default()
        ),
        PhaseState::Failed => "FAILED".to_string(),
        PhaseState::Pending | PhaseState::Unspecified => "pending".to_string(),
    }
}

/// A running phase moved, and enough time passed or it moved enough.
fn progress_due(phase: &PhaseView, printed: &PhasePrinted) -> bool {
    if phase.state != PhaseState::Running || phase.current == printed.current {
        return false;
    }
    let waited = match (phase.updated, printed.at) {
        (Some(now), Some(then)) => now
            .duration_since(then)
            .is_ok_and(|d| d >= PROGRESS_INTERVAL),
        _ => false,
    };
    let moved = match (phase.fraction(), printed.fraction) {
        (Some(now), Some(then)) => now - then >= PROGRESS_STEP,
        _ => false,
    };
    waited || moved
}

/// "phase <name>: 42% 1.2 GiB/2.8 GiB 80 MiB/s ETA 20.0s".
fn progress_text(phase: &PhaseView) -> String {
    let pct = phase
        .fraction()
        .map(|f| format!(" {:.0}%", (f * 100.0).floor()))
        .unwrap_or_default();
    let total = phase
        .total
        .map(|t| format!("/{}", format::amount(phase.unit, t)))
        .unwrap_or_default();
    let rate = phase
        .rate()
        .map(|r| format!(" {}", format::rate(phase.unit, r)))
        .unwrap_or_default();
    let eta = phase
        .eta()
        .map(|d| format!(" ETA {}", format::duration(d)))
        .unwrap_or_default();
    format!(
        "phase {}:{pct} {}{total}{rate}{eta}",
        phase.name,
        format::amount(phase.unit, phase.current)
    )
}

/// The verdict line and, on failure, the error and the failed phase's
/// last log lines.
fn outcome_lines(model: &Model, clock: &str, out: &mut Vec<String>) {
    let Some(outcome) = &model.outcome else {
        return;
    };
    out.push(format!(
        "{clock} {}",
        super::summary::summary(model, outcome)
    ));
    if let Some(view) = model.error_view() {
        out.extend(view.text_lines());
    }
    if outcome.status == StatusCode::Success {
        return;
    }
    if let Some(phase) = model.failed_phase()
        && !phase.logs.is_empty()
    {
        out.push(format!("last log lines of phase \"{}\":", phase.name));
        for log in &phase.logs {
            out.push(format!("  {}", log_text(log)));
        }
    }
}

/// "info target: message".
fn log_text(log: &LogLine) -> String {
    format!(
        "{} {}: {}",
        format::level(log.level),
        log.target,
        log.message.trim_end()
    )
}

/// "[  12.3s]": time since the operation started, from record timestamps.
fn clock(model: &Model) -> String {
    let elapsed = model
        .last_seen
        .and_then(|now| model.elapsed(now))
        .unwrap_or_default();
    format!("[{:>7}]", format::duration(elapsed))
}
