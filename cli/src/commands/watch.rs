//! `trident watch [--wait] [--operation ID] [--progress MODE]`: attach to
//! the running operation (or wait for the next one), replay it from its
//! start, follow it, and exit with its exit code.

use tokio_stream::StreamExt;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    GetBusStatusRequest, OperationEvent, RecordKind, WatchOptions, WatchRequest, record,
    stream_event,
};

use crate::args::WatchArgs;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::live::follow::{Dedup, Followed, follow_operation};
use crate::live::progress::Progress;
use crate::servicing::exit_result;

pub async fn run(ctx: &Ctx, args: &WatchArgs) -> CliResult<Exit> {
    let operation_id = match &args.operation {
        Some(id) => id.clone(),
        None => find_operation(ctx, args.wait).await?,
    };
    let mut progress = Progress::new(args.progress, ctx.verbosity);
    let followed = follow_operation(
        ctx,
        &mut progress,
        &operation_id,
        None,
        Dedup::default(),
        false,
    )
    .await;
    progress.finish();
    match followed? {
        Followed::Completed => exit_result(progress.model.exit().unwrap_or(Exit::ServicingFailed)),
        Followed::Interrupted => Err(CliError::StreamLost(format!(
            "operation {operation_id} was interrupted: the daemon stopped before it completed"
        ))),
    }
}

/// The running operation, or (with `wait`) the next one to start.
async fn find_operation(ctx: &Ctx, wait: bool) -> CliResult<String> {
    let mut client = TelemetryServiceClient::new(ctx.channel().await?);
    // Head first, then the list: an operation starting in between is
    // caught by the Watch from that head below.
    let head = client
        .get_bus_status(GetBusStatusRequest {})
        .await
        .map_err(|s| CliError::rpc("GetBusStatus", s))?
        .into_inner();
    let operations = crate::client::list_operations(&mut client).await?;
    if let Some(op) = operations.iter().rev().find(|op| op.running) {
        return Ok(op.operation_id.clone());
    }
    if !wait {
        return Err(CliError::Usage(
            "no servicing operation is running; pass --wait to wait for the next one, or --operation ID to replay a finished one".into(),
        ));
    }
    let after = trident_proto::v1::Cursor {
        run_id: head.run_id,
        sequence: head.head_sequence,
    };
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                after: Some(after),
                ..WatchOptions::default()
            }),
            kinds: vec![RecordKind::Operation as i32],
        })
        .await
        .map_err(|s| CliError::rpc("Watch", s))?
        .into_inner();
    eprintln!("trident: waiting for the next servicing operation…");
    while let Some(response) = stream.next().await {
        let response = response.map_err(|s| CliError::rpc("Watch", s))?;
        for event in response.events {
            if let Some(stream_event::Event::Record(rec)) = event.event
                && let Some(record::Record::Operation(op)) = rec.record
                && op.event() == OperationEvent::Started
            {
                return Ok(op.operation_id);
            }
        }
    }
    Err(CliError::StreamLost(
        "the daemon closed the stream while waiting for an operation".into(),
    ))
}
