//! The one way to reach a Trident gRPC server on a Unix socket (feature
//! `client`): the CLI, the end-to-end tests and the benchmarks connect
//! through here.
//!
//! gRPC over a Unix socket still needs an HTTP/2 authority; it is
//! `localhost`, the value the daemon and non-Rust clients (Python grpcio's
//! `grpc.default_authority`) agree on. The URI's host is otherwise unused:
//! the connector decides where bytes go.

use std::path::PathBuf;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::{Interceptor, interceptor::InterceptedService};
use tonic::transport::{Channel, Endpoint, Error};
use tonic::{Request, Status};

use crate::ADDITIONS_HEADER;

/// The URI of every Unix-socket endpoint (its authority is what servers see).
pub const UDS_URI: &str = "http://localhost";

/// An endpoint for a Unix-socket connection, to tune (timeouts, window
/// sizes) before [`connect_uds`].
pub fn uds_endpoint() -> Endpoint {
    Endpoint::from_static(UDS_URI)
}

/// Connects `endpoint` to the server on the Unix socket `socket`.
///
/// The `io::Error` of a failed connect (no socket, permission denied,
/// refused) stays in the returned error's source chain, so callers can
/// tell these apart.
pub async fn connect_uds(endpoint: Endpoint, socket: impl Into<PathBuf>) -> Result<Channel, Error> {
    let socket: PathBuf = socket.into();
    endpoint
        .connect_with_connector(tower::service_fn(move |_: http::Uri| {
            let socket = socket.clone();
            async move { UnixStream::connect(socket).await.map(TokioIo::new) }
        }))
        .await
}

/// A channel to the server on the Unix socket `socket`, with tonic's
/// default endpoint settings.
pub async fn uds_channel(socket: impl Into<PathBuf>) -> Result<Channel, Error> {
    connect_uds(uds_endpoint(), socket).await
}

/// A channel whose every request opts in to additions (see [`opt_in`]).
pub type OptedInChannel = InterceptedService<Channel, OptIn>;

/// Adds the [`ADDITIONS_HEADER`] to every request that does not already
/// carry one (a request's own header wins, so one call can ask for less).
#[derive(Debug, Clone)]
pub struct OptIn(MetadataValue<Ascii>);

impl Interceptor for OptIn {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if !request.metadata().contains_key(ADDITIONS_HEADER) {
            request
                .metadata_mut()
                .insert(ADDITIONS_HEADER, self.0.clone());
        }
        Ok(request)
    }
}

/// Wraps `channel` so every call opts in to `names` (a comma list of
/// `ADDITION_*` names, e.g. [`crate::ADDITION_ALL`]).
pub fn opt_in(channel: Channel, names: &'static str) -> OptedInChannel {
    InterceptedService::new(channel, OptIn(MetadataValue::from_static(names)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_socket_keeps_its_io_error_in_the_chain() {
        let dir = std::env::temp_dir().join(format!("trident-proto-{}", std::process::id()));
        let err = uds_channel(dir.join("absent.sock"))
            .await
            .expect_err("no server");
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&err);
        let mut kind = None;
        while let Some(e) = source {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                kind = Some(io.kind());
            }
            source = e.source();
        }
        assert_eq!(kind, Some(std::io::ErrorKind::NotFound));
    }
}
