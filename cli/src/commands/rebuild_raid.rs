//! `trident rebuild-raid`: RebuildRaidService (v1preview). The daemon
//! answers with a clear error when it does not support it; that error is
//! shown as is.

use trident_proto::v1preview::RebuildRaidRequest;
use trident_proto::v1preview::rebuild_raid_service_client::RebuildRaidServiceClient;

use super::Ctx;
use crate::args::RebuildRaidArgs;
use crate::exit::{CliResult, Exit};
use crate::servicing;

pub async fn run(ctx: &Ctx, args: &RebuildRaidArgs) -> CliResult<Exit> {
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
