//! The inputs of the progress view: servicing-stream messages, Watch stream
//! events and the client's own connection notices, in one type.

use std::time::SystemTime;

use trident_proto::v1::{
    Cursor, ErrorReport, Gap, LogLevel, OverallProgress, ProgressRecord, RebootAction,
    RebootStatus, Record, RunChange, ServicingKind, ServicingResponse, StatusCode, StreamEvent,
    TridentError, record, servicing_response, stream_event,
};

/// A log line of the operation.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub cursor: Option<Cursor>,
    pub timestamp: Option<SystemTime>,
    pub level: LogLevel,
    pub target: String,
    pub message: String,
}

/// One input of the state model.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The operation started.
    Started {
        cursor: Option<Cursor>,
        timestamp: Option<SystemTime>,
        operation_id: String,
        trace_id: String,
        kind: ServicingKind,
        rpc: String,
    },
    Log(LogLine),
    Progress {
        cursor: Option<Cursor>,
        timestamp: Option<SystemTime>,
        record: ProgressRecord,
    },
    /// The operation's overall progress (derived by the daemon).
    Overall {
        cursor: Option<Cursor>,
        timestamp: Option<SystemTime>,
        record: OverallProgress,
    },
    /// A structured error report.
    Error {
        cursor: Option<Cursor>,
        report: Box<ErrorReport>,
    },
    /// The operation finished.
    Completed {
        cursor: Option<Cursor>,
        timestamp: Option<SystemTime>,
        status: StatusCode,
        reboot_status: RebootStatus,
        /// With REBOOT_STARTED: what the daemon does about it, when told.
        reboot_action: Option<RebootAction>,
        /// The servicing actually done, when the daemon said.
        servicing_kind: Option<ServicingKind>,
        error: Option<Box<TridentError>>,
    },
    /// Records the stream will not deliver.
    Gap(Gap),
    /// The daemon restarted between two records.
    RunChange(RunChange),
    /// Bus drop counters changed (only nonzero totals are shown).
    Drops {
        total: u64,
    },
    /// The servicing stream did not carry `logs` log records so far
    /// (cumulative; the daemon's buffer for the stream overflowed).
    StreamDrops {
        logs: u64,
    },
    /// The client lost the stream and is reconnecting.
    Reconnecting {
        attempt: u32,
        reason: String,
    },
    /// The client resumed after `after` (None: from the operation's start).
    Resumed {
        after: Option<Cursor>,
    },
}

/// Converts a prost timestamp.
pub fn system_time(ts: Option<&prost_types::Timestamp>) -> Option<SystemTime> {
    ts.and_then(|t| SystemTime::try_from(*t).ok())
}

impl Event {
    /// The cursor of the record this event came from, if any.
    pub fn cursor(&self) -> Option<&Cursor> {
        match self {
            Event::Started { cursor, .. }
            | Event::Progress { cursor, .. }
            | Event::Overall { cursor, .. }
            | Event::Error { cursor, .. }
            | Event::Completed { cursor, .. } => cursor.as_ref(),
            Event::Log(line) => line.cursor.as_ref(),
            _ => None,
        }
    }

    /// The events of one servicing-stream message.
    pub fn from_servicing(response: &ServicingResponse) -> Option<Event> {
        let timestamp = system_time(response.timestamp.as_ref());
        Some(match response.response.as_ref()? {
            servicing_response::Response::Started(started) => Event::Started {
                cursor: started.cursor.clone(),
                timestamp,
                operation_id: started.operation_id.clone(),
                trace_id: started.trace_id.clone(),
                kind: ServicingKind::Unspecified,
                rpc: String::new(),
            },
            servicing_response::Response::Log(log) => Event::Log(LogLine {
                cursor: None,
                timestamp,
                level: log.level(),
                target: log.target.clone(),
                message: log.message.clone(),
            }),
            servicing_response::Response::Progress(record) => Event::Progress {
                cursor: None,
                timestamp,
                record: record.clone(),
            },
            servicing_response::Response::OverallProgress(record) => Event::Overall {
                cursor: None,
                timestamp,
                record: record.clone(),
            },
            servicing_response::Response::Completed(done) => Event::Completed {
                cursor: None,
                timestamp,
                status: done.status(),
                reboot_status: done.reboot_status(),
                reboot_action: done
                    .reboot_action
                    .and_then(|a| RebootAction::try_from(a).ok()),
                servicing_kind: done
                    .servicing_kind
                    .and_then(|k| ServicingKind::try_from(k).ok()),
                error: done.error.clone().map(Box::new),
            },
            servicing_response::Response::ErrorReport(report) => Event::Error {
                cursor: None,
                report: Box::new(report.clone()),
            },
            servicing_response::Response::Drops(drops) => Event::StreamDrops { logs: drops.logs },
        })
    }

    /// The event of one Watch stream event (None for what the view ignores).
    pub fn from_stream(event: &StreamEvent) -> Option<Event> {
        match event.event.as_ref()? {
            stream_event::Event::Record(record) => Event::from_record(record),
            stream_event::Event::Gap(gap) => Some(Event::Gap(gap.clone())),
            stream_event::Event::RunChange(change) => Some(Event::RunChange(change.clone())),
            stream_event::Event::Drops(drops) => Some(Event::Drops {
                total: drops.logs + drops.spans + drops.progress + drops.errors + drops.operations,
            }),
            stream_event::Event::EndOfSnapshot(_) => None,
        }
    }

    /// The event of one bus record.
    pub fn from_record(rec: &Record) -> Option<Event> {
        let cursor = rec.cursor.clone();
        let timestamp = system_time(rec.timestamp.as_ref());
        Some(match rec.record.as_ref()? {
            record::Record::Log(log) => Event::Log(LogLine {
                cursor,
                timestamp,
                level: log.level(),
                target: log.target.clone(),
                message: log.message.clone(),
            }),
            record::Record::Progress(progress) => Event::Progress {
                cursor,
                timestamp,
                record: progress.clone(),
            },
            record::Record::Error(report) => Event::Error {
                cursor,
                report: Box::new(report.clone()),
            },
            record::Record::Operation(op) => match op.event() {
                trident_proto::v1::OperationEvent::Completed => Event::Completed {
                    cursor,
                    timestamp,
                    status: op.result(),
                    reboot_status: op.reboot_status(),
                    reboot_action: op
                        .reboot_action
                        .and_then(|a| RebootAction::try_from(a).ok()),
                    servicing_kind: op
                        .servicing_kind
                        .and_then(|k| ServicingKind::try_from(k).ok()),
                    error: op.error.clone().map(Box::new),
                },
                _ => Event::Started {
                    cursor,
                    timestamp,
                    operation_id: op.operation_id.clone(),
                    trace_id: op.trace_id.clone(),
                    kind: op.kind(),
                    rpc: op.rpc.clone(),
                },
            },
            record::Record::OverallProgress(overall) => Event::Overall {
                cursor,
                timestamp,
                record: overall.clone(),
            },
            record::Record::Span(_) => return None,
        })
    }
}
