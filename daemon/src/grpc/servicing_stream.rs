//! The servicing stream of one operation, built from the bus alone:
//! Started, then the operation's Log and Progress records (and, for clients
//! that opted in, its full error report), then exactly one Completed made
//! from the operation's completed record.
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
use tonic::metadata::MetadataMap;
use trident_proto::v1::{
    Completed, Log, LogRecord, OperationEvent, OperationRecord, RecordKind, ServicingResponse,
    Started, StreamEvent, WatchOptions, record, servicing_response, stream_event,
};
use trident_proto::{ADDITION_ERROR_REPORT, ADDITIONS_HEADER};
use trident_telemetry::{Bus, Subscription};

/// The response stream of every servicing RPC.
pub type ServicingStream = Pin<Box<dyn Stream<Item = Result<ServicingResponse, Status>> + Send>>;

/// Our additions a client opted in to (header [`ADDITIONS_HEADER`]).
/// Without the header a stream carries only what it always did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Additions {
    /// `ServicingResponse.error_report`: the operation's full error report.
    pub error_report: bool,
}

impl Additions {
    /// Reads every `trident-additions` value (comma lists); names this
    /// daemon does not know are ignored, so newer clients keep working.
    pub fn from_metadata(metadata: &MetadataMap) -> Additions {
        let mut additions = Additions::default();
        let names = metadata
            .get_all(ADDITIONS_HEADER)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim);
        for name in names {
            if name.eq_ignore_ascii_case(ADDITION_ERROR_REPORT) {
                additions.error_report = true;
            }
        }
        additions
    }

    /// Record kinds the stream needs from the bus.
    fn kinds(self) -> Vec<RecordKind> {
        let mut kinds = vec![RecordKind::Log, RecordKind::Progress, RecordKind::Operation];
        if self.error_report {
            kinds.push(RecordKind::Error);
        }
        kinds
    }
}

/// Builds the stream of the operation `started` names.
pub fn servicing_stream(bus: &Bus, started: Started, additions: Additions) -> ServicingStream {
    let operation_id = started.operation_id.clone();
    let events = bus.subscribe(Subscription {
        options: WatchOptions {
            operation_id: operation_id.clone(),
            ..WatchOptions::default()
        },
        kinds: additions.kinds(),
    });
    let first = ServicingResponse {
        timestamp: Some(trident_host::time_util::now_proto()),
        response: Some(servicing_response::Response::Started(started)),
    };
    let rest = futures::stream::unfold(Some(events), move |events| {
        let operation_id = operation_id.clone();
        async move {
            let mut events = events?;
            loop {
                let Some((message, last)) = translate(events.next().await?, &operation_id) else {
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
/// Gaps and drop counters are not part of a servicing stream.
fn translate(event: StreamEvent, operation_id: &str) -> Option<(ServicingResponse, bool)> {
    let Some(stream_event::Event::Record(rec)) = event.event else {
        return None;
    };
    // Keep the record's own time (when it happened, not when it was sent).
    let timestamp = rec
        .timestamp
        .or_else(|| Some(trident_host::time_util::now_proto()));
    let (message, last) = match rec.record? {
        record::Record::Log(log) => (servicing_response::Response::Log(log_of(log)), false),
        record::Record::Progress(p) => (servicing_response::Response::Progress(p), false),
        record::Record::Error(report) => (servicing_response::Response::ErrorReport(report), false),
        record::Record::Operation(op)
            if op.operation_id == operation_id && op.event == OperationEvent::Completed as i32 =>
        {
            (
                servicing_response::Response::Completed(completed_of(op)),
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

/// `Completed` from the operation's completed record (which carries all it says).
fn completed_of(op: OperationRecord) -> Completed {
    Completed {
        status: op.result,
        error: op.error,
        reboot_status: op.reboot_status,
        image_hash: op.image_hash,
        servicing_kind: op.servicing_kind,
    }
}
