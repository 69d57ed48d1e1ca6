//! `trident commit`: CommitService (v1).

use trident_proto::v1::CommitRequest;
use trident_proto::v1::commit_service_client::CommitServiceClient;

use crate::args::ServicingArgs;
use crate::ctx::Ctx;
use crate::exit::{CliResult, Exit};
use crate::servicing::{self, reboot};

pub async fn run(ctx: &Ctx, args: &ServicingArgs) -> CliResult<Exit> {
    servicing::run(ctx, args, "commit", false, |channel, trace| async move {
        CommitServiceClient::new(channel)
            .commit(trace.request(CommitRequest { reboot: reboot() }))
            .await
    })
    .await
}
