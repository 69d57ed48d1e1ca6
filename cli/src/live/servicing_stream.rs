//! Following an operation through its servicing stream, and through Watch
//! from `Started.cursor` when that stream breaks before the completion.

use tonic::Streaming;
use trident_proto::v1::{Cursor, ServicingResponse};

use super::follow::{Dedup, Followed, follow_operation};
use super::progress::Progress;
use super::read::{StreamEnd, read_stream};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult};
use crate::render::event::Event;

/// Reads the servicing stream of the command `what` (e.g. "rebuild-raid")
/// to its Completed; on a break, resumes through Watch.
pub async fn follow_servicing_stream(
    ctx: &Ctx,
    progress: &mut Progress,
    mut stream: Streaming<ServicingResponse>,
    what: &str,
) -> CliResult<()> {
    let mut started: Option<(String, Option<Cursor>)> = None;
    let mut dedup = Dedup::default();
    let end = read_stream(progress, &mut stream, |response, model| {
        let Some(mut event) = Event::from_servicing(response) else {
            return Vec::new();
        };
        // The full error report (the CLI opts in to it in `TraceParent::request`):
        // it fills the failure block, it is not a line of its own.
        if matches!(event, Event::Error { .. }) {
            model.apply(&event);
            return Vec::new();
        }
        if let Event::Started {
            operation_id,
            cursor,
            rpc,
            ..
        } = &mut event
        {
            started = Some((operation_id.clone(), cursor.clone()));
            // The servicing stream does not name the RPC; the command does.
            if rpc.is_empty() {
                *rpc = title_case(what);
            }
        }
        dedup.note(&event);
        vec![event]
    })
    .await;
    let reason = match end {
        StreamEnd::Completed => return Ok(()),
        StreamEnd::Ended => "the servicing stream ended before the operation completed".to_string(),
        // Refused before it started (busy, invalid): not a break.
        StreamEnd::Broken(status) if started.is_none() => {
            return Err(CliError::rpc("servicing", status));
        }
        StreamEnd::Broken(status) => crate::exit::describe_status(&status),
    };
    resume_through_watch(ctx, progress, started, dedup, reason).await
}

/// Continues a broken servicing stream with Watch from strictly after the
/// operation's first record, without showing anything twice.
async fn resume_through_watch(
    ctx: &Ctx,
    progress: &mut Progress,
    started: Option<(String, Option<Cursor>)>,
    dedup: Dedup,
    reason: String,
) -> CliResult<()> {
    let Some((operation_id, cursor)) = started.filter(|(id, _)| !id.is_empty()) else {
        return Err(CliError::StreamLost(format!(
            "{reason}, and the daemon gave no operation id to resume with"
        )));
    };
    progress.feed(&Event::Reconnecting {
        attempt: 0,
        reason: reason.clone(),
    });
    match follow_operation(ctx, progress, &operation_id, cursor, dedup, true).await? {
        Followed::Completed => Ok(()),
        Followed::Interrupted => Err(CliError::StreamLost(format!(
            "operation {operation_id} was interrupted: the daemon stopped before it completed"
        ))),
    }
}

/// "rebuild-raid" -> "RebuildRaid", like the bus's RPC names.
fn title_case(command: &str) -> String {
    command
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::title_case;

    #[test]
    fn command_names_become_rpc_names() {
        assert_eq!(title_case("rebuild-raid"), "RebuildRaid");
        assert_eq!(title_case("install"), "Install");
    }
}
