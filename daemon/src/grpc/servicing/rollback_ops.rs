//! The rollback operations, shared by `trident.v1preview.RollbackService`
//! and `trident.v1.RollbackService` (upstream's next release promotes
//! Rollback, RollbackStage and RollbackFinalize to v1; the queries stay in
//! v1preview). Both `ManualRollbackKind`s have the same numbers, so both
//! decode through one check.

use tonic::{Request, Response, Status};
use trident_engine::flows::rollback;
use trident_engine::machinery::runner;
use trident_proto::v1::rollback_service_server::RollbackService;
use trident_proto::v1::{self, RebootManagement, ServicingKind};

use super::streaming::rollback_kind;
use super::{Call, ServicingApi, reboot_handling};
use crate::grpc::servicing_stream::ServicingStream;

impl ServicingApi {
    pub(super) fn rollback_call<T>(request: &Request<T>, rpc: &'static str) -> Call {
        Call::of(request, rpc, ServicingKind::ManualRollbackAb)
    }

    /// Rollback: stage and finalize.
    pub(super) async fn rollback_op(
        &self,
        call: Call,
        kind: i32,
        reboot: Option<RebootManagement>,
    ) -> Result<Response<ServicingStream>, Status> {
        let kind = rollback_kind(kind)?;
        let reboot = reboot_handling(reboot, "finalize.reboot.handling")?;
        self.start(call, move |ctx| rollback::rollback_step(ctx, kind, reboot))
            .await
    }

    /// RollbackStage.
    pub(super) async fn rollback_stage_op(
        &self,
        call: Call,
        kind: i32,
    ) -> Result<Response<ServicingStream>, Status> {
        let kind = rollback_kind(kind)?;
        self.start(call, move |ctx| rollback::stage_step(ctx, kind))
            .await
    }

    /// RollbackFinalize.
    pub(super) async fn rollback_finalize_op(
        &self,
        call: Call,
        reboot: Option<RebootManagement>,
    ) -> Result<Response<ServicingStream>, Status> {
        let reboot = reboot_handling(reboot, "reboot.handling")?;
        let call = call.settles(runner::finalizes_staged);
        self.start(call, move |ctx| rollback::finalize_step(ctx, reboot))
            .await
    }
}

#[tonic::async_trait]
impl RollbackService for ServicingApi {
    type RollbackStream = ServicingStream;
    type RollbackStageStream = ServicingStream;
    type RollbackFinalizeStream = ServicingStream;

    async fn rollback(
        &self,
        request: Request<v1::RollbackRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Self::rollback_call(&request, "Rollback");
        let req = request.into_inner();
        self.rollback_op(call, req.kind, req.finalize.and_then(|f| f.reboot))
            .await
    }

    async fn rollback_stage(
        &self,
        request: Request<v1::RollbackStageRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Self::rollback_call(&request, "RollbackStage");
        self.rollback_stage_op(call, request.into_inner().kind)
            .await
    }

    async fn rollback_finalize(
        &self,
        request: Request<v1::RollbackFinalizeRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Self::rollback_call(&request, "RollbackFinalize");
        self.rollback_finalize_op(call, request.into_inner().reboot)
            .await
    }
}
