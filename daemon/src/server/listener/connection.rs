//! Accepted connections: each carries its peer's credentials and access
//! decision (made once, at accept). Once it has sent a request it holds
//! the daemon alive while open; before that it is only "handshaking" and
//! is closed after [`HANDSHAKE_TIMEOUT`].

use std::{
    future::Future,
    io,
    pin::Pin,
    sync::{Arc, atomic::Ordering},
    task::{Context, Poll},
    time::Duration,
};

use futures::{Stream, StreamExt, stream};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{UnixListener, UnixStream},
    time::Sleep,
};
use tonic::transport::server::Connected;

use crate::server::{
    idle::{Activity, ActivityGuard, HandshakeGuard},
    peer::{PeerAccess, PeerInfo},
    security::AccessPolicy,
};

/// How long a new connection may take to send its first request (the
/// HTTP/2 preface, SETTINGS and one HEADERS frame). A connection that
/// sends only the preface, or nothing, is closed when it runs out. Until
/// its first request it is counted in `Activity::handshaking`, apart from
/// active connections, so it does not keep the daemon from exiting idle.
/// Clients that connect before they call (tonic, grpcio) reconnect on
/// their next call.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One accepted connection.
#[derive(Debug)]
pub struct PeerStream {
    inner: UnixStream,
    info: PeerInfo,
    state: ConnectionState,
    activity: Activity,
}

/// Where a connection is in its life.
#[derive(Debug)]
enum ConnectionState {
    /// No request yet: closed when `deadline` fires.
    Handshaking {
        deadline: Pin<Box<Sleep>>,
        _counted: HandshakeGuard,
    },
    /// Has sent a request: keeps the daemon alive while open.
    Established { _active: ActivityGuard },
    /// Timed out in its handshake; every further read or write fails.
    TimedOut,
}

impl PeerStream {
    /// Moves to `Established` once a request was seen, or fails the
    /// connection once the handshake deadline has passed. Polled on every
    /// read and write, so the deadline's timer wakes the connection task.
    fn poll_handshake(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let ConnectionState::Handshaking { deadline, .. } = &mut self.state else {
            return match self.state {
                ConnectionState::TimedOut => Err(handshake_timed_out()),
                _ => Ok(()),
            };
        };
        if self.info.request_seen.load(Ordering::Acquire) {
            self.state = ConnectionState::Established {
                _active: self.activity.connection_guard(),
            };
            return Ok(());
        }
        if deadline.as_mut().poll(cx).is_ready() {
            self.state = ConnectionState::TimedOut;
            tracing::info!(
                uid = self.info.uid,
                pid = self.info.pid,
                timeout = %humantime::format_duration(HANDSHAKE_TIMEOUT),
                "closing a connection that sent no request within the handshake timeout"
            );
            return Err(handshake_timed_out());
        }
        Ok(())
    }
}

fn handshake_timed_out() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "no request within the handshake timeout",
    )
}

impl Connected for PeerStream {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        self.info.clone()
    }
}

impl AsyncRead for PeerStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_handshake(cx)?;
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for PeerStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_handshake(cx)?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_handshake(cx)?;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn identify(stream: &UnixStream, policy: &AccessPolicy) -> PeerInfo {
    match stream.peer_cred() {
        Ok(cred) => {
            let (uid, gid, pid) = (cred.uid(), cred.gid(), cred.pid());
            PeerInfo {
                uid,
                gid,
                pid,
                access: policy.check(uid, gid, pid),
                request_seen: Arc::default(),
            }
        }
        // Fail closed; u32::MAX is the kernel's "no such id".
        Err(error) => PeerInfo {
            uid: u32::MAX,
            gid: u32::MAX,
            pid: None,
            access: PeerAccess::Denied(format!(
                "permission denied: cannot read peer credentials: {error}"
            )),
            request_seen: Arc::default(),
        },
    }
}

/// Every connection accepted on `listeners`, identified and counted active.
pub fn incoming(
    listeners: Vec<UnixListener>,
    policy: Arc<AccessPolicy>,
    activity: Activity,
) -> impl Stream<Item = io::Result<PeerStream>> + Send {
    stream::select_all(listeners.into_iter().map(move |listener| {
        let policy = policy.clone();
        let activity = activity.clone();
        stream::unfold(listener, move |listener| {
            let policy = policy.clone();
            let activity = activity.clone();
            async move {
                let accepted = listener.accept().await.map(|(stream, _)| {
                    let info = identify(&stream, &policy);
                    match &info.access {
                        PeerAccess::Allowed => tracing::info!(
                            uid = info.uid, gid = info.gid, pid = info.pid,
                            "connection accepted"
                        ),
                        PeerAccess::Denied(_) => tracing::info!(
                            uid = info.uid, gid = info.gid, pid = info.pid,
                            required = %policy.requirement(),
                            "connection accepted from a caller that is not allowed; its RPCs will be denied"
                        ),
                    }
                    PeerStream {
                        inner: stream,
                        info,
                        state: ConnectionState::Handshaking {
                            deadline: Box::pin(tokio::time::sleep(HANDSHAKE_TIMEOUT)),
                            _counted: activity.handshake_guard(),
                        },
                        activity: activity.clone(),
                    }
                });
                if let Err(error) = &accepted {
                    tracing::warn!(%error, "accept failed");
                    // Back off so a persistent error (EMFILE) cannot spin the loop.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                Some((accepted, listener))
            }
        })
        .boxed()
    }))
}
