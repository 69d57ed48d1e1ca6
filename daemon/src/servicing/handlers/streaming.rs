//! gRPC handlers of the servicing RPCs (streams): each one checks its
//! request, then hands a step to the runner.

use tonic::{Request, Response, Status};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{
    self, RebootHandling, RebootManagement, ServicingKind, commit_service_server::CommitService,
    update_service_server::UpdateService,
};
use trident_proto::v1preview::{
    self, ManualRollbackKind, commit_service_server::CommitService as PreviewCommitService,
    install_service_server::InstallService, rebuild_raid_service_server::RebuildRaidService,
};

use super::ServicingApi;
use crate::servicing::engine::{commit, install, update};
use crate::servicing::runner::{self, ServicingRequest};
use crate::servicing::status::to_status;
use crate::servicing::stream::ServicingStream;

/// RebootManagement → handling; unspecified means Trident handles it.
pub(super) fn handling(reboot: Option<RebootManagement>) -> RebootHandling {
    match reboot.map(|r| r.handling()) {
        Some(RebootHandling::CallerHandlesReboot) => RebootHandling::CallerHandlesReboot,
        _ => RebootHandling::TridentHandlesReboot,
    }
}

/// The Host Configuration text of a request, or INVALID_ARGUMENT.
fn config_text(config: Option<v1::HostConfiguration>, rpc: &str) -> Result<String, Status> {
    match config {
        Some(c) if !c.config.trim().is_empty() => Ok(c.config),
        _ => Err(to_status(TridentError::new(
            Subkind::InvalidRequest,
            format!("{rpc}: the request carries no Host Configuration (config.config is empty)"),
        ))),
    }
}

impl ServicingApi {
    pub(super) fn request<T>(
        request: &Request<T>,
        rpc: &'static str,
        kind: ServicingKind,
    ) -> ServicingRequest {
        ServicingRequest {
            rpc,
            kind,
            metadata: request.metadata().clone(),
        }
    }
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
        let meta = Self::request(&request, "Update", ServicingKind::AbUpdate);
        let req = request.into_inner();
        let yaml = config_text(req.stage.and_then(|s| s.config), "Update")?;
        let reboot = handling(req.finalize.and_then(|f| f.reboot));
        runner::start(&self.engine, meta, move |ctx| {
            update::update_step(ctx, yaml, reboot)
        })
        .map(Response::new)
    }

    async fn update_stage(
        &self,
        request: Request<v1::StageUpdateRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "UpdateStage", ServicingKind::AbUpdate);
        let yaml = config_text(request.into_inner().config, "UpdateStage")?;
        runner::start(&self.engine, meta, move |ctx| update::stage_step(ctx, yaml))
            .map(Response::new)
    }

    async fn update_finalize(
        &self,
        request: Request<v1::FinalizeUpdateRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "UpdateFinalize", ServicingKind::AbUpdate);
        let reboot = handling(request.into_inner().reboot);
        runner::start(&self.engine, meta, move |ctx| {
            update::finalize_step(ctx, reboot)
        })
        .map(Response::new)
    }
}

#[tonic::async_trait]
impl CommitService for ServicingApi {
    type CommitStream = ServicingStream;

    async fn commit(
        &self,
        request: Request<v1::CommitRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "Commit", ServicingKind::Unspecified);
        let reboot = handling(request.into_inner().reboot);
        runner::start(&self.engine, meta, move |ctx| {
            commit::commit_step(ctx, reboot)
        })
        .map(Response::new)
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
        let meta = Self::request(&request, "Install", ServicingKind::CleanInstall);
        let req = request.into_inner();
        let yaml = config_text(req.stage.and_then(|s| s.config), "Install")?;
        let reboot = handling(req.finalize.and_then(|f| f.reboot));
        runner::start(&self.engine, meta, move |ctx| {
            install::install_step(ctx, yaml, reboot)
        })
        .map(Response::new)
    }

    async fn install_stage(
        &self,
        request: Request<v1preview::StageInstallRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "InstallStage", ServicingKind::CleanInstall);
        let yaml = config_text(request.into_inner().config, "InstallStage")?;
        runner::start(&self.engine, meta, move |ctx| {
            install::stage_step(ctx, yaml)
        })
        .map(Response::new)
    }

    async fn install_finalize(
        &self,
        request: Request<v1preview::FinalizeInstallRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "InstallFinalize", ServicingKind::CleanInstall);
        let reboot = handling(request.into_inner().reboot);
        runner::start(&self.engine, meta, move |ctx| {
            install::finalize_step(ctx, reboot)
        })
        .map(Response::new)
    }
}

#[tonic::async_trait]
impl PreviewCommitService for ServicingApi {
    type CheckRootStream = ServicingStream;

    async fn check_root(
        &self,
        request: Request<v1preview::CheckRootRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "CheckRoot", ServicingKind::NoneRequired);
        runner::start(&self.engine, meta, commit::check_root_step).map(Response::new)
    }
}

#[tonic::async_trait]
impl RebuildRaidService for ServicingApi {
    type RebuildRaidStream = ServicingStream;

    async fn rebuild_raid(
        &self,
        request: Request<v1preview::RebuildRaidRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "RebuildRaid", ServicingKind::NoneRequired);
        runner::start(&self.engine, meta, |_ctx| async {
            Err(TridentError::new(
                Subkind::RaidUnsupported,
                "RebuildRaid: software RAID is not supported by this daemon (storage.raid is an unsupported Host Configuration key)",
            )
            .into())
        })
        .map(Response::new)
    }
}

/// Manual rollback kind of a request (unspecified means any).
pub(super) fn rollback_kind(kind: i32) -> ManualRollbackKind {
    ManualRollbackKind::try_from(kind).unwrap_or(ManualRollbackKind::AnyRollbackRequested)
}
