//! Services whose implementation is still being built. Every RPC answers
//! UNIMPLEMENTED naming what is missing, so clients get a clear answer
//! instead of "unknown service". Each block is replaced (and its line in
//! `router.rs` switched) when the real implementation lands.

use std::{future::Future, pin::Pin};

use futures::Stream;
use tonic::{Request, Response, Status};
use trident_proto::{v1, v1preview};

/// Stream type of the pending streaming RPCs (never produced).
pub type PendingStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// UNIMPLEMENTED status naming the RPC and the missing part.
pub fn missing(missing_part: &str, rpc: &str) -> Status {
    Status::unimplemented(format!("{missing_part} not built yet: {rpc}"))
}

/// What the servicing RPCs wait for.
pub const SERVICING_ENGINE: &str = "servicing engine";
/// What the telemetry RPCs wait for.
pub const TELEMETRY_BUS: &str = "telemetry bus";

/// Future type `#[tonic::async_trait]` gives trait methods.
type RpcFuture<'a, T> = Pin<Box<dyn Future<Output = Result<Response<T>, Status>> + Send + 'a>>;

/// Generates one pending RPC. Written in the desugared form that
/// `#[tonic::async_trait]` expects, because the attribute cannot see
/// `async fn`s produced by a macro.
macro_rules! pending_rpc {
    (stream $fn:ident, $stream:ident, $req:ty, $item:ty, $part:expr, $rpc:literal) => {
        type $stream = PendingStream<$item>;
        fn $fn<'life0, 'async_trait>(
            &'life0 self,
            _request: Request<$req>,
        ) -> RpcFuture<'async_trait, Self::$stream>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(std::future::ready(Err(missing($part, $rpc))))
        }
    };
    (unary $fn:ident, $req:ty, $resp:ty, $part:expr, $rpc:literal) => {
        fn $fn<'life0, 'async_trait>(
            &'life0 self,
            _request: Request<$req>,
        ) -> RpcFuture<'async_trait, $resp>
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(std::future::ready(Err(missing($part, $rpc))))
        }
    };
}

/// Stand-in for every servicing service and the telemetry service.
#[derive(Debug, Default, Clone, Copy)]
pub struct Pending;

impl v1::streaming_service_server::StreamingService for Pending {
    pending_rpc!(stream stream_disk, StreamDiskStream, v1::StreamDiskRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1.StreamingService/StreamDisk");
}

impl v1::update_service_server::UpdateService for Pending {
    pending_rpc!(stream update, UpdateStream, v1::UpdateRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1.UpdateService/Update");
    pending_rpc!(stream update_stage, UpdateStageStream, v1::StageUpdateRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1.UpdateService/UpdateStage");
    pending_rpc!(stream update_finalize, UpdateFinalizeStream, v1::FinalizeUpdateRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1.UpdateService/UpdateFinalize");
}

impl v1::commit_service_server::CommitService for Pending {
    pending_rpc!(stream commit, CommitStream, v1::CommitRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1.CommitService/Commit");
}

impl v1preview::install_service_server::InstallService for Pending {
    pending_rpc!(stream install, InstallStream, v1preview::InstallRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.InstallService/Install");
    pending_rpc!(stream install_stage, InstallStageStream, v1preview::StageInstallRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.InstallService/InstallStage");
    pending_rpc!(stream install_finalize, InstallFinalizeStream, v1preview::FinalizeInstallRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.InstallService/InstallFinalize");
}

impl v1preview::commit_service_server::CommitService for Pending {
    pending_rpc!(stream check_root, CheckRootStream, v1preview::CheckRootRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.CommitService/CheckRoot");
}

impl v1preview::rebuild_raid_service_server::RebuildRaidService for Pending {
    pending_rpc!(stream rebuild_raid, RebuildRaidStream, v1preview::RebuildRaidRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.RebuildRaidService/RebuildRaid");
}

impl v1preview::rollback_service_server::RollbackService for Pending {
    pending_rpc!(unary check_rollback, v1preview::CheckRollbackRequest, v1preview::CheckRollbackResponse,
        SERVICING_ENGINE, "trident.v1preview.RollbackService/CheckRollback");
    pending_rpc!(stream rollback, RollbackStream, v1preview::RollbackRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.RollbackService/Rollback");
    pending_rpc!(stream rollback_stage, RollbackStageStream, v1preview::RollbackStageRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.RollbackService/RollbackStage");
    pending_rpc!(stream rollback_finalize, RollbackFinalizeStream, v1preview::RollbackFinalizeRequest, v1::ServicingResponse,
        SERVICING_ENGINE, "trident.v1preview.RollbackService/RollbackFinalize");
    pending_rpc!(unary get_rollback_chain, v1preview::GetRollbackChainRequest, v1preview::GetRollbackChainResponse,
        SERVICING_ENGINE, "trident.v1preview.RollbackService/GetRollbackChain");
    pending_rpc!(unary get_rollback_target, v1preview::GetRollbackTargetRequest, v1preview::GetRollbackTargetResponse,
        SERVICING_ENGINE, "trident.v1preview.RollbackService/GetRollbackTarget");
}

impl v1preview::status_service_server::StatusService for Pending {
    pending_rpc!(unary get_provisioned_config, v1preview::GetConfigRequest, v1preview::GetConfigResponse,
        SERVICING_ENGINE, "trident.v1preview.StatusService/GetProvisionedConfig");
    pending_rpc!(unary get_servicing_config, v1preview::GetConfigRequest, v1preview::GetConfigResponse,
        SERVICING_ENGINE, "trident.v1preview.StatusService/GetServicingConfig");
    pending_rpc!(unary get_last_error, v1preview::GetLastErrorRequest, v1preview::GetLastErrorResponse,
        SERVICING_ENGINE, "trident.v1preview.StatusService/GetLastError");
    pending_rpc!(unary get_servicing_state, v1preview::GetServicingStateRequest, v1preview::GetServicingStateResponse,
        SERVICING_ENGINE, "trident.v1preview.StatusService/GetServicingState");
    pending_rpc!(unary get_active_volume, v1preview::GetActiveVolumeRequest, v1preview::GetActiveVolumeResponse,
        SERVICING_ENGINE, "trident.v1preview.StatusService/GetActiveVolume");
}

impl v1preview::validation_service_server::ValidationService for Pending {
    pending_rpc!(unary validate_host_configuration, v1preview::ValidateHostConfigurationRequest,
        v1preview::ValidateHostConfigurationResponse,
        SERVICING_ENGINE, "trident.v1preview.ValidationService/ValidateHostConfiguration");
    pending_rpc!(unary get_required_servicing_type, v1preview::GetRequiredServicingTypeRequest,
        v1preview::GetRequiredServicingTypeResponse,
        SERVICING_ENGINE, "trident.v1preview.ValidationService/GetRequiredServicingType");
}

impl v1::telemetry_service_server::TelemetryService for Pending {
    pending_rpc!(stream watch_logs, WatchLogsStream, v1::WatchLogsRequest, v1::WatchLogsResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/WatchLogs");
    pending_rpc!(stream watch_traces, WatchTracesStream, v1::WatchTracesRequest, v1::WatchTracesResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/WatchTraces");
    pending_rpc!(stream watch_progress, WatchProgressStream, v1::WatchProgressRequest, v1::WatchProgressResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/WatchProgress");
    pending_rpc!(stream watch_errors, WatchErrorsStream, v1::WatchErrorsRequest, v1::WatchErrorsResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/WatchErrors");
    pending_rpc!(stream watch, WatchStream, v1::WatchRequest, v1::WatchResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/Watch");
    pending_rpc!(unary get_last_error, v1::GetLastErrorRequest, v1::GetLastErrorResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/GetLastError");
    pending_rpc!(unary get_bus_status, v1::GetBusStatusRequest, v1::GetBusStatusResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/GetBusStatus");
    pending_rpc!(unary list_operations, v1::ListOperationsRequest, v1::ListOperationsResponse,
        TELEMETRY_BUS, "trident.v1.TelemetryService/ListOperations");
}
