//! gRPC handlers: [`ServicingApi`] implements every servicing service.
//! Streaming RPCs go through the runner; queries take the connection lock
//! in read mode.

mod queries;
mod streaming;

use std::sync::Arc;

use tonic::{Request, Response, Status};
use trident_proto::v1::ServicingKind;
use trident_proto::v1preview::{self, rollback_service_server::RollbackService};

use super::engine::{Engine, rollback};
use super::runner;
use super::status::to_status;
use super::stream::ServicingStream;
use streaming::{handling, rollback_kind};

/// Implements UpdateService, CommitService (v1 and v1preview),
/// InstallService, RebuildRaidService, RollbackService, StatusService and
/// ValidationService over one [`Engine`].
#[derive(Debug, Clone)]
pub struct ServicingApi {
    engine: Arc<Engine>,
}

impl ServicingApi {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// The shared engine (for services built elsewhere, e.g. StreamDisk).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The Host Status under the connection read lock.
    async fn status(&self) -> Result<trident_host::status::HostStatus, Status> {
        let _read = self.engine.connection_lock.read().await;
        self.engine.host_status().map_err(to_status)
    }
}

#[tonic::async_trait]
impl RollbackService for ServicingApi {
    type RollbackStream = ServicingStream;
    type RollbackStageStream = ServicingStream;
    type RollbackFinalizeStream = ServicingStream;

    async fn check_rollback(
        &self,
        request: Request<v1preview::CheckRollbackRequest>,
    ) -> Result<Response<v1preview::CheckRollbackResponse>, Status> {
        let kind = rollback_kind(request.into_inner().kind);
        let status = self.status().await?;
        Ok(Response::new(v1preview::CheckRollbackResponse {
            kind: rollback::check(&status, kind) as i32,
        }))
    }

    async fn rollback(
        &self,
        request: Request<v1preview::RollbackRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "Rollback", ServicingKind::ManualRollbackAb);
        let req = request.into_inner();
        let kind = rollback_kind(req.kind);
        let reboot = handling(req.finalize.and_then(|f| f.reboot));
        runner::start(&self.engine, meta, move |ctx| {
            rollback::rollback_step(ctx, kind, reboot)
        })
        .map(Response::new)
    }

    async fn rollback_stage(
        &self,
        request: Request<v1preview::RollbackStageRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(&request, "RollbackStage", ServicingKind::ManualRollbackAb);
        let kind = rollback_kind(request.into_inner().kind);
        runner::start(&self.engine, meta, move |ctx| {
            rollback::stage_step(ctx, kind)
        })
        .map(Response::new)
    }

    async fn rollback_finalize(
        &self,
        request: Request<v1preview::RollbackFinalizeRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let meta = Self::request(
            &request,
            "RollbackFinalize",
            ServicingKind::ManualRollbackAb,
        );
        let reboot = handling(request.into_inner().reboot);
        runner::start(&self.engine, meta, move |ctx| {
            rollback::finalize_step(ctx, reboot)
        })
        .map(Response::new)
    }

    async fn get_rollback_chain(
        &self,
        _request: Request<v1preview::GetRollbackChainRequest>,
    ) -> Result<Response<v1preview::GetRollbackChainResponse>, Status> {
        let status = self.status().await?;
        Ok(Response::new(v1preview::GetRollbackChainResponse {
            rollback_chain: rollback::chain(&status),
        }))
    }

    async fn get_rollback_target(
        &self,
        _request: Request<v1preview::GetRollbackTargetRequest>,
    ) -> Result<Response<v1preview::GetRollbackTargetResponse>, Status> {
        let status = self.status().await?;
        Ok(Response::new(v1preview::GetRollbackTargetResponse {
            rollback_target: rollback::chain(&status).into_iter().next(),
        }))
    }
}
