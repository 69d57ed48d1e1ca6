//! `trident install [CONFIG]`: InstallService (v1preview).

use trident_proto::v1::HostConfiguration;
use trident_proto::v1preview::install_service_client::InstallServiceClient;
use trident_proto::v1preview::{FinalizeInstallRequest, InstallRequest, StageInstallRequest};

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
        Some(StageInstallRequest {
            config: Some(HostConfiguration { config }),
        })
    };
    let finalize = FinalizeInstallRequest { reboot: reboot() };
    servicing::run(
        ctx,
        &args.servicing,
        "install",
        true,
        |channel, trace| async move {
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
        },
    )
    .await
}
