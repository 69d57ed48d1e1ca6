//! Pure bookkeeping from bus records to metric observations (no OTel types,
//! so it is tested directly).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use trident_proto::v1;
use v1::record::Record as Body;

use super::names::{READ_PHASE_PREFIXES, WRITE_PHASE_PREFIXES};

/// What one record means for the instruments.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    Record {
        kind: &'static str,
    },
    OperationStarted {
        kind: String,
    },
    OperationCompleted {
        kind: String,
        result: String,
        seconds: Option<f64>,
    },
    PhaseFinished {
        phase: String,
        state: &'static str,
        seconds: f64,
    },
    BytesWritten(u64),
    ImageBytesRead(u64),
    Error {
        category: String,
    },
    /// The operation's overall progress as the bus derived it.
    Overall {
        kind: String,
        progress: v1::OverallProgress,
    },
}

/// Operations and byte phases seen so far (forgotten when they end).
#[derive(Debug, Default)]
pub struct OperationTracker {
    started: HashMap<String, SystemTime>,
    /// Servicing kind of each running operation (labels its overall progress).
    kinds: HashMap<String, String>,
    /// Last `current` of each byte phase, by (operation, phase).
    bytes_seen: HashMap<(String, String), u64>,
}

impl OperationTracker {
    pub fn observe(&mut self, record: &v1::Record) -> Vec<Observation> {
        let Some(body) = &record.record else {
            return Vec::new();
        };
        let at = record.timestamp.as_ref().and_then(to_system_time);
        let mut out = vec![Observation::Record {
            kind: record_kind(body),
        }];
        match body {
            Body::Operation(op) => self.operation(op, at, &mut out),
            Body::Progress(progress) => self.progress(progress, &mut out),
            Body::Error(error) => out.push(Observation::Error {
                category: label(
                    v1::TridentErrorKind::try_from(error.category)
                        .map(|k| k.as_str_name())
                        .unwrap_or("TRIDENT_ERROR_KIND_UNSPECIFIED"),
                    "",
                ),
            }),
            Body::OverallProgress(overall) => out.push(Observation::Overall {
                kind: self
                    .kinds
                    .get(&overall.operation_id)
                    .cloned()
                    .unwrap_or_else(|| servicing_kind(0)),
                progress: overall.clone(),
            }),
            Body::Log(_) | Body::Span(_) => {}
        }
        out
    }

    fn operation(
        &mut self,
        op: &v1::OperationRecord,
        at: Option<SystemTime>,
        out: &mut Vec<Observation>,
    ) {
        let kind = servicing_kind(op.kind);
        match v1::OperationEvent::try_from(op.event) {
            Ok(v1::OperationEvent::Started) => {
                if let Some(at) = at {
                    self.started.insert(op.operation_id.clone(), at);
                }
                self.kinds.insert(op.operation_id.clone(), kind.clone());
                out.push(Observation::OperationStarted { kind });
            }
            Ok(v1::OperationEvent::Completed) => {
                let seconds = self
                    .started
                    .remove(&op.operation_id)
                    .zip(at)
                    .and_then(|(start, end)| end.duration_since(start).ok())
                    .map(|d| d.as_secs_f64());
                self.bytes_seen.retain(|(id, _), _| id != &op.operation_id);
                self.kinds.remove(&op.operation_id);
                let result = label(
                    v1::StatusCode::try_from(op.result)
                        .map(|c| c.as_str_name())
                        .unwrap_or("STATUS_CODE_UNSPECIFIED"),
                    "STATUS_CODE_",
                );
                out.push(Observation::OperationCompleted {
                    kind,
                    result,
                    seconds,
                });
            }
            _ => {}
        }
    }

    fn progress(&mut self, progress: &v1::ProgressRecord, out: &mut Vec<Observation>) {
        let state = v1::PhaseState::try_from(progress.state).unwrap_or(v1::PhaseState::Unspecified);
        if progress.unit == v1::ProgressUnit::Bytes as i32 {
            let key = (progress.operation_id.clone(), progress.phase_id.clone());
            let previous = self.bytes_seen.get(&key).copied().unwrap_or(0);
            // A phase that restarts from a lower value counts from there.
            let delta = progress.current.saturating_sub(previous);
            self.bytes_seen.insert(key, progress.current.max(previous));
            if delta > 0 {
                let first = progress.phase_id.split('/').next().unwrap_or_default();
                if WRITE_PHASE_PREFIXES.contains(&first) {
                    out.push(Observation::BytesWritten(delta));
                }
                // A write streamed straight from the image is also a read,
                // unless its parent phase already counts those bytes
                // (StreamDisk's `download`); install's writes sit under an
                // item phase (the region walk) or at the top.
                let parent_counts_bytes = !progress.parent_phase_id.is_empty()
                    && self.bytes_seen.contains_key(&(
                        progress.operation_id.clone(),
                        progress.parent_phase_id.clone(),
                    ));
                let streamed_write = !parent_counts_bytes && WRITE_PHASE_PREFIXES.contains(&first);
                if READ_PHASE_PREFIXES.contains(&first) || streamed_write {
                    out.push(Observation::ImageBytesRead(delta));
                }
            }
        }
        let finished = match state {
            v1::PhaseState::Done => "done",
            v1::PhaseState::Failed => "failed",
            _ => return,
        };
        let seconds = progress
            .started
            .as_ref()
            .and_then(to_system_time)
            .zip(progress.updated.as_ref().and_then(to_system_time))
            .and_then(|(start, end)| end.duration_since(start).ok())
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        out.push(Observation::PhaseFinished {
            phase: progress.phase_id.clone(),
            state: finished,
            seconds,
        });
    }
}

fn record_kind(body: &Body) -> &'static str {
    match body {
        Body::Log(_) => "log",
        Body::Span(_) => "span",
        Body::Progress(_) | Body::OverallProgress(_) => "progress",
        Body::Error(_) => "error",
        Body::Operation(_) => "operation",
    }
}

fn servicing_kind(value: i32) -> String {
    label(
        v1::ServicingKind::try_from(value)
            .map(|k| k.as_str_name())
            .unwrap_or("SERVICING_KIND_UNSPECIFIED"),
        "SERVICING_KIND_",
    )
}

/// `SERVICING_KIND_CLEAN_INSTALL` -> `clean_install`.
fn label(name: &str, prefix: &str) -> String {
    name.strip_prefix(prefix)
        .unwrap_or(name)
        .to_ascii_lowercase()
}

fn to_system_time(ts: &prost_types::Timestamp) -> Option<SystemTime> {
    let secs = u64::try_from(ts.seconds).ok()?;
    let nanos = u32::try_from(ts.nanos).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp { seconds, nanos: 0 })
    }

    fn record(seconds: i64, body: Body) -> v1::Record {
        v1::Record {
            cursor: None,
            boot_id: String::new(),
            timestamp: at(seconds),
            record: Some(body),
        }
    }

    fn operation(event: v1::OperationEvent, result: v1::StatusCode) -> Body {
        Body::Operation(v1::OperationRecord {
            event: event as i32,
            operation_id: "op-1".into(),
            kind: v1::ServicingKind::CleanInstall as i32,
            rpc: "Install".into(),
            result: result as i32,
            ..Default::default()
        })
    }

    fn progress(phase: &str, current: u64, state: v1::PhaseState) -> Body {
        Body::Progress(v1::ProgressRecord {
            operation_id: "op-1".into(),
            phase_id: phase.into(),
            unit: v1::ProgressUnit::Bytes as i32,
            current,
            state: state as i32,
            started: at(100),
            updated: at(103),
            ..Default::default()
        })
    }

    #[test]
    fn an_operation_yields_active_count_result_and_duration() {
        let mut tracker = OperationTracker::default();
        let started = tracker.observe(&record(
            100,
            operation(v1::OperationEvent::Started, v1::StatusCode::Unspecified),
        ));
        assert!(started.contains(&Observation::OperationStarted {
            kind: "clean_install".into()
        }));
        let done = tracker.observe(&record(
            142,
            operation(v1::OperationEvent::Completed, v1::StatusCode::Success),
        ));
        assert!(done.contains(&Observation::OperationCompleted {
            kind: "clean_install".into(),
            result: "success".into(),
            seconds: Some(42.0),
        }));
        assert!(done.contains(&Observation::Record { kind: "operation" }));
    }

    #[test]
    fn overall_progress_is_labelled_with_its_operations_kind() {
        let mut tracker = OperationTracker::default();
        tracker.observe(&record(
            100,
            operation(v1::OperationEvent::Started, v1::StatusCode::Unspecified),
        ));
        let overall = v1::OverallProgress {
            operation_id: "op-1".into(),
            bytes_done: 5,
            steps_planned: 7,
            ..Default::default()
        };
        let seen = tracker.observe(&record(101, Body::OverallProgress(overall.clone())));
        assert!(seen.contains(&Observation::Overall {
            kind: "clean_install".into(),
            progress: overall,
        }));
        assert!(seen.contains(&Observation::Record { kind: "progress" }));
    }

    #[test]
    fn byte_phases_count_deltas_and_finished_phases_their_time() {
        let mut tracker = OperationTracker::default();
        let first = tracker.observe(&record(
            101,
            progress("write/root-a", 1000, v1::PhaseState::Running),
        ));
        assert!(first.contains(&Observation::BytesWritten(1000)));
        let second = tracker.observe(&record(
            102,
            progress("write/root-a", 1500, v1::PhaseState::Done),
        ));
        assert!(second.contains(&Observation::BytesWritten(500)));
        assert!(second.contains(&Observation::PhaseFinished {
            phase: "write/root-a".into(),
            state: "done",
            seconds: 3.0,
        }));
        let read = tracker.observe(&record(
            102,
            progress("read/image", 700, v1::PhaseState::Running),
        ));
        assert!(read.contains(&Observation::ImageBytesRead(700)));
        assert!(
            !read
                .iter()
                .any(|o| matches!(o, Observation::BytesWritten(_)))
        );
    }

    #[test]
    fn error_reports_count_by_category() {
        let mut tracker = OperationTracker::default();
        let out = tracker.observe(&record(
            1,
            Body::Error(v1::ErrorReport {
                category: v1::TridentErrorKind::InvalidInputError as i32,
                ..Default::default()
            }),
        ));
        assert!(out.contains(&Observation::Error {
            category: "invalid_input_error".into()
        }));
    }
}
