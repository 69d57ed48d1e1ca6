//! The servicing stream of one operation, built from the bus alone:
//! Started, then the operation's Log records, then exactly one Completed
//! made from the operation's completed record: exactly what upstream
//! Trident sends. Clients that opted in (see `super::additions`) also get
//! Progress records, the full error report, our 1000+ fields of Started
//! and the error, and what the stream did not carry when the bus lapped it
//! (`drops`: the subscription's drop counters after each gap).
//!
//! One path and one completion signal: the stream is the bus subscription
//! mapped record by record (each decoded once and moved into its response),
//! with no task, channel or timer in between. It ends right after the
//! completed record, which the runner publishes last (and the bus never
//! loses: a lagging subscriber gets an operation's final state re-delivered
//! after a gap). When the client goes away the subscription is dropped; the
//! operation runs on in its own task.

use std::pin::Pin;

use futures::{Stream, StreamExt};
use tonic::Status;
use trident_proto::v1::{
    Completed, Log, LogRecord, OperationEvent, OperationRecord, RebootStatus, RecordKind,
    ServicingResponse, Started, StatusCode, StreamDrops, StreamEvent, WatchOptions, record,
    servicing_response, stream_event,
};
use trident_telemetry::{Bus, Subscription};

use super::additions::Additions;

/// The response stream of every servicing RPC.
pub type ServicingStream = Pin<Box<dyn Stream<Item = Result<ServicingResponse, Status>> + Send>>;

/// Record kinds a stream needs from the bus for a client's additions.
fn kinds(additions: Additions) -> Vec<RecordKind> {
    let mut kinds = vec![RecordKind::Log, RecordKind::Operation];
    if additions.progress {
        kinds.push(RecordKind::Progress);
    }
    if additions.error_report {
        kinds.push(RecordKind::Error);
    }
    kinds
}

/// Builds the stream of the operation `started` names.
pub fn servicing_stream(bus: &Bus, started: Started, additions: Additions) -> ServicingStream {
    let operation_id = started.operation_id.clone();
    let events = bus.subscribe(Subscription {
        options: WatchOptions {
            operation_id: operation_id.clone(),
            ..WatchOptions::default()
        },
        kinds: kinds(additions),
    });
    let first = ServicingResponse {
        timestamp: Some(trident_host::time_util::now_proto()),
        response: Some(servicing_response::Response::Started(
            additions.started(started),
        )),
    };
    let rest = futures::stream::unfold(Some(events), move |events| {
        let operation_id = operation_id.clone();
        async move {
            let mut events = events?;
            loop {
                let event = events.next().await?;
                let Some((message, last)) = translate(event, &operation_id, additions) else {
                    continue;
                };
                // After Completed the stream ends at once (state `None`).
                let next = (!last).then_some(events);
                return Some((Ok(message), next));
            }
        }
    });
    Box::pin(futures::stream::once(async move { Ok(first) }).chain(rest))
}

/// The response for one bus event, and whether it is the last (Completed).
/// Gaps are not part of a servicing stream; the drop counters that follow
/// each gap are, for clients that opted in to `drops`.
/// Only the kinds the client's additions asked for reach here (see [`kinds`]).
fn translate(
    event: StreamEvent,
    operation_id: &str,
    additions: Additions,
) -> Option<(ServicingResponse, bool)> {
    let rec = match event.event? {
        stream_event::Event::Record(rec) => rec,
        stream_event::Event::Drops(drops) if additions.drops => {
            let response = ServicingResponse {
                timestamp: Some(trident_host::time_util::now_proto()),
                response: Some(servicing_response::Response::Drops(StreamDrops {
                    logs: drops.logs,
                    other: drops.errors + drops.operations,
                })),
            };
            return Some((response, false));
        }
        _ => return None,
    };
    // Keep the record's own time (when it happened, not when it was sent).
    let timestamp = rec
        .timestamp
        .or_else(|| Some(trident_host::time_util::now_proto()));
    let (message, last) = match rec.record? {
        record::Record::Log(log) => (servicing_response::Response::Log(log_of(log)), false),
        record::Record::Progress(p) => (servicing_response::Response::Progress(p), false),
        record::Record::OverallProgress(o) => {
            (servicing_response::Response::OverallProgress(o), false)
        }
        record::Record::Error(report) => (servicing_response::Response::ErrorReport(report), false),
        record::Record::Operation(op)
            if op.operation_id == operation_id && op.event == OperationEvent::Completed as i32 =>
        {
            (
                servicing_response::Response::Completed(completed_of(op, additions)),
                true,
            )
        }
        _ => return None,
    };
    let response = ServicingResponse {
        timestamp,
        response: Some(message),
    };
    Some((response, last))
}

fn log_of(record: LogRecord) -> Log {
    Log {
        level: record.level,
        message: record.message,
        module: record.module,
        target: record.target,
        location: record.location,
    }
}

/// `Completed` from the operation's completed record (which carries all it
/// says). A failed operation's `Completed` is upstream's: the error,
/// `REBOOT_NOT_REQUIRED`, no image hash and no servicing kind, whatever the
/// record says (a failure leaves nothing to reboot into).
fn completed_of(op: OperationRecord, additions: Additions) -> Completed {
    let error = op.error.map(|error| additions.error(error));
    if op.result == StatusCode::Failure as i32 {
        return Completed {
            status: op.result,
            error,
            reboot_status: RebootStatus::RebootNotRequired as i32,
            image_hash: None,
            servicing_kind: None,
            reboot_action: None,
        };
    }
    Completed {
        status: op.result,
        error,
        reboot_status: op.reboot_status,
        image_hash: op.image_hash,
        servicing_kind: op.servicing_kind,
        reboot_action: op.reboot_action.filter(|_| additions.reboot_action),
    }
}
