//! The multiplexer over one authenticated TLS session: HTTP/2, where the
//! orchestrator is the HTTP/2 client and every connection it wants to make
//! to the host's tridentd is one CONNECT stream. The agent (HTTP/2 server,
//! although it dialled the TCP connection) answers each CONNECT by opening
//! a fresh connection to tridentd's Unix socket and copying bytes both ways.
//! HTTP/2 PING frames on both sides bound how long a dead peer goes unseen.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;

use crate::error::RcpError;

/// Most concurrent connections one orchestrator may carry to one host.
const MAX_STREAMS: u32 = 1024;
/// The authority of every CONNECT request (the agent decides where bytes
/// go; this only has to be well-formed).
const CONNECT_AUTHORITY: &str = "tridentd:0";

/// HTTP/2 keepalive: a PING every `interval`; no answer within `timeout`
/// closes the tunnel, so a dead peer is noticed within interval + timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    pub interval: Duration,
    pub timeout: Duration,
}

impl Default for Keepalive {
    fn default() -> Self {
        Keepalive {
            interval: Duration::from_secs(10),
            timeout: Duration::from_secs(20),
        }
    }
}

/// The orchestrator's end of a tunnel: opens CONNECT streams.
pub type StreamOpener = SendRequest<Empty<Bytes>>;

/// A byte stream to a host's tridentd, whatever the protocol carries it.
pub trait ByteStream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> ByteStream for T {}

/// One stream to a host's tridentd.
pub type BoxedStream = Box<dyn ByteStream>;

/// Starts the orchestrator's (client) HTTP/2 side over `io`; the returned
/// future drives the connection and ends when the tunnel closes.
pub async fn client_handshake<IO>(
    io: IO,
    keepalive: Keepalive,
) -> Result<
    (
        StreamOpener,
        hyper::client::conn::http2::Connection<TokioIo<IO>, Empty<Bytes>, TokioExecutor>,
    ),
    RcpError,
>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(keepalive.interval)
        .keep_alive_timeout(keepalive.timeout)
        .keep_alive_while_idle(true)
        .adaptive_window(true)
        .handshake(TokioIo::new(io))
        .await?;
    Ok((sender, connection))
}

/// Opens one stream to the host's tridentd through the tunnel.
pub async fn open_stream(opener: &StreamOpener) -> Result<BoxedStream, RcpError> {
    let mut sender = opener.clone();
    sender.ready().await?;
    let request = Request::builder()
        .method(Method::CONNECT)
        .uri(CONNECT_AUTHORITY)
        .body(Empty::new())
        .map_err(|e| RcpError::Config(format!("CONNECT request: {e}")))?;
    let response = sender.send_request(request).await?;
    if response.status() != StatusCode::OK {
        return Err(RcpError::StreamRefused(response.status().as_u16()));
    }
    Ok(Box::new(TokioIo::new(hyper::upgrade::on(response).await?)))
}

/// Serves the agent's (server) HTTP/2 side over `io` until the tunnel
/// closes: each CONNECT becomes a new connection to `socket`.
pub async fn serve_host<IO>(io: IO, keepalive: Keepalive, socket: PathBuf) -> Result<(), RcpError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let socket = Arc::new(socket);
    let service = service_fn(move |request| forward(request, Arc::clone(&socket)));
    hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .keep_alive_interval(keepalive.interval)
        .keep_alive_timeout(keepalive.timeout)
        .max_concurrent_streams(MAX_STREAMS)
        .adaptive_window(true)
        .serve_connection(TokioIo::new(io), service)
        .await?;
    Ok(())
}

fn status(code: StatusCode) -> Response<Empty<Bytes>> {
    let mut response = Response::new(Empty::new());
    *response.status_mut() = code;
    response
}

/// Answers one CONNECT: connect to tridentd first, so a missing daemon is
/// a 502 the orchestrator sees at once, then copy bytes in a task of its own.
async fn forward(
    request: Request<Incoming>,
    socket: Arc<PathBuf>,
) -> Result<Response<Empty<Bytes>>, Infallible> {
    if request.method() != Method::CONNECT {
        return Ok(status(StatusCode::METHOD_NOT_ALLOWED));
    }
    let local = match UnixStream::connect(socket.as_path()).await {
        Ok(local) => local,
        Err(err) => {
            tracing::warn!(socket = %socket.display(), error = %err, "cannot reach tridentd for a tunnelled connection");
            return Ok(status(StatusCode::BAD_GATEWAY));
        }
    };
    tokio::spawn(async move {
        match hyper::upgrade::on(request).await {
            Ok(upgraded) => splice(Box::new(TokioIo::new(upgraded)), local, &socket).await,
            Err(err) => tracing::debug!(error = %err, "tunnelled stream closed before it opened"),
        }
    });
    Ok(status(StatusCode::OK))
}

/// Copies bytes both ways until either side closes.
pub async fn splice(mut remote: BoxedStream, mut local: UnixStream, socket: &Path) {
    if let Err(err) = tokio::io::copy_bidirectional(&mut remote, &mut local).await {
        tracing::debug!(socket = %socket.display(), error = %err, "tunnelled connection ended");
    }
    // The local client sees the end before the tunnel counts this stream
    // as gone (a `disconnected` event waits for that).
    drop(local);
    drop(remote);
}
