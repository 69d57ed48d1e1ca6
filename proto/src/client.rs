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
use tonic::transport::{Channel, Endpoint, Error};

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
