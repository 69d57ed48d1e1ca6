//! The one loop that reads a stream of the daemon (a servicing stream or a
//! TelemetryService Watch) into the live view, redrawing while it is quiet.

use std::time::Duration;

use tokio_stream::StreamExt;
use tonic::Streaming;

use super::progress::Progress;
use crate::render::event::Event;
use crate::render::model::Model;

/// How often the tty view is redrawn while the stream is quiet.
const TICK: Duration = Duration::from_millis(200);

/// How reading a stream ended.
#[derive(Debug)]
pub enum StreamEnd {
    /// The operation's completion was shown.
    Completed,
    /// The stream ended cleanly before the completion.
    Ended,
    /// The stream broke (or was refused) with this status.
    Broken(tonic::Status),
}

/// Reads `stream` into `progress` until the operation's completion, the
/// end of the stream or an error. `events_of` turns one message into the
/// events to show, in order, doing the caller's bookkeeping (cursor,
/// de-duplication) on the way; it gets the view's model for what updates
/// the view without being shown as a line of its own. Nothing after a
/// completion is shown.
pub async fn read_stream<M>(
    progress: &mut Progress,
    stream: &mut Streaming<M>,
    mut events_of: impl FnMut(&M, &mut Model) -> Vec<Event>,
) -> StreamEnd {
    let mut ticker = tokio::time::interval(TICK);
    loop {
        tokio::select! {
            message = stream.next() => match message {
                None => return StreamEnd::Ended,
                Some(Err(status)) => return StreamEnd::Broken(status),
                Some(Ok(message)) => {
                    for event in events_of(&message, &mut progress.model) {
                        progress.feed(&event);
                        if matches!(event, Event::Completed { .. }) {
                            return StreamEnd::Completed;
                        }
                    }
                }
            },
            _ = ticker.tick() => progress.tick(),
        }
    }
}
