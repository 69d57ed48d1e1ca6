//! gRPC handlers of the servicing RPCs (streams): each one checks its
//! request, then hands a step to the runner.

use tonic::{Request, Response, Status};
use trident_engine::flows::{commit, install, rebuild_raid, update};
use trident_engine::machinery::runner;
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{
    self, RebootHandling, RebootManagement, ServicingKind, commit_service_server::CommitService,
    update_service_server::UpdateService,
};
use trident_proto::v1preview::{
    self, ManualRollbackKind, commit_service_server::CommitService as PreviewCommitService,
    install_service_server::InstallService, rebuild_raid_service_server::RebuildRaidService,
};

use super::{Call, ServicingApi};
use crate::grpc::error_status::{invalid_enum, to_status};
use crate::grpc::servicing_stream::ServicingStream;

/// RebootManagement → handling; absent or unspecified means Trident
/// handles it. A value this daemon does not know is INVALID_ARGUMENT
/// naming `field`, not a guess.
pub(crate) fn reboot_handling(
    reboot: Option<RebootManagement>,
    field: &'static str,
) -> Result<RebootHandling, Status> {
    let Some(reboot) = reboot else {
        return Ok(RebootHandling::TridentHandlesReboot);
    };
    match RebootHandling::try_from(reboot.handling) {
        Ok(RebootHandling::CallerHandlesReboot) => Ok(RebootHandling::CallerHandlesReboot),
        Ok(RebootHandling::TridentHandlesReboot | RebootHandling::Unspecified) => {
            Ok(RebootHandling::TridentHandlesReboot)
        }
        Err(_) => Err(invalid_enum(field, "RebootHandling", reboot.handling)),
    }
}

/// A message field a request must carry (as upstream requires `stage`,
/// `stage.config` and `finalize`), or INVALID_ARGUMENT naming it: a missing
/// part is never silently defaulted.
fn required<T>(part: Option<T>, rpc: &str, field: &str) -> Result<T, Status> {
    part.ok_or_else(|| {
        to_status(TridentError::new(
            Subkind::InvalidRequest,
            format!("{rpc}: the request carries no `{field}`; it is required"),
        ))
    })
}

/// The Host Configuration text of a request (at `field`), or INVALID_ARGUMENT.
fn config_text(
    config: Option<v1::HostConfiguration>,
    rpc: &str,
    field: &str,
) -> Result<String, Status> {
    let config = required(config, rpc, field)?;
    if config.config.trim().is_empty() {
        return Err(to_status(TridentError::new(
            Subkind::InvalidRequest,
            format!("{rpc}: the request's Host Configuration (`{field}.config`) is empty"),
        )));
    }
    Ok(config.config)
}

#[tonic::async_trait]
impl UpdateService for ServicingApi {
    type UpdateStream = ServicingStream;
    type UpdateStageStream = ServicingStream;
    type UpdateFinalizeStream = ServicingStream;

    async fn update(
        &self,
        request: Request<v1::UpdateRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "Update", ServicingKind::AbUpdate);
        let req = request.into_inner();
        let stage = required(req.stage, "Update", "stage")?;
        let yaml = config_text(stage.config, "Update", "stage.config")?;
        let finalize = required(req.finalize, "Update", "finalize")?;
        let reboot = reboot_handling(finalize.reboot, "finalize.reboot.handling")?;
        self.start(call, move |ctx| update::update_step(ctx, yaml, reboot))
            .await
    }

    async fn update_stage(
        &self,
        request: Request<v1::StageUpdateRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "UpdateStage", ServicingKind::AbUpdate);
        let yaml = config_text(request.into_inner().config, "UpdateStage", "config")?;
        self.start(call, move |ctx| update::stage_step(ctx, yaml))
            .await
    }

    async fn update_finalize(
        &self,
        request: Request<v1::FinalizeUpdateRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "UpdateFinalize", ServicingKind::AbUpdate)
            .settles(runner::finalizes_staged);
        let reboot = reboot_handling(request.into_inner().reboot, "reboot.handling")?;
        self.start(call, move |ctx| update::finalize_step(ctx, reboot))
            .await
    }
}

#[tonic::async_trait]
impl CommitService for ServicingApi {
    type CommitStream = ServicingStream;

    async fn commit(
        &self,
        request: Request<v1::CommitRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "Commit", ServicingKind::Unspecified)
            .nothing_to_do(commit::nothing_to_commit)
            .settles(commit::settles_pending);
        let reboot = reboot_handling(request.into_inner().reboot, "reboot.handling")?;
        self.start(call, move |ctx| commit::commit_step(ctx, reboot))
            .await
    }
}

#[tonic::async_trait]
impl InstallService for ServicingApi {
    type InstallStream = ServicingStream;
    type InstallStageStream = ServicingStream;
    type InstallFinalizeStream = ServicingStream;

    async fn install(
        &self,
        request: Request<v1preview::InstallRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "Install", ServicingKind::CleanInstall);
        let req = request.into_inner();
        let stage = required(req.stage, "Install", "stage")?;
        let yaml = config_text(stage.config, "Install", "stage.config")?;
        let finalize = required(req.finalize, "Install", "finalize")?;
        let reboot = reboot_handling(finalize.reboot, "finalize.reboot.handling")?;
        self.start(call, move |ctx| install::install_step(ctx, yaml, reboot))
            .await
    }

    async fn install_stage(
        &self,
        request: Request<v1preview::StageInstallRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "InstallStage", ServicingKind::CleanInstall);
        let yaml = config_text(request.into_inner().config, "InstallStage", "config")?;
        self.start(call, move |ctx| install::stage_step(ctx, yaml))
            .await
    }

    async fn install_finalize(
        &self,
        request: Request<v1preview::FinalizeInstallRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "InstallFinalize", ServicingKind::CleanInstall)
            .settles(runner::finalizes_staged);
        let reboot = reboot_handling(request.into_inner().reboot, "reboot.handling")?;
        self.start(call, move |ctx| install::finalize_step(ctx, reboot))
            .await
    }
}

#[tonic::async_trait]
impl PreviewCommitService for ServicingApi {
    type CheckRootStream = ServicingStream;

    async fn check_root(
        &self,
        request: Request<v1preview::CheckRootRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "CheckRoot", ServicingKind::NoneRequired);
        self.start(call, commit::check_root_step).await
    }
}

#[tonic::async_trait]
impl RebuildRaidService for ServicingApi {
    type RebuildRaidStream = ServicingStream;

    async fn rebuild_raid(
        &self,
        request: Request<v1preview::RebuildRaidRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "RebuildRaid", ServicingKind::NoneRequired);
        self.start(call, rebuild_raid::rebuild_raid_step).await
    }
}

/// Manual rollback kind of a request (unspecified means any); a value this
/// daemon does not know is INVALID_ARGUMENT naming the field.
pub(super) fn rollback_kind(kind: i32) -> Result<ManualRollbackKind, Status> {
    ManualRollbackKind::try_from(kind).map_err(|_| invalid_enum("kind", "ManualRollbackKind", kind))
}
