//! `trident update [CONFIG]`: UpdateService (v1).

use trident_proto::v1::update_service_client::UpdateServiceClient;
use trident_proto::v1::{FinalizeUpdateRequest, StageUpdateRequest, UpdateRequest};

use crate::args::ServicingConfigArgs;
use crate::ctx::Ctx;
use crate::exit::{CliResult, Exit};
use crate::servicing::{self, Steps, reboot};

pub async fn run(ctx: &Ctx, args: &ServicingConfigArgs) -> CliResult<Exit> {
    let Some((steps, config)) = servicing::plan(args)? else {
        return Ok(Exit::Success);
    };
    let stage = config.map(|config| StageUpdateRequest {
        config: Some(config),
    });
    let finalize = FinalizeUpdateRequest { reboot: reboot() };
    servicing::run(ctx, &args.servicing, "update", true, |channel, trace| {
        // Called again after waiting for a running operation.
        let stage = stage.clone();
        async move {
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
        }
    })
    .await
}
