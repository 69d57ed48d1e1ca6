//! gRPC handlers: [`ServicingApi`] implements every servicing service.
//! Streaming RPCs check their request, hand a step to the runner and
//! stream the operation from the bus; queries take the connection lock in
//! read mode.

mod queries;
mod rollback_ops;
mod streaming;

use std::future::Future;
use std::sync::Arc;

use tonic::{Request, Response, Status};
use trident_engine::flows::rollback;
use trident_engine::machinery::Engine;
use trident_engine::machinery::runner::{self, ServicingRequest, StepContext, StepResult};
use trident_proto::v1::ServicingKind;
use trident_proto::v1preview::{self, rollback_service_server::RollbackService};
use trident_telemetry::TraceParent;

use super::additions::Additions;
use super::error_status::{busy, to_status};
use super::servicing_stream::{ServicingStream, servicing_stream};
pub(crate) use streaming::reboot_handling;
use streaming::rollback_kind;

/// Implements UpdateService, CommitService (v1 and v1preview),
/// InstallService, RebuildRaidService, RollbackService, StatusService and
/// ValidationService over one [`Engine`].
#[derive(Debug, Clone)]
pub struct ServicingApi {
    engine: Arc<Engine>,
}

/// What a servicing call asks for besides its message: which RPC, the
/// caller's trace position and the additions it opted in to.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    request: ServicingRequest,
    additions: Additions,
}

impl Call {
    /// Reads the call's metadata (`traceparent`, `trident-additions`).
    pub(crate) fn of<T>(request: &Request<T>, rpc: &'static str, kind: ServicingKind) -> Call {
        let metadata = request.metadata();
        Call {
            request: ServicingRequest {
                rpc,
                kind,
                parent: TraceParent::from_metadata(metadata),
                nothing_to_do: None,
                settles: None,
            },
            additions: Additions::from_metadata(metadata),
        }
    }
}

impl Call {
    /// Lets the runner answer at once when `check` finds nothing to do.
    pub(crate) fn nothing_to_do(mut self, check: runner::NothingToDo) -> Call {
        self.request.nothing_to_do = Some(check);
        self
    }

    /// Continues the trace of the operation that recorded the Host Status
    /// when `settles` says this call settles it (a commit after the reboot).
    pub(crate) fn settles(mut self, settles: runner::Settles) -> Call {
        self.request.settles = Some(settles);
        self
    }
}

impl ServicingApi {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }

    /// Starts the operation and answers with its stream from the bus;
    /// UNAVAILABLE at once when another operation runs.
    pub(crate) async fn start<F, Fut>(
        &self,
        call: Call,
        step: F,
    ) -> Result<Response<ServicingStream>, Status>
    where
        F: FnOnce(StepContext) -> Fut + Send + 'static,
        Fut: Future<Output = StepResult> + Send + 'static,
    {
        let started = runner::start(&self.engine, call.request, step)
            .await
            .map_err(|r| busy(&r))?;
        Ok(Response::new(servicing_stream(
            self.engine.bus(),
            started,
            call.additions,
        )))
    }

    /// The Host Status under the connection read lock.
    async fn status(&self) -> Result<trident_host::status::HostStatus, Status> {
        let _read = self.engine.connection_lock.read().await;
        self.engine.host_status().map_err(to_status)
    }

    /// The manual-rollback chain (upstream's rule over the Host Status
    /// history) under the connection read lock.
    async fn rollback_chain(
        &self,
    ) -> Result<Vec<trident_host::datastore::RollbackChainItem>, Status> {
        let _read = self.engine.connection_lock.read().await;
        self.engine.rollback_chain().map_err(to_status)
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
        let kind = rollback_kind(request.into_inner().kind)?;
        let chain = self.rollback_chain().await?;
        Ok(Response::new(v1preview::CheckRollbackResponse {
            kind: rollback::check(&chain, kind) as i32,
        }))
    }

    async fn rollback(
        &self,
        request: Request<v1preview::RollbackRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Self::rollback_call(&request, "Rollback");
        let req = request.into_inner();
        self.rollback_op(call, req.kind, req.finalize.and_then(|f| f.reboot))
            .await
    }

    async fn rollback_stage(
        &self,
        request: Request<v1preview::RollbackStageRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Self::rollback_call(&request, "RollbackStage");
        self.rollback_stage_op(call, request.into_inner().kind)
            .await
    }

    async fn rollback_finalize(
        &self,
        request: Request<v1preview::RollbackFinalizeRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Self::rollback_call(&request, "RollbackFinalize");
        self.rollback_finalize_op(call, request.into_inner().reboot)
            .await
    }

    async fn get_rollback_chain(
        &self,
        _request: Request<v1preview::GetRollbackChainRequest>,
    ) -> Result<Response<v1preview::GetRollbackChainResponse>, Status> {
        let chain = self.rollback_chain().await?;
        Ok(Response::new(v1preview::GetRollbackChainResponse {
            rollback_chain: rollback::chain(&chain),
        }))
    }

    async fn get_rollback_target(
        &self,
        _request: Request<v1preview::GetRollbackTargetRequest>,
    ) -> Result<Response<v1preview::GetRollbackTargetResponse>, Status> {
        let chain = self.rollback_chain().await?;
        Ok(Response::new(v1preview::GetRollbackTargetResponse {
            rollback_target: rollback::chain(&chain).into_iter().next(),
        }))
    }
}
