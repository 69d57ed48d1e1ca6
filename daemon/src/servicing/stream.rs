//! The servicing stream of one operation: Started, then the operation's
//! Log and Progress records from the bus, then exactly one Completed.
//!
//! A forwarder task feeds a bounded channel. When the client goes away the
//! channel closes and the forwarder stops; the operation itself runs on in
//! its own task (its records stay on the bus and in the journal).

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;
use trident_proto::v1::{
    Completed, Log, LogRecord, OperationEvent, RebootStatus, ServicingResponse, Started,
    StatusCode, StreamEvent, TridentError, TridentErrorKind, record, servicing_response,
    stream_event,
};
use trident_telemetry::{Bus, Subscription};

/// The response stream of every servicing RPC.
pub type ServicingStream = Pin<Box<dyn Stream<Item = Result<ServicingResponse, Status>> + Send>>;

/// Responses buffered for a slow client (the bus subscriber behind it
/// handles lag with gaps, so the operation never waits on this).
const CHANNEL_CAPACITY: usize = 256;
/// How long to keep draining the bus for the operation's completed record
/// after the outcome is known (it is published right after).
const DRAIN_AFTER_OUTCOME: Duration = Duration::from_secs(3);

fn response(r: servicing_response::Response) -> ServicingResponse {
    ServicingResponse {
        timestamp: Some(trident_host::time_util::now_proto()),
        response: Some(r),
    }
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

/// What to send for one bus event; `Err(())` marks the operation's end.
fn translate(event: StreamEvent, operation_id: &str) -> Result<Option<ServicingResponse>, ()> {
    let Some(stream_event::Event::Record(rec)) = event.event else {
        return Ok(None);
    };
    // Keep the record's own time (when it happened, not when it was sent).
    let timestamp = rec
        .timestamp
        .or_else(|| Some(trident_host::time_util::now_proto()));
    let stamped = |r: servicing_response::Response| ServicingResponse {
        timestamp,
        response: Some(r),
    };
    match rec.record {
        Some(record::Record::Log(log)) => Ok(Some(stamped(servicing_response::Response::Log(
            log_of(log),
        )))),
        Some(record::Record::Progress(p)) => {
            Ok(Some(stamped(servicing_response::Response::Progress(p))))
        }
        Some(record::Record::Operation(op))
            if op.operation_id == operation_id && op.event == OperationEvent::Completed as i32 =>
        {
            Err(())
        }
        _ => Ok(None),
    }
}

fn lost_outcome() -> Completed {
    Completed {
        status: StatusCode::Failure as i32,
        error: Some(TridentError {
            kind: TridentErrorKind::InternalError as i32,
            subkind: "task-failed".to_owned(),
            message: "the servicing task ended without reporting its outcome".to_owned(),
            error_message: "servicing task failed".to_owned(),
            ..TridentError::default()
        }),
        reboot_status: RebootStatus::Unspecified as i32,
        image_hash: None,
        servicing_kind: None,
    }
}

/// Builds the stream. `subscription` selects the operation's records on
/// `bus` (None without a bus layer: only Started and Completed are sent);
/// `outcome` delivers the Completed message.
pub fn forward(
    started: Started,
    bus: Option<Bus>,
    subscription: Subscription,
    outcome: oneshot::Receiver<Completed>,
) -> ServicingStream {
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let operation_id = started.operation_id.clone();
    tokio::spawn(async move {
        if tx
            .send(Ok(response(servicing_response::Response::Started(started))))
            .await
            .is_err()
        {
            return;
        }
        let mut outcome = outcome;
        let mut completed: Option<Completed> = None;
        if let Some(bus) = bus.as_ref() {
            let mut events = Box::pin(bus.subscribe(subscription));
            let mut deadline: Option<tokio::time::Instant> = None;
            loop {
                tokio::select! {
                    event = events.next() => {
                        let Some(event) = event else { break };
                        match translate(event, &operation_id) {
                            Ok(Some(resp)) => {
                                if tx.send(Ok(resp)).await.is_err() {
                                    return;
                                }
                            }
                            Ok(None) => {}
                            Err(()) => break,
                        }
                    }
                    result = &mut outcome, if completed.is_none() => {
                        completed = Some(result.unwrap_or_else(|_| lost_outcome()));
                        deadline = Some(tokio::time::Instant::now() + DRAIN_AFTER_OUTCOME);
                    }
                    () = sleep_until(deadline) => break,
                }
            }
        }
        let completed = match completed {
            Some(c) => c,
            None => outcome.await.unwrap_or_else(|_| lost_outcome()),
        };
        let _ = tx
            .send(Ok(response(servicing_response::Response::Completed(
                completed,
            ))))
            .await;
    });
    Box::pin(ReceiverStream::new(rx))
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
