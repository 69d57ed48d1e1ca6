//! `trident.v1.RollbackService`: upstream's stable rollback service (its
//! next release), the same operations as v1preview's Rollback,
//! RollbackStage and RollbackFinalize. Its `ManualRollbackKind` has
//! v1preview's numbers, so both decode through one check.

use tonic::{Request, Response, Status};
use trident_proto::v1::{self, ServicingKind, rollback_service_server::RollbackService};

use super::streaming::rollback_kind;
use super::{Call, ServicingApi, reboot_handling};
use crate::grpc::servicing_stream::ServicingStream;
use crate::servicing::engine::rollback;

#[tonic::async_trait]
impl RollbackService for ServicingApi {
    type RollbackStream = ServicingStream;
    type RollbackStageStream = ServicingStream;
    type RollbackFinalizeStream = ServicingStream;

    async fn rollback(
        &self,
        request: Request<v1::RollbackRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "Rollback", ServicingKind::ManualRollbackAb);
        let req = request.into_inner();
        let kind = rollback_kind(req.kind)?;
        let reboot = reboot_handling(
            req.finalize.and_then(|f| f.reboot),
            "finalize.reboot.handling",
        )?;
        self.start(call, move |ctx| rollback::rollback_step(ctx, kind, reboot))
            .await
    }

    async fn rollback_stage(
        &self,
        request: Request<v1::RollbackStageRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "RollbackStage", ServicingKind::ManualRollbackAb);
        let kind = rollback_kind(request.into_inner().kind)?;
        self.start(call, move |ctx| rollback::stage_step(ctx, kind))
            .await
    }

    async fn rollback_finalize(
        &self,
        request: Request<v1::RollbackFinalizeRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(
            &request,
            "RollbackFinalize",
            ServicingKind::ManualRollbackAb,
        );
        let reboot = reboot_handling(request.into_inner().reboot, "reboot.handling")?;
        self.start(call, move |ctx| rollback::finalize_step(ctx, reboot))
            .await
    }
}
