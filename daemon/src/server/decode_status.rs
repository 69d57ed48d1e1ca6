//! Status codes of requests tonic refuses before any handler runs: a
//! request message over the size limit (tonic answers `OUT_OF_RANGE`)
//! becomes `RESOURCE_EXHAUSTED` naming the limit, and a message that is not
//! valid protobuf (tonic answers `INTERNAL`) becomes `INVALID_ARGUMENT`, as
//! daemon/README.md ("Served gRPC services") promises. Handler errors are mapped in
//! `crate::grpc::error_status`; this layer only rewrites tonic's own two
//! answers, recognised by code and message, in trailers-only responses (the
//! request message is decoded before any response is sent). It is part of
//! the transport (a tower layer beside the peer check and the activity
//! count), which knows nothing of the gRPC handlers.

use std::task::{Context, Poll};

use http::HeaderMap;
use tonic::{Code, Status, body::Body};
use tower::{Layer, Service};

/// The largest request message the daemon decodes: tonic's default,
/// named here so the error can say it.
pub const MAX_REQUEST_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// tonic 0.14's message for a length prefix over the limit.
const TONIC_TOO_LARGE: &str = "Error, decoded message length too large";
/// prost's `DecodeError` display, which tonic-prost returns as INTERNAL.
const PROST_DECODE_FAILED: &str = "failed to decode Protobuf message";

/// Tower layer mapping tonic's decode refusals (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct DecodeStatusLayer;

impl<S> Layer<S> for DecodeStatusLayer {
    type Service = DecodeStatusService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        DecodeStatusService { inner }
    }
}

/// Service made by [`DecodeStatusLayer`].
#[derive(Debug, Clone)]
pub struct DecodeStatusService<S> {
    inner: S,
}

impl<S, ReqBody> Service<http::Request<ReqBody>> for DecodeStatusService<S>
where
    S: Service<http::Request<ReqBody>, Response = http::Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = super::ResponseFuture<Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<ReqBody>) -> Self::Future {
        let path = request.uri().path().to_owned();
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await?;
            Ok(match remap(response.headers(), &path) {
                Some(status) => status.into_http(),
                None => response,
            })
        })
    }
}

/// The status to answer instead, if `headers` carry one of tonic's
/// decode refusals.
fn remap(headers: &HeaderMap, path: &str) -> Option<Status> {
    // Cheap check first: most responses carry no status in their headers.
    let code = headers.get("grpc-status")?.as_bytes();
    if code != b"11" && code != b"13" {
        return None;
    }
    let status = Status::from_header_map(headers)?;
    let message = status.message();
    match status.code() {
        Code::OutOfRange if message.starts_with(TONIC_TOO_LARGE) => {
            Some(Status::resource_exhausted(format!(
                "request message too large for {path}: the limit is {MAX_REQUEST_MESSAGE_BYTES} bytes (4 MiB) ({message})"
            )))
        }
        Code::Internal if message.starts_with(PROST_DECODE_FAILED) => Some(
            Status::invalid_argument(format!("malformed request message for {path}: {message}")),
        ),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn headers_of(status: Status) -> HeaderMap {
        status.into_http::<Body>().headers().clone()
    }

    #[test]
    fn only_tonics_two_decode_refusals_are_remapped() {
        let big = headers_of(Status::out_of_range(
            "Error, decoded message length too large: found 5000000 bytes, the limit is: 4194304 bytes",
        ));
        let mapped = remap(&big, "/p").unwrap();
        assert_eq!(mapped.code(), Code::ResourceExhausted);
        assert!(mapped.message().contains("4194304"), "{}", mapped.message());

        let bad = headers_of(Status::internal(
            "failed to decode Protobuf message: invalid wire type",
        ));
        assert_eq!(remap(&bad, "/p").unwrap().code(), Code::InvalidArgument);

        // Our own INTERNAL errors (from error_status.rs) stay as they are.
        let ours = headers_of(Status::internal("[internal/internal] boom (at x.rs:1)"));
        assert!(remap(&ours, "/p").is_none());
    }
}
