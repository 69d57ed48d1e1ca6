//! How image sources are opened: the bounds of `http(s)://` downloads and
//! the registry credentials of `oci://` pulls. A value the caller passes to
//! each open ([`super::CosiSource::open`], [`super::open_url`]), so two
//! callers in one process (two tests, two daemons' worth of settings) can
//! open with different options.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Default bound on the TCP/TLS connection to the image server.
pub const DEFAULT_HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on a stalled download: it fails after this long without
/// any received byte (headers or body).
pub const DEFAULT_HTTP_READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Connect and read timeouts of `http(s)://` image sources (and of
/// `oci://` registries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// Bound on establishing the connection (TCP and TLS).
    pub connect: Duration,
    /// Bound on each wait for bytes from the server.
    pub read: Duration,
}

impl Default for HttpTimeouts {
    fn default() -> Self {
        HttpTimeouts {
            connect: DEFAULT_HTTP_CONNECT_TIMEOUT,
            read: DEFAULT_HTTP_READ_TIMEOUT,
        }
    }
}

/// What opening a source needs besides its URL. The default: the default
/// timeouts, anonymous registry pulls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceOptions {
    pub http_timeouts: HttpTimeouts,
    /// A Docker `config.json` whose credentials `oci://` pulls use for the
    /// registries it lists (read at each pull, so rotated credentials need
    /// no restart); `None`: pulls are anonymous. Unused without the `oci`
    /// feature.
    pub registry_auth_file: Option<PathBuf>,
    /// Once requested, every read of a source opened with these options
    /// fails with [`crate::CosiError::Cancelled`] (a daemon shutting down).
    pub cancel: Cancel,
}

/// A request to stop reading, shared by every clone.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// From now on, reads fail.
    pub fn request(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether reads fail.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The same request (clones of one `Cancel`).
impl PartialEq for Cancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}
