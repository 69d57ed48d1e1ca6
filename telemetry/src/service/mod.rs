//! `TelemetryService` as one tower service over a bus. Each Watch RPC only
//! registers a subscriber and streams its batches as the ring's bytes
//! (`encoded`: no decode and re-encode); the unary calls read bus state
//! (`GetLastError` falls back to its owner's [`LastErrorFallback`]);
//! `ReadUpstreamLog` reads upstream Trident's full log, not the bus.
//! `TelemetryGrpc::call` is the one table of methods, and of the record
//! kinds each Watch method delivers; a test checks that it routes every
//! method the proto declares.

mod encoded;
mod last_error;
mod unary;
mod upstream_log;

pub use encoded::EncodedResponse;
pub use last_error::LastErrorFallback;

use std::convert::Infallible;
use std::future::ready;
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::{Code, Status};
use trident_proto::v1::telemetry_service_server::SERVICE_NAME;
use trident_proto::v1::{
    GetBusStatusRequest, GetLastErrorRequest, ListBootsRequest, ListBootsResponse,
    ListOperationsRequest, ListOperationsResponse, RecordKind, WatchErrorsRequest,
    WatchLogsRequest, WatchOptions, WatchProgressRequest, WatchRequest, WatchTracesRequest,
};

use crate::bus::Bus;
use crate::error::TelemetryError;
use encoded::serve_watch;
use unary::serve_unary;

/// `TelemetryService`, ready to add to a tonic router.
#[derive(Clone, Debug)]
pub struct TelemetryGrpc {
    bus: Bus,
    last_error_fallback: Option<Arc<dyn LastErrorFallback>>,
    upstream_log: Option<Arc<Path>>,
}

impl TelemetryGrpc {
    /// Serves this bus.
    pub fn new(bus: Bus) -> Self {
        TelemetryGrpc {
            bus,
            last_error_fallback: None,
            upstream_log: None,
        }
    }

    /// `ReadUpstreamLog` reads upstream Trident's full log at `path`
    /// (without it, the answer is an empty "not found").
    pub fn with_upstream_log(mut self, path: impl AsRef<Path>) -> Self {
        self.upstream_log = Some(Arc::from(path.as_ref()));
        self
    }

    /// `GetLastError` answers from `fallback` when the bus has no error
    /// record (the daemon passes its datastore's Host Status `lastError`).
    pub fn with_last_error_fallback(mut self, fallback: Arc<dyn LastErrorFallback>) -> Self {
        self.last_error_fallback = Some(fallback);
        self
    }
}

impl Bus {
    /// The `TelemetryService` of this bus, ready to add to a tonic router
    /// (Watch streams send records without re-encoding them).
    pub fn service(&self) -> TelemetryGrpc {
        TelemetryGrpc::new(self.clone())
    }
}

impl NamedService for TelemetryGrpc {
    const NAME: &'static str = SERVICE_NAME;
}

impl tower::Service<http::Request<Body>> for TelemetryGrpc {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let bus = self.bus.clone();
        let method = request.uri().path().rsplit('/').next().unwrap_or_default();
        match method {
            "WatchLogs" => serve_watch(bus, request, |r: WatchLogsRequest| {
                Ok((r.options, vec![RecordKind::Log]))
            }),
            "WatchTraces" => serve_watch(bus, request, |r: WatchTracesRequest| {
                Ok((r.options, vec![RecordKind::Span]))
            }),
            "WatchProgress" => serve_watch(bus, request, |r: WatchProgressRequest| {
                Ok((r.options, vec![RecordKind::Progress, RecordKind::Operation]))
            }),
            "WatchErrors" => serve_watch(bus, request, |r: WatchErrorsRequest| {
                Ok((r.options, vec![RecordKind::Error]))
            }),
            "Watch" => serve_watch(bus, request, |r: WatchRequest| {
                Ok((r.options, kinds_of(&r.kinds)?))
            }),
            "GetLastError" => {
                let fallback = self.last_error_fallback.clone();
                serve_unary(request, move |_: GetLastErrorRequest| {
                    last_error::answer(bus.clone(), fallback.clone())
                })
            }
            "GetBusStatus" => serve_unary(request, move |_: GetBusStatusRequest| {
                ready(Ok(bus.status()))
            }),
            "ListOperations" => serve_unary(request, move |_: ListOperationsRequest| {
                ready(Ok(ListOperationsResponse {
                    operations: bus.operations(),
                }))
            }),
            "ListBoots" => serve_unary(request, move |_: ListBootsRequest| {
                ready(Ok(ListBootsResponse { boots: bus.boots() }))
            }),
            "ReadUpstreamLog" => upstream_log::serve(self.upstream_log.clone(), request),
            _ => Box::pin(async { Ok(Status::new(Code::Unimplemented, "").into_http()) }),
        }
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
fn kinds_of(values: &[i32]) -> Result<Vec<RecordKind>, Status> {
    values
        .iter()
        .map(|v| {
            RecordKind::try_from(*v).map_err(|_| {
                TelemetryError::InvalidRequest(format!("{v} is not a RecordKind")).into()
            })
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use prost::Message;
    use tower::Service;

    use super::*;
    use crate::config::BusConfig;

    /// `TelemetryService`'s methods as the proto declares them, from the
    /// descriptor set the daemon also serves for reflection.
    fn methods_in_the_proto() -> Vec<String> {
        let set =
            prost_types::FileDescriptorSet::decode(trident_proto::FILE_DESCRIPTOR_SET).unwrap();
        let (package, service) = SERVICE_NAME.rsplit_once('.').unwrap();
        set.file
            .iter()
            .filter(|file| file.package() == package)
            .flat_map(|file| &file.service)
            .filter(|s| s.name() == service)
            .flat_map(|s| s.method.iter().map(|m| m.name().to_owned()))
            .collect()
    }

    /// The `grpc-status` a call of `method` answers with in its headers
    /// (a trailers-only answer), or None when the call was served.
    async fn status_in_the_headers(method: &str) -> Option<String> {
        let mut service = TelemetryGrpc::new(Bus::in_memory(BusConfig::default()));
        // One gRPC frame holding an empty (all-default) request message.
        let body = Body::new(String::from("\0\0\0\0\0"));
        let request = http::Request::builder()
            .method("POST")
            .uri(format!("/{SERVICE_NAME}/{method}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(body)
            .unwrap();
        let response = service.call(request).await.unwrap();
        let status = response.headers().get("grpc-status");
        status.map(|s| s.to_str().unwrap().to_owned())
    }

    /// The dispatch in `call` matches method names as strings (it serves
    /// pre-encoded records, without tonic's generated server): a method
    /// added to the proto and not routed would answer UNIMPLEMENTED.
    #[tokio::test]
    async fn every_method_the_proto_declares_is_routed() {
        let methods = methods_in_the_proto();
        // The descriptor lookup found the service (not an empty list).
        assert!(
            methods.iter().any(|m| m == "Watch") && methods.iter().any(|m| m == "GetLastError"),
            "{methods:?}"
        );
        for method in &methods {
            let status = status_in_the_headers(method).await;
            assert_ne!(
                status.as_deref(),
                Some("12"),
                "TelemetryService.{method} is in the proto but not routed in TelemetryGrpc::call"
            );
        }
        // And the check tells: a method the service does not route is
        // UNIMPLEMENTED.
        assert_eq!(
            status_in_the_headers("NoSuchMethod").await.as_deref(),
            Some("12")
        );
    }
}
