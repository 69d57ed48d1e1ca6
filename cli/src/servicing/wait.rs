//! A servicing command that meets a running operation: the daemon refuses
//! a second servicing request while one runs (upstream's contract, kept),
//! so the CLI waits for the running one to end, showing which one it is
//! and its progress, then asks again. Bounded by `--wait`: when it runs out
//! the command fails (exit 2) naming the operation still running.

use std::time::Duration;

use tokio::time::Instant;
use trident_proto::v1::OperationSummary;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;

use crate::args::{ProgressMode, ServicingArgs};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult};
use crate::live::follow::{Dedup, follow_operation};
use crate::live::progress::Progress;
use crate::render::format;

/// The daemon's refusal of a second servicing request (UNAVAILABLE,
/// "busy: servicing operation ... is running").
pub fn is_busy(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::Unavailable && status.message().starts_with("busy:")
}

/// The running operation, as the daemon lists it.
async fn running_operation(ctx: &Ctx) -> CliResult<Option<OperationSummary>> {
    let mut client = TelemetryServiceClient::new(ctx.channel().await?);
    let operations = crate::client::list_operations(&mut client).await?;
    Ok(operations.into_iter().rev().find(|op| op.running))
}

/// "operation 1a2b… (Commit)".
fn name(op: &OperationSummary) -> String {
    format!("operation {} ({})", op.operation_id, op.rpc)
}

/// Waits (until `deadline`) for the operation that made the daemon refuse
/// `what` to end, following its progress on stderr. Ok when it ended (ask
/// again); the exit-2 error naming it when the wait runs out.
pub async fn wait_for_running(
    ctx: &Ctx,
    args: &ServicingArgs,
    what: &str,
    refusal: tonic::Status,
    deadline: Instant,
) -> CliResult<()> {
    let Some(op) = running_operation(ctx).await? else {
        // Ended between the refusal and the question: ask again at once.
        return Ok(());
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ran_out(what, &op, args.wait, refusal));
    }
    eprintln!(
        "trident: {what}: the daemon is running {}, started {}; waiting up to {} for it to end",
        name(&op),
        op.started
            .as_ref()
            .and_then(|t| crate::render::event::system_time(Some(t)))
            .map(|t| humantime::format_rfc3339_seconds(t).to_string())
            .unwrap_or_else(|| "earlier".into()),
        format::duration(left),
    );
    // Its progress on stderr: a JSON view would mix another operation's
    // lines into this command's stdout.
    let mode = match args.progress {
        ProgressMode::Json => ProgressMode::Plain,
        other => other,
    };
    let mut progress = Progress::new(mode, ctx.verbosity);
    let followed = tokio::time::timeout(
        left,
        follow_operation(
            ctx,
            &mut progress,
            &op.operation_id,
            None,
            Dedup::default(),
            false,
        ),
    )
    .await;
    progress.finish();
    match followed {
        // Ended (completed, or gone with a daemon restart): ask again.
        Ok(_) => {
            eprintln!("trident: {what}: {} ended; starting", name(&op));
            Ok(())
        }
        Err(_) => Err(ran_out(what, &op, args.wait, refusal)),
    }
}

fn ran_out(
    what: &str,
    op: &OperationSummary,
    waited: Duration,
    refusal: tonic::Status,
) -> CliError {
    CliError::Busy(format!(
        "{what} not started: the daemon is still running {} after waiting {} (--wait); {}",
        name(op),
        humantime::format_duration(waited),
        refusal.message()
    ))
}
