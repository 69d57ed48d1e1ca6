//! The state of the progress view, fed by [`Event`]s. Renderers read it and
//! never look at the stream, so they are pure and tested without a terminal.
//!
//! Rates and ETAs are computed here, client-side, from the records' own
//! timestamps (not the wall clock), so a replayed stream renders the same.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use trident_proto::v1::{
    ErrorReport, LogLevel, PhaseState, RebootAction, RebootStatus, ServicingKind, StatusCode,
    TridentError,
};

use super::error::ErrorView;
use super::event::{Event, LogLine};
use super::overall::OverallView;
pub use super::phase::PhaseView;
use crate::exit::Exit;

/// Log lines kept per phase (the view shows the last few).
pub const LOG_LINES_KEPT: usize = 20;
/// Log lines kept in arrival order across phases.
pub const RECENT_LOGS_KEPT: usize = 256;
/// Samples kept per phase for the rate.
const RATE_WINDOW: Duration = Duration::from_secs(10);

/// The operation being shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OperationView {
    pub id: String,
    pub trace_id: String,
    pub kind: ServicingKind,
    pub rpc: String,
    pub started: Option<SystemTime>,
}

/// How the operation ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: StatusCode,
    pub reboot_status: RebootStatus,
    /// With REBOOT_STARTED: what the daemon does about it (opt-in addition).
    pub reboot_action: Option<RebootAction>,
    /// The servicing actually done (`SERVICING_KIND_NONE_REQUIRED`: nothing).
    pub servicing_kind: Option<ServicingKind>,
    pub error: Option<TridentError>,
    pub at: Option<SystemTime>,
}

/// A line the client shows about the stream itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    Gap {
        count: u64,
        first: u64,
        last: u64,
        reason: String,
    },
    RunChange {
        previous: String,
        current: String,
    },
    Dropped {
        total: u64,
    },
    /// Log records of the operation the servicing stream did not carry.
    LogsNotShown {
        count: u64,
        operation_id: String,
    },
    Reconnecting {
        attempt: u32,
        reason: String,
    },
    Resumed {
        after: Option<String>,
    },
}

/// The whole view state.
#[derive(Debug, Clone, Default)]
pub struct Model {
    pub operation: Option<OperationView>,
    pub phases: Vec<PhaseView>,
    /// The daemon's overall progress of the operation (newest record).
    pub overall: Option<OverallView>,
    /// Log lines outside any phase, last few.
    pub loose_logs: VecDeque<LogLine>,
    /// Number of log lines seen (kept or not).
    pub log_count: u64,
    /// The last log lines in arrival order, each with its index (1-based);
    /// the plain renderer prints the ones it has not printed yet.
    pub recent_logs: VecDeque<(u64, LogLine)>,
    pub notices: Vec<Notice>,
    pub error: Option<ErrorReport>,
    pub outcome: Option<Outcome>,
    /// Time of the newest input, the view's "now" when rendering a replay.
    pub last_seen: Option<SystemTime>,
    /// Log lines at a level more verbose than this are counted but not kept.
    pub max_level: Option<LogLevel>,
    /// Log records the servicing stream said it did not carry (cumulative).
    pub logs_not_shown: u64,
}

impl Model {
    /// An empty model that keeps log lines up to `max_level` (None: all).
    pub fn new(max_level: Option<LogLevel>) -> Self {
        Model {
            max_level,
            ..Model::default()
        }
    }

    /// Feeds one event.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::Started {
                timestamp,
                operation_id,
                trace_id,
                kind,
                rpc,
                ..
            } => {
                self.touch(*timestamp);
                self.apply_started(*timestamp, operation_id, trace_id, *kind, rpc);
            }
            Event::Log(line) => {
                self.touch(line.timestamp);
                self.apply_log(line);
            }
            Event::Progress {
                timestamp, record, ..
            } => {
                self.touch(timestamp.or(super::event::system_time(record.updated.as_ref())));
                self.apply_progress(record, *timestamp);
            }
            Event::Overall {
                timestamp, record, ..
            } => {
                self.touch(*timestamp);
                self.apply_overall(record, *timestamp);
            }
            Event::Error { report, .. } => {
                self.touch(super::event::system_time(report.timestamp.as_ref()));
                self.error = Some((**report).clone());
            }
            Event::Completed {
                timestamp,
                status,
                reboot_status,
                reboot_action,
                servicing_kind,
                error,
                ..
            } => {
                self.touch(*timestamp);
                self.outcome = Some(Outcome {
                    status: *status,
                    reboot_status: *reboot_status,
                    reboot_action: *reboot_action,
                    servicing_kind: *servicing_kind,
                    error: error.as_deref().cloned(),
                    at: *timestamp,
                });
            }
            Event::Gap(gap) => self.notices.push(Notice::Gap {
                count: gap.count,
                first: gap.first_missing.as_ref().map_or(0, |c| c.sequence),
                last: gap.last_missing.as_ref().map_or(0, |c| c.sequence),
                reason: gap_reason(gap.reason()),
            }),
            Event::RunChange(change) => self.notices.push(Notice::RunChange {
                previous: change.previous_run_id.clone(),
                current: change.current_run_id.clone(),
            }),
            Event::Drops { total } => self.apply_drops(*total),
            Event::StreamDrops { logs } => self.apply_stream_drops(*logs),
            Event::Reconnecting { attempt, reason } => self.notices.push(Notice::Reconnecting {
                attempt: *attempt,
                reason: reason.clone(),
            }),
            Event::Resumed { after } => self.notices.push(Notice::Resumed {
                after: after.as_ref().map(crate::cursor::format),
            }),
        }
    }

    /// Merges what a Started event knows: the servicing stream knows
    /// id/trace, the bus record also knows kind and rpc.
    fn apply_started(
        &mut self,
        timestamp: Option<SystemTime>,
        operation_id: &String,
        trace_id: &String,
        kind: ServicingKind,
        rpc: &String,
    ) {
        let op = self.operation.get_or_insert_with(OperationView::default);
        if !operation_id.is_empty() {
            op.id.clone_from(operation_id);
        }
        if !trace_id.is_empty() {
            op.trace_id.clone_from(trace_id);
        }
        if kind != ServicingKind::Unspecified {
            op.kind = kind;
        }
        if !rpc.is_empty() {
            op.rpc.clone_from(rpc);
        }
        if op.started.is_none() {
            op.started = timestamp;
        }
    }

    /// Counts every log line; keeps the shown ones under the running phase.
    fn apply_log(&mut self, line: &LogLine) {
        self.log_count += 1;
        if !self.keeps(line.level) {
            return;
        }
        if self.recent_logs.len() == RECENT_LOGS_KEPT {
            self.recent_logs.pop_front();
        }
        self.recent_logs.push_back((self.log_count, line.clone()));
        let target = match self.running_phase_index() {
            Some(i) => &mut self.phases[i].logs,
            None => &mut self.loose_logs,
        };
        push_bounded(target, line.clone());
    }

    /// A notice per overflow of the servicing stream: how many log records
    /// it did not carry since the previous notice.
    fn apply_stream_drops(&mut self, logs: u64) {
        if logs <= self.logs_not_shown {
            return;
        }
        let count = logs - self.logs_not_shown;
        self.logs_not_shown = logs;
        let operation_id = self
            .operation
            .as_ref()
            .map(|op| op.id.clone())
            .unwrap_or_default();
        self.notices.push(Notice::LogsNotShown {
            count,
            operation_id,
        });
    }

    /// A drop notice, once per new total.
    fn apply_drops(&mut self, total: u64) {
        let shown = self.notices.iter().rev().find_map(|n| match n {
            Notice::Dropped { total } => Some(*total),
            _ => None,
        });
        if total > 0 && shown != Some(total) {
            self.notices.push(Notice::Dropped { total });
        }
    }

    fn keeps(&self, level: LogLevel) -> bool {
        match self.max_level {
            None => true,
            // Unspecified counts as info.
            Some(max) => {
                let level = if level == LogLevel::Unspecified {
                    LogLevel::Info
                } else {
                    level
                };
                (level as i32) <= (max as i32)
            }
        }
    }

    fn touch(&mut self, at: Option<SystemTime>) {
        if let Some(at) = at
            && self.last_seen.is_none_or(|seen| at > seen)
        {
            self.last_seen = Some(at);
        }
    }

    /// The newest overall record wins (a replay never moves it back).
    fn apply_overall(
        &mut self,
        record: &trident_proto::v1::OverallProgress,
        at: Option<SystemTime>,
    ) {
        if let Some(shown) = &self.overall
            && (shown.record.finished
                || matches!((at, shown.at), (Some(new), Some(old)) if new < old))
        {
            return;
        }
        self.overall = Some(OverallView {
            record: record.clone(),
            at,
        });
    }

    fn apply_progress(
        &mut self,
        record: &trident_proto::v1::ProgressRecord,
        timestamp: Option<SystemTime>,
    ) {
        let updated = super::event::system_time(record.updated.as_ref()).or(timestamp);
        let index = self.phase_index(record, updated);
        let phase = &mut self.phases[index];
        // A replay after a resume may repeat an older state: never go back.
        if let (Some(new), Some(old)) = (updated, phase.updated)
            && new < old
        {
            return;
        }
        if is_final(phase.state) && !is_final(record.state()) {
            return;
        }
        if !record.name.is_empty() {
            phase.name.clone_from(&record.name);
        }
        phase.current = record.current;
        phase.total = record.total;
        phase.state = record.state();
        phase.updated = updated;
        if let Some(at) = updated {
            phase.samples.push_back((at, record.current));
            while phase.samples.len() > 2
                && phase
                    .samples
                    .front()
                    .and_then(|(t, _)| at.duration_since(*t).ok())
                    .is_some_and(|age| age > RATE_WINDOW)
            {
                phase.samples.pop_front();
            }
        }
    }

    /// The phase of `record`, inserted (pending) when it is new.
    fn phase_index(
        &mut self,
        record: &trident_proto::v1::ProgressRecord,
        updated: Option<SystemTime>,
    ) -> usize {
        if let Some(i) = self.phases.iter().position(|p| p.id == record.phase_id) {
            return i;
        }
        let depth = self
            .phases
            .iter()
            .find(|p| p.id == record.parent_phase_id)
            .map_or(0, |p| p.depth + 1);
        let phase = PhaseView {
            id: record.phase_id.clone(),
            parent: record.parent_phase_id.clone(),
            name: record.name.clone(),
            unit: record.unit(),
            current: 0,
            total: None,
            state: PhaseState::Pending,
            started: super::event::system_time(record.started.as_ref()).or(updated),
            updated: None,
            samples: VecDeque::new(),
            logs: VecDeque::new(),
            depth,
        };
        // Children sit right after their parent's subtree.
        let at = self.insert_position(&record.parent_phase_id);
        self.phases.insert(at, phase);
        at
    }

    fn insert_position(&self, parent: &str) -> usize {
        if parent.is_empty() {
            return self.phases.len();
        }
        let Some(p) = self.phases.iter().position(|x| x.id == parent) else {
            return self.phases.len();
        };
        let depth = self.phases[p].depth;
        let mut at = p + 1;
        while at < self.phases.len() && self.phases[at].depth > depth {
            at += 1;
        }
        at
    }

    /// The innermost running phase (the last running one in view order).
    pub fn running_phase_index(&self) -> Option<usize> {
        self.phases
            .iter()
            .rposition(|p| p.state == PhaseState::Running)
    }

    /// The phase that failed last, if any.
    pub fn failed_phase(&self) -> Option<&PhaseView> {
        self.phases
            .iter()
            .rev()
            .find(|p| p.state == PhaseState::Failed)
    }

    /// Time since the operation started, as of `now`.
    pub fn elapsed(&self, now: SystemTime) -> Option<Duration> {
        let started = self.operation.as_ref()?.started?;
        let end = self.outcome.as_ref().and_then(|o| o.at).unwrap_or(now);
        end.duration_since(started).ok()
    }
}

impl Model {
    /// The failed operation's error: the bus's full report when the view
    /// has it, else the upstream error of its completion. None unless the
    /// operation finished and failed.
    pub fn error_view(&self) -> Option<ErrorView> {
        let outcome = self.outcome.as_ref()?;
        if outcome.status == StatusCode::Success {
            return None;
        }
        match (&self.error, &outcome.error) {
            (Some(report), _) => Some(ErrorView::from(report)),
            (None, Some(error)) => Some(ErrorView::from(error)),
            (None, None) => None,
        }
    }

    /// The exit code the finished operation maps to (None while running).
    pub fn exit(&self) -> Option<Exit> {
        let outcome = self.outcome.as_ref()?;
        Some(match outcome.status {
            StatusCode::Success => Exit::Success,
            _ if is_reboot_failure(outcome.error.as_ref()) => Exit::RebootUnsuccessful,
            _ => Exit::ServicingFailed,
        })
    }
}

/// Upstream exits 3 when the reboot Trident was to perform did not happen;
/// the daemon reports that as a failure whose subkind names the reboot.
fn is_reboot_failure(error: Option<&TridentError>) -> bool {
    error.is_some_and(|e| e.subkind.contains("reboot"))
}

fn is_final(state: PhaseState) -> bool {
    matches!(state, PhaseState::Done | PhaseState::Failed)
}

fn push_bounded(lines: &mut VecDeque<LogLine>, line: LogLine) {
    if lines.len() == LOG_LINES_KEPT {
        lines.pop_front();
    }
    lines.push_back(line);
}

fn gap_reason(reason: trident_proto::v1::GapReason) -> String {
    match reason {
        trident_proto::v1::GapReason::SubscriberLagged => "client fell behind",
        trident_proto::v1::GapReason::Evicted => "evicted from the daemon's buffer",
        trident_proto::v1::GapReason::PreviousRun => "not in the journal of the previous run",
        trident_proto::v1::GapReason::Unspecified => "unknown reason",
    }
    .to_string()
}
