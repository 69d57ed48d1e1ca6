//! Upstream Trident's protocol (`--protocol upstream`), as its Go code
//! speaks it (`tools/pkg/rcp/proxy/proxy.go`, `client/listen.go`): the host's
//! agent dials the orchestrator's listener over TLS 1.3 with mutual TLS and
//! no ALPN; once the handshake is done the agent connects to tridentd's
//! Unix socket and copies bytes both ways until either side closes, then
//! dials again. One connection carries one byte stream (one gRPC
//! connection), so a host serves one orchestrator connection at a time.
//!
//! The listener parks each authenticated connection until a client claims
//! it ([`RawSlot`]). While parked it reads what tridentd already sent (an
//! HTTP/2 server speaks first) into a prefix handed over with the stream,
//! and notices the agent closing it. The newest connection of a host
//! replaces a parked older one: an agent only dials after its previous
//! connection closed, so an older parked one is stale.

use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::sync::oneshot;

use crate::error::RcpError;
use crate::sever::{LiveToken, SeverOnDrop};
use crate::tunnel::BoxedStream;

/// How long a claim waits for the host's agent to park a connection.
pub const CLAIM_TIMEOUT: Duration = Duration::from_secs(30);
const CLAIM_POLL: Duration = Duration::from_millis(20);

/// The agent's side of one connection: connect to tridentd, then copy
/// until either side closes (as upstream's `handleClientConnection`).
/// Returns why it ended.
pub async fn carry<IO>(mut remote: IO, socket: &Path) -> Result<String, String>
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let mut local = UnixStream::connect(socket)
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
    match tokio::io::copy_bidirectional(&mut remote, &mut local).await {
        Ok(_) => Ok("connection closed".to_owned()),
        // With TLS 1.3 the listener checks our certificate after our side
        // of the handshake: its refusal arrives as an alert on first read.
        Err(err) if received_alert(&err) => Err(format!(
            "refused by the orchestrator: {}",
            crate::tls::describe_tls_error(&err)
        )),
        Err(err) => Ok(format!("connection ended: {err}")),
    }
}

fn received_alert(err: &io::Error) -> bool {
    err.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .is_some_and(|tls| matches!(tls, rustls::Error::AlertReceived(_)))
}

/// A claim on a parked connection: the parked task answers with the stream.
type Claim = oneshot::Sender<BoxedStream>;

struct Parked {
    id: u64,
    claim: oneshot::Sender<Claim>,
}

/// A host's parked connection, if any.
#[derive(Default)]
pub struct RawSlot {
    parked: Mutex<Option<Parked>>,
    /// Connections parked so far (also the next parked one's id).
    next_id: Mutex<u64>,
}

impl std::fmt::Debug for RawSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawSlot").finish_non_exhaustive()
    }
}

impl RawSlot {
    /// Parks `stream` (replacing an older parked connection) until it is
    /// claimed or closes; returns `true` when it closed while parked.
    /// `token` goes with the stream (the listener's liveness of this
    /// connection, see `crate::sever`), and so does `end`, which closes the
    /// connection once the claimed stream is dropped.
    pub(crate) async fn park<S>(
        self: &Arc<Self>,
        mut stream: S,
        token: LiveToken,
        end: SeverOnDrop,
    ) -> bool
    where
        S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
    {
        let (claim_tx, mut claim_rx) = oneshot::channel::<Claim>();
        let id = {
            let mut next = self.next_id.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        // Dropping the older one's sender ends its task, closing it.
        *self.parked.lock().unwrap_or_else(PoisonError::into_inner) = Some(Parked {
            id,
            claim: claim_tx,
        });
        let mut prefix = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            tokio::select! {
                claim = &mut claim_rx => {
                    if let Ok(reply) = claim {
                        let _ = reply.send(Box::new(Prefixed { prefix, at: 0, inner: stream, _token: Some(token), _end: Some(end) }));
                    }
                    // Claimed, or replaced by a newer connection.
                    return false;
                }
                read = stream.read(&mut buf) => match read {
                    Ok(n) if n > 0 => prefix.extend_from_slice(&buf[..n]),
                    _ => {
                        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
                        if parked.as_ref().is_some_and(|p| p.id == id) {
                            *parked = None;
                        }
                        return true;
                    }
                },
            }
        }
    }

    /// How many connections were parked so far.
    pub fn arrivals(&self) -> u64 {
        *self.next_id.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the parked connection, waiting up to [`CLAIM_TIMEOUT`] for the
    /// agent to park one (it dials again after each close).
    pub async fn claim(&self) -> Result<BoxedStream, RcpError> {
        let deadline = tokio::time::Instant::now() + CLAIM_TIMEOUT;
        loop {
            let parked = self
                .parked
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(parked) = parked {
                let (reply, answer) = oneshot::channel();
                if parked.claim.send(reply).is_ok()
                    && let Ok(stream) = answer.await
                {
                    return Ok(stream);
                }
                continue;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(RcpError::Config(format!(
                    "no connection from the host within {}s (upstream protocol: one stream at a time)",
                    CLAIM_TIMEOUT.as_secs()
                )));
            }
            tokio::time::sleep(CLAIM_POLL).await;
        }
    }
}

/// A stream that first yields the bytes read while it was parked (also
/// used, with no prefix, for a tunnel's tracked streams).
pub(crate) struct Prefixed<S> {
    prefix: Vec<u8>,
    at: usize,
    inner: S,
    /// Keeps the connection's liveness pending while the stream exists.
    _token: Option<LiveToken>,
    /// Upstream protocol: ends the connection with the stream.
    _end: Option<SeverOnDrop>,
}

impl<S> Prefixed<S> {
    /// `inner` as it is, holding `token` while it exists.
    pub(crate) fn tracked(inner: S, token: LiveToken) -> Self {
        Prefixed {
            prefix: Vec::new(),
            at: 0,
            inner,
            _token: Some(token),
            _end: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Prefixed<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.at < self.prefix.len() {
            let n = (self.prefix.len() - self.at).min(buf.remaining());
            let at = self.at;
            buf.put_slice(&self.prefix[at..at + n]);
            self.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Prefixed<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
