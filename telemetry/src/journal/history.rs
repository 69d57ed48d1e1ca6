//! Reading the journal: what earlier runs left (operations, last error) and
//! replays of a run's or an operation's records.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prost::Message;
use trident_proto::v1::{
    BootSummary, ErrorReport, OperationEvent, OperationSummary, Record, StatusCode, record,
};

use super::segments::{list, read_frames, read_frames_from};
use crate::error::TelemetryError;

/// What the journal held when the bus started.
#[derive(Debug, Default)]
pub struct JournalHistory {
    dir: PathBuf,
    operations: Vec<OperationSummary>,
    last_error: Option<ErrorReport>,
    /// Highest journaled sequence of each run.
    runs: HashMap<String, u64>,
    /// Last progress phase (id) each operation reached.
    last_phase: HashMap<String, String>,
    /// Boots of the journaled records, in order of first appearance, and
    /// where each boot id is in it.
    boots: Vec<BootSummary>,
    boot_index: HashMap<String, usize>,
}

/// An operation an earlier run started and never completed: the daemon
/// stopped (crash, SIGKILL, power loss) in the middle of it.
#[derive(Debug, Clone)]
pub struct InterruptedOperation {
    /// What the journal knew of it (still `running`).
    pub summary: OperationSummary,
    /// The last progress phase it reached, if any.
    pub last_phase: Option<String>,
}

impl JournalHistory {
    /// Scans every segment of the journal directory (a missing directory is
    /// an empty journal).
    pub fn load(dir: &Path) -> Result<Self, TelemetryError> {
        let mut history = JournalHistory {
            dir: dir.to_owned(),
            ..JournalHistory::default()
        };
        let mut index: HashMap<String, usize> = HashMap::new();
        let segments = list(dir).map_err(|source| TelemetryError::Journal {
            path: dir.to_owned(),
            source,
        })?;
        for (_, path, _) in segments {
            // An unreadable segment loses its records, not the others.
            let _ = read_frames(&path, |frame| {
                if let Ok(record) = Record::decode(frame) {
                    history.absorb(record, &mut index);
                }
            });
        }
        Ok(history)
    }

    fn absorb(&mut self, record: Record, index: &mut HashMap<String, usize>) {
        let cursor = record.cursor.clone().unwrap_or_default();
        let seen = self.runs.entry(cursor.run_id.clone()).or_default();
        *seen = (*seen).max(cursor.sequence);
        self.count_boot(&record, &cursor.run_id);
        match record.record {
            Some(record::Record::Operation(op)) => {
                if op.event == OperationEvent::Started as i32 {
                    index.insert(op.operation_id.clone(), self.operations.len());
                    self.operations.push(OperationSummary {
                        operation_id: op.operation_id,
                        kind: op.kind,
                        rpc: op.rpc,
                        running: true,
                        result: StatusCode::Unspecified as i32,
                        reboot_status: op.reboot_status,
                        trace_id: op.trace_id,
                        started: record.timestamp,
                        completed: None,
                        first_cursor: Some(cursor),
                        continues_operation_id: op.continues_operation_id,
                    });
                } else if let Some(summary) = index
                    .get(&op.operation_id)
                    .and_then(|i| self.operations.get_mut(*i))
                {
                    summary.running = false;
                    summary.result = op.result;
                    summary.reboot_status = op.reboot_status;
                    summary.completed = record.timestamp;
                }
            }
            Some(record::Record::Error(report)) => self.last_error = Some(report),
            Some(record::Record::Progress(progress)) if !progress.operation_id.is_empty() => {
                self.last_phase
                    .insert(progress.operation_id, progress.phase_id);
            }
            _ => {}
        }
    }

    fn count_boot(&mut self, record: &Record, run_id: &str) {
        let boots = &mut self.boots;
        let at = *self
            .boot_index
            .entry(record.boot_id.clone())
            .or_insert_with(|| {
                boots.push(BootSummary {
                    boot_id: record.boot_id.clone(),
                    ..BootSummary::default()
                });
                boots.len() - 1
            });
        let Some(boot) = self.boots.get_mut(at) else {
            return;
        };
        boot.records += 1;
        if !boot.run_ids.iter().any(|r| r == run_id) {
            boot.run_ids.push(run_id.to_owned());
        }
        if let Some(at) = record.timestamp {
            let key = |t: &prost_types::Timestamp| (t.seconds, t.nanos);
            if boot.first.as_ref().is_none_or(|f| key(&at) < key(f)) {
                boot.first = Some(at);
            }
            if boot.last.as_ref().is_none_or(|l| key(&at) > key(l)) {
                boot.last = Some(at);
            }
        }
    }

    /// Boots of the journaled records, oldest (first record) first.
    pub fn boots(&self) -> Vec<BootSummary> {
        let mut boots = self.boots.clone();
        boots.sort_by_key(|b| b.first.map(|t| (t.seconds, t.nanos)));
        boots
    }

    /// Operations of earlier runs, oldest first. One still "running" here
    /// was cut short by the daemon's end: it is listed as not running, and
    /// the bus then publishes its failed completion (`crate::interrupted`).
    pub fn operations(&self) -> Vec<OperationSummary> {
        self.operations
            .iter()
            .cloned()
            .map(|mut op| {
                op.running = false;
                op
            })
            .collect()
    }

    /// Operations of earlier runs that never completed, oldest first.
    pub fn interrupted(&self) -> Vec<InterruptedOperation> {
        self.operations
            .iter()
            .filter(|op| op.running)
            .map(|op| InterruptedOperation {
                summary: op.clone(),
                last_phase: self.last_phase.get(&op.operation_id).cloned(),
            })
            .collect()
    }

    /// The newest error report of earlier runs.
    pub fn last_error(&self) -> Option<ErrorReport> {
        self.last_error.clone()
    }

    /// Highest journaled sequence of an earlier run; `None` if unknown.
    pub fn run_head(&self, run_id: &str) -> Option<u64> {
        self.runs.get(run_id).copied()
    }

    /// The journal directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Which journaled records to replay.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplayRequest {
    /// Only records of this run.
    pub run_id: Option<String>,
    /// Only sequences strictly after this.
    pub after: u64,
    /// Only sequences strictly before this.
    pub before: Option<u64>,
    /// Only records of this operation.
    pub operation_id: Option<String>,
    /// No records of this run.
    pub exclude_run: Option<String>,
    /// Only records of this boot.
    pub boot_id: Option<String>,
    /// How far the replay got.
    pub position: ReplayPosition,
}

/// Where a replay continues: a segment (by index) and a byte offset in it.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReplayPosition {
    pub segment: u64,
    pub offset: u64,
    pub done: bool,
    /// Sequence expected next (0: the one after `after`), for holes.
    pub expected: u64,
}

impl ReplayRequest {
    fn matches(&self, record: &Record) -> bool {
        let Some(cursor) = &record.cursor else {
            return false;
        };
        let in_run = self.run_id.as_deref().is_none_or(|r| r == cursor.run_id)
            && self.exclude_run.as_deref() != Some(cursor.run_id.as_str());
        let in_range =
            cursor.sequence > self.after && self.before.is_none_or(|b| cursor.sequence < b);
        let in_operation = self
            .operation_id
            .as_deref()
            .is_none_or(|o| o == crate::record::operation_of(record));
        let in_boot = self.boot_id.as_deref().is_none_or(|b| b == record.boot_id);
        in_run && in_range && in_operation && in_boot
    }
}

/// Frames examined, and records returned, at most per replay step (bounds
/// both the memory and the blocking time of one step).
const STEP_FRAMES: usize = 16_384;
const STEP_RECORDS: usize = 2_048;

/// The next journaled records matching a request, in journal order,
/// continuing from `request.position`; `position.done` once all are read.
pub(crate) fn replay_step(dir: &Path, request: &mut ReplayRequest) -> Vec<Record> {
    let mut found = Vec::new();
    let Ok(segments) = list(dir) else {
        request.position.done = true;
        return found;
    };
    let mut examined = 0;
    let start = request.position.segment;
    for (index, path, _) in segments.iter().filter(|(i, _, _)| *i >= start) {
        if *index != request.position.segment {
            request.position.segment = *index;
            request.position.offset = 0;
        }
        let read = read_frames_from(path, request.position.offset, |frame| {
            examined += 1;
            if let Ok(record) = Record::decode(frame)
                && request.matches(&record)
            {
                found.push(record);
            }
            examined < STEP_FRAMES && found.len() < STEP_RECORDS
        });
        match read {
            Ok((offset, false)) => {
                request.position.offset = offset;
                return found;
            }
            // The segment is read (or vanished: rotated away meanwhile).
            Ok((_, true)) | Err(_) => {
                request.position.segment = index + 1;
                request.position.offset = 0;
            }
        }
    }
    request.position.done = true;
    found
}
