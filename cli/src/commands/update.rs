//! `trident update [CONFIG]`: UpdateService (v1).

use trident_proto::v1::update_service_client::UpdateServiceClient;
use trident_proto::v1::{
    FinalizeUpdateRequest, HostConfiguration, StageUpdateRequest, UpdateRequest,
};

use super::Ctx;
use super::servicing::{self, Steps, fail, load_config, reboot};
use crate::args::ServicingConfigArgs;
use crate::exit::{CliResult, Exit};

pub async fn run(ctx: &Ctx, args: &ServicingConfigArgs) -> CliResult<Exit> {
    let steps = Steps::from_allowed(&args.allowed_operations);
    if steps == Steps::Nothing {
        eprintln!("trident: no operation allowed (--allowed-operations is empty); nothing to do");
        return Ok(Exit::Success);
    }
    let stage = if steps == Steps::FinalizeOnly {
        None
    } else {
        let config = load_config(&args.config).map_err(|e| fail(&args.servicing, e))?;
        Some(StageUpdateRequest {
            config: Some(HostConfiguration { config }),
        })
    };
    let finalize = FinalizeUpdateRequest { reboot: reboot() };
    servicing::run(
        ctx,
        &args.servicing,
        "update",
        true,
        |channel, trace| async move {
            let mut client = UpdateServiceClient::new(channel);
            match (steps, stage) {
                (Steps::StageOnly, Some(stage)) => client.update_stage(trace.request(stage)).await,
                (Steps::FinalizeOnly, _) => client.update_finalize(trace.request(finalize)).await,
                (_, stage) => {
                    client
                        .update(trace.request(UpdateRequest {
                            stage,
                            finalize: Some(finalize),
                        }))
                        .await
                }
            }
        },
    )
    .await
}
