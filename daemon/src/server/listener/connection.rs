//! Accepted connections: each carries its peer's credentials and access
//! decision (made once, at accept) and holds the daemon alive while open.

use std::{
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::{Stream, StreamExt, stream};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{UnixListener, UnixStream},
};
use tonic::transport::server::Connected;

use crate::server::{
    idle::{Activity, ActivityGuard},
    security::{AccessPolicy, PeerAccess, PeerInfo},
};

/// One accepted connection.
#[derive(Debug)]
pub struct PeerStream {
    inner: UnixStream,
    info: PeerInfo,
    _active: ActivityGuard,
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
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for PeerStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
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
                        _active: activity.connection_guard(),
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
