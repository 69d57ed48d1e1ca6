//! `trident rebuild-raid`: RebuildRaidService (v1preview). The daemon
//! rebuilds the software RAID arrays onto a replaced disk from the Host
//! Configuration it installed; the recovery shows as live progress
//! (`raid-recovery`), a refusal as its structured error.

use trident_proto::v1preview::RebuildRaidRequest;
use trident_proto::v1preview::rebuild_raid_service_client::RebuildRaidServiceClient;

use crate::args::RebuildRaidArgs;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::servicing;

pub async fn run(ctx: &Ctx, args: &RebuildRaidArgs) -> CliResult<Exit> {
    if let Some(path) = &args.config {
        // Upstream's RebuildRaidRequest carries no configuration: check the
        // file like upstream does, and say that the daemon's is used.
        std::fs::metadata(path).map_err(|e| CliError::ConfigLoad {
            path: path.clone(),
            detail: e.to_string(),
        })?;
        eprintln!(
            "trident: note: -c {} is not sent: RebuildRaid takes no configuration; tridentd \
             rebuilds from the Host Configuration it has",
            path.display()
        );
    }
    servicing::run(
        ctx,
        &args.servicing,
        "rebuild-raid",
        false,
        |channel, trace| async move {
            RebuildRaidServiceClient::new(channel)
                .rebuild_raid(trace.request(RebuildRaidRequest {}))
                .await
        },
    )
    .await
}
