//! `trident install [CONFIG]`: InstallService (v1preview).

use trident_proto::v1preview::install_service_client::InstallServiceClient;
use trident_proto::v1preview::{FinalizeInstallRequest, InstallRequest, StageInstallRequest};

use crate::args::ServicingConfigArgs;
use crate::ctx::Ctx;
use crate::exit::{CliResult, Exit};
use crate::servicing::{self, Steps, reboot};

pub async fn run(ctx: &Ctx, args: &ServicingConfigArgs) -> CliResult<Exit> {
    let Some((steps, config)) = servicing::plan(args)? else {
        return Ok(Exit::Success);
    };
    let stage = config.map(|config| StageInstallRequest {
        config: Some(config),
    });
    let finalize = FinalizeInstallRequest { reboot: reboot() };
    servicing::run(ctx, &args.servicing, "install", true, |channel, trace| {
        // Called again after waiting for a running operation.
        let stage = stage.clone();
        async move {
            let mut client = InstallServiceClient::new(channel);
            match (steps, stage) {
                (Steps::StageOnly, Some(stage)) => client.install_stage(trace.request(stage)).await,
                (Steps::FinalizeOnly, _) => client.install_finalize(trace.request(finalize)).await,
                (_, stage) => {
                    client
                        .install(trace.request(InstallRequest {
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
