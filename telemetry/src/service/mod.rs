//! `TelemetryService`: each Watch RPC only registers a subscriber on the bus
//! and returns its stream of batches; unary calls read bus state.

mod encoded;

pub use encoded::{EncodedResponse, TelemetryGrpc};

use std::pin::Pin;

use futures::{Stream, StreamExt};
use tonic::{Request, Response, Status};
use trident_proto::v1::telemetry_service_server::{TelemetryService, TelemetryServiceServer};
use trident_proto::v1::{
    GetBusStatusRequest, GetBusStatusResponse, GetLastErrorRequest, GetLastErrorResponse,
    ListOperationsRequest, ListOperationsResponse, RecordKind, StreamEvent, WatchErrorsRequest,
    WatchErrorsResponse, WatchLogsRequest, WatchLogsResponse, WatchOptions, WatchProgressRequest,
    WatchProgressResponse, WatchRequest, WatchResponse, WatchTracesRequest, WatchTracesResponse,
};

use crate::bus::{Bus, Subscription};
use crate::error::TelemetryError;

/// A boxed stream of responses.
type Responses<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// The gRPC service over a bus.
#[derive(Clone, Debug)]
pub struct TelemetryServer {
    bus: Bus,
}

impl TelemetryServer {
    /// Serves this bus.
    pub fn new(bus: Bus) -> Self {
        TelemetryServer { bus }
    }

    /// The tonic service, ready to add to a router.
    pub fn into_service(self) -> TelemetryServiceServer<TelemetryServer> {
        TelemetryServiceServer::new(self)
    }

    fn watch<T, F>(
        &self,
        options: Option<WatchOptions>,
        kinds: Vec<RecordKind>,
        wrap: F,
    ) -> Result<Response<Responses<T>>, Status>
    where
        T: Send + 'static,
        F: Fn(Vec<StreamEvent>) -> T + Send + 'static,
    {
        let options = options.unwrap_or_default();
        validate(&options)?;
        let batches = self.bus.subscribe_batches(Subscription { options, kinds });
        Ok(Response::new(Box::pin(
            batches.map(move |events| Ok(wrap(events))),
        )))
    }
}

impl Bus {
    /// The `TelemetryService` of this bus, ready to add to a tonic router
    /// (Watch streams send records without re-encoding them).
    pub fn service(&self) -> TelemetryGrpc {
        TelemetryGrpc::new(self.clone())
    }
}

/// Rejects malformed options with a clear message.
pub(crate) fn validate(options: &WatchOptions) -> Result<(), Status> {
    if let Some(after) = &options.after
        && uuid::Uuid::parse_str(&after.run_id).is_err()
    {
        return Err(TelemetryError::InvalidRequest(format!(
            "cursor run_id {:?} is not a daemon run id (UUID)",
            after.run_id
        ))
        .into());
    }
    if trident_proto::v1::LogLevel::try_from(options.min_level).is_err() {
        return Err(TelemetryError::InvalidRequest(format!(
            "min_level {} is not a LogLevel",
            options.min_level
        ))
        .into());
    }
    Ok(())
}

/// Record kinds of a Watch request (unknown values are rejected).
pub(crate) fn kinds_of(values: &[i32]) -> Result<Vec<RecordKind>, Status> {
    values
        .iter()
        .map(|v| {
            RecordKind::try_from(*v).map_err(|_| {
                TelemetryError::InvalidRequest(format!("{v} is not a RecordKind")).into()
            })
        })
        .collect()
}

#[tonic::async_trait]
impl TelemetryService for TelemetryServer {
    type WatchLogsStream = Responses<WatchLogsResponse>;
    type WatchTracesStream = Responses<WatchTracesResponse>;
    type WatchProgressStream = Responses<WatchProgressResponse>;
    type WatchErrorsStream = Responses<WatchErrorsResponse>;
    type WatchStream = Responses<WatchResponse>;

    async fn watch_logs(
        &self,
        request: Request<WatchLogsRequest>,
    ) -> Result<Response<Self::WatchLogsStream>, Status> {
        self.watch(
            request.into_inner().options,
            vec![RecordKind::Log],
            |events| WatchLogsResponse { events },
        )
    }

    async fn watch_traces(
        &self,
        request: Request<WatchTracesRequest>,
    ) -> Result<Response<Self::WatchTracesStream>, Status> {
        self.watch(
            request.into_inner().options,
            vec![RecordKind::Span],
            |events| WatchTracesResponse { events },
        )
    }

    async fn watch_progress(
        &self,
        request: Request<WatchProgressRequest>,
    ) -> Result<Response<Self::WatchProgressStream>, Status> {
        self.watch(
            request.into_inner().options,
            vec![RecordKind::Progress, RecordKind::Operation],
            |events| WatchProgressResponse { events },
        )
    }

    async fn watch_errors(
        &self,
        request: Request<WatchErrorsRequest>,
    ) -> Result<Response<Self::WatchErrorsStream>, Status> {
        self.watch(
            request.into_inner().options,
            vec![RecordKind::Error],
            |events| WatchErrorsResponse { events },
        )
    }

    async fn watch(
        &self,
        request: Request<WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let request = request.into_inner();
        let kinds = kinds_of(&request.kinds)?;
        TelemetryServer::watch(self, request.options, kinds, |events| WatchResponse {
            events,
        })
    }

    async fn get_last_error(
        &self,
        _: Request<GetLastErrorRequest>,
    ) -> Result<Response<GetLastErrorResponse>, Status> {
        Ok(Response::new(GetLastErrorResponse {
            error: self.bus.last_error(),
        }))
    }

    async fn get_bus_status(
        &self,
        _: Request<GetBusStatusRequest>,
    ) -> Result<Response<GetBusStatusResponse>, Status> {
        Ok(Response::new(self.bus.status()))
    }

    async fn list_operations(
        &self,
        _: Request<ListOperationsRequest>,
    ) -> Result<Response<ListOperationsResponse>, Status> {
        Ok(Response::new(ListOperationsResponse {
            operations: self.bus.operations(),
        }))
    }
}
