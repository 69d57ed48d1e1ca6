//! The plain view for CI logs and pipes: append-only lines. One line per
//! phase change; at most one progress line per phase every 5 s or 5 %;
//! every kept log line; every stream notice. [`PlainView::lines`] is a pure
//! function of the model and of what it printed before.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use trident_proto::v1::{PhaseState, StatusCode};

use super::error::ErrorView;
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
    finished: bool,
}

impl PlainView {
    /// The lines to append since the previous call.
    pub fn lines(&mut self, model: &Model) -> Vec<String> {
        let mut out = Vec::new();
        let clock = clock(model);
        if let Some(op) = &model.operation
            && !self.started
            && !op.id.is_empty()
        {
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
        for phase in &model.phases {
            self.phase_lines(phase, &clock, &mut out);
        }
        for (index, log) in &model.recent_logs {
            if *index > self.logs {
                self.logs = *index;
                out.push(format!(
                    "{clock} {} {}: {}",
                    format::level(log.level),
                    log.target,
                    log.message.trim_end()
                ));
            }
        }
        for notice in model.notices.iter().skip(self.notices) {
            out.push(format!("{clock} ! {}", notice_text(notice)));
        }
        self.notices = model.notices.len();
        if let (Some(outcome), false) = (&model.outcome, self.finished) {
            self.finished = true;
            let took = model
                .elapsed(model.last_seen.unwrap_or(SystemTime::UNIX_EPOCH))
                .map(|d| format!(" in {}", format::duration(d)))
                .unwrap_or_default();
            let verdict = if outcome.status == StatusCode::Success {
                "succeeded"
            } else {
                "failed"
            };
            out.push(format!(
                "{clock} operation {verdict}{took} (reboot {})",
                format::reboot(outcome.reboot_status)
            ));
            if outcome.status != StatusCode::Success {
                let view = match (&model.error, &outcome.error) {
                    (Some(report), _) => Some(ErrorView::from(report)),
                    (None, Some(error)) => Some(ErrorView::from(error)),
                    (None, None) => None,
                };
                if let Some(view) = view {
                    out.extend(view.text_lines());
                }
                if let Some(phase) = model.failed_phase()
                    && !phase.logs.is_empty()
                {
                    out.push(format!("last log lines of phase \"{}\":", phase.name));
                    for log in &phase.logs {
                        out.push(format!(
                            "  {} {}: {}",
                            format::level(log.level),
                            log.target,
                            log.message.trim_end()
                        ));
                    }
                }
            }
        }
        out
    }

    fn phase_lines(&mut self, phase: &PhaseView, clock: &str, out: &mut Vec<String>) {
        let printed = self.phases.entry(phase.id.clone()).or_default();
        if printed.state != Some(phase.state) {
            let what = match phase.state {
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
            };
            out.push(format!("{clock} phase {}: {what}", phase.name));
            *printed = PhasePrinted {
                state: Some(phase.state),
                at: phase.updated,
                fraction: phase.fraction(),
                current: phase.current,
            };
            return;
        }
        if phase.state != PhaseState::Running || phase.current == printed.current {
            return;
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
        if !(waited || moved) {
            return;
        }
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
        out.push(format!(
            "{clock} phase {}:{pct} {}{total}{rate}{eta}",
            phase.name,
            format::amount(phase.unit, phase.current)
        ));
        printed.at = phase.updated;
        printed.fraction = phase.fraction();
        printed.current = phase.current;
    }
}

/// "[  12.3s]": time since the operation started, from record timestamps.
fn clock(model: &Model) -> String {
    let elapsed = model
        .last_seen
        .and_then(|now| model.elapsed(now))
        .unwrap_or_default();
    format!("[{:>7}]", format::duration(elapsed))
}
