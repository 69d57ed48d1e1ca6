//! Closing a host's connection from outside the task that drives it, and
//! knowing when it and every stream through it are gone.
//!
//! A replaced tunnel must really end: dropping the HTTP/2 connection's
//! future is not enough (hyper keeps the connection alive while streams
//! through it are open, so a `trident logs -f` through a replaced tunnel
//! went on receiving records). [`Severable`] shuts the TCP socket down
//! (`shutdown(2)` on a duplicate of its descriptor), which ends the TLS
//! session, the HTTP/2 connection and every stream at once; [`Liveness`]
//! resolves when the connection's task and every stream opened through it
//! (each holds a [`LiveToken`]) have been dropped, so a `disconnected` event is only sent
//! after everything it reports is closed.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

/// A handle on a host's TCP connection that can cut it.
#[derive(Debug)]
pub(crate) struct Severable {
    /// A duplicate descriptor of the socket: `shutdown` acts on the socket
    /// itself, and the duplicate stays valid whatever the driving task does.
    fd: OwnedFd,
}

impl Severable {
    pub(crate) fn new(tcp: &TcpStream) -> io::Result<Severable> {
        Ok(Severable {
            fd: tcp.as_fd().try_clone_to_owned()?,
        })
    }

    /// Shuts the connection down both ways: the driving task's next read
    /// sees the end, its writes fail, the peer sees the close.
    pub(crate) fn sever(&self) {
        let _ = nix::sys::socket::shutdown(self.fd.as_raw_fd(), nix::sys::socket::Shutdown::Both);
    }

    /// A second handle on the same connection.
    pub(crate) fn try_clone(&self) -> io::Result<Severable> {
        Ok(Severable {
            fd: self.fd.try_clone()?,
        })
    }

    /// Whether the peer has closed its side (or the socket failed): such a
    /// connection is ending anyway, and a newcomer does not replace it.
    pub(crate) fn peer_closed(&self) -> bool {
        // nix does not name POLLRDHUP (the peer shut its side down); every
        // event asked for here, and the ones poll adds by itself (HUP, ERR,
        // NVAL), means the connection is closing or broken.
        let flags = PollFlags::from_bits_retain(nix::libc::POLLRDHUP)
            | PollFlags::POLLHUP
            | PollFlags::POLLERR;
        let mut fds = [PollFd::new(self.fd.as_fd(), flags)];
        !matches!(poll(&mut fds, PollTimeout::ZERO), Ok(0))
    }
}

/// Severs its connection when dropped. An upstream-protocol connection
/// carries one stream: when the client's stream ends, so must the
/// connection, or the host's agent (which dials again only after a close)
/// never sees the end. Dropping the stream alone does not close the socket,
/// since the listener keeps a [`Severable`] (a duplicate descriptor) of it.
#[derive(Debug)]
pub(crate) struct SeverOnDrop(pub(crate) Severable);

impl Drop for SeverOnDrop {
    fn drop(&mut self) {
        self.0.sever();
    }
}

/// Held by a connection's task and by each stream through it.
pub(crate) type LiveToken = mpsc::Sender<()>;
/// Lets a host open new streams without keeping the connection "alive".
pub(crate) type WeakToken = mpsc::WeakSender<()>;

/// Resolves once every [`LiveToken`] of a connection is dropped.
#[derive(Debug)]
pub(crate) struct Liveness(mpsc::Receiver<()>);

/// A new connection's token and its [`Liveness`].
pub(crate) fn liveness() -> (LiveToken, Liveness) {
    let (token, done) = mpsc::channel(1);
    (token, Liveness(done))
}

impl Liveness {
    /// Whether the connection and all its streams are gone already.
    pub(crate) fn is_done(&mut self) -> bool {
        matches!(
            self.0.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        )
    }

    /// Waits until they are, at most `limit`; whether they are.
    pub(crate) async fn wait(mut self, limit: Duration) -> bool {
        // Nobody sends on the channel: recv returns None once every
        // sender is gone.
        tokio::time::timeout(limit, self.0.recv()).await.is_ok()
    }
}
