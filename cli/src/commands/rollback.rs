//! `trident rollback [--check] [--runtime|--ab]`: the rollback itself on
//! upstream's stable `trident.v1.RollbackService`, `--check` on
//! `trident.v1preview.RollbackService` (a preview-only query upstream).

use trident_proto::v1::rollback_service_client::RollbackServiceClient;
use trident_proto::v1::{
    ManualRollbackKind, RollbackFinalizeRequest, RollbackRequest, RollbackStageRequest,
};
use trident_proto::v1preview::rollback_service_client::RollbackServiceClient as PreviewClient;
use trident_proto::v1preview::{CheckRollbackKind, CheckRollbackRequest};

use crate::args::{OutputFormat, RollbackArgs};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::servicing::{self, Steps, reboot};

pub async fn run(ctx: &Ctx, args: &RollbackArgs) -> CliResult<Exit> {
    let kind = if args.runtime {
        ManualRollbackKind::RuntimeRollbackRequested
    } else if args.ab {
        ManualRollbackKind::AbRollbackRequested
    } else {
        ManualRollbackKind::AnyRollbackRequested
    };
    if args.check {
        return check(ctx, kind).await;
    }
    let steps = Steps::from_allowed(&args.allowed_operations);
    if steps == Steps::Nothing {
        eprintln!("trident: no operation allowed (--allowed-operations is empty); nothing to do");
        return Ok(Exit::Success);
    }
    let finalize = RollbackFinalizeRequest { reboot: reboot() };
    servicing::run(
        ctx,
        &args.servicing,
        "rollback",
        false,
        |channel, trace| async move {
            let mut client = RollbackServiceClient::new(channel);
            match steps {
                Steps::StageOnly => {
                    client
                        .rollback_stage(trace.request(RollbackStageRequest { kind: kind as i32 }))
                        .await
                }
                Steps::FinalizeOnly => client.rollback_finalize(trace.request(finalize)).await,
                _ => {
                    client
                        .rollback(trace.request(RollbackRequest {
                            kind: kind as i32,
                            finalize: Some(finalize),
                        }))
                        .await
                }
            }
        },
    )
    .await
}

/// --check: print which rollback would run.
async fn check(ctx: &Ctx, kind: ManualRollbackKind) -> CliResult<Exit> {
    let response = PreviewClient::new(ctx.channel().await?)
        .check_rollback(CheckRollbackRequest { kind: kind as i32 })
        .await
        .map_err(|s| CliError::rpc("CheckRollback", s))?
        .into_inner();
    let answer = match response.kind() {
        CheckRollbackKind::NoRollbackAvailable => "none",
        CheckRollbackKind::AbRollbackExpected => "ab",
        CheckRollbackKind::RuntimeRollbackExpected => "runtime",
        CheckRollbackKind::Unspecified => "unspecified",
    };
    let text = match ctx.format(None, OutputFormat::Human) {
        OutputFormat::Human => format!("{answer}\n"),
        other => crate::output::encode(&serde_json::json!({ "rollback": answer }), other)?,
    };
    crate::output::emit(&text, None)?;
    Ok(Exit::Success)
}
