//! How a background operation keeps the daemon from exiting as idle,
//! without servicing knowing who counts: the composition root (`app.rs`)
//! hands the engine an implementation (the server's activity counter).

use std::fmt;

/// Something that counts running work so the daemon does not exit under it.
pub trait KeepAlive: Send + Sync + fmt::Debug {
    /// Marks `what` as running until the returned guard is dropped.
    fn hold(&self, what: &'static str) -> KeepAliveGuard;
}

/// Keeps the work counted while held.
#[must_use = "the daemon may exit as idle as soon as the guard is dropped"]
pub struct KeepAliveGuard {
    _inner: Box<dyn Send>,
}

impl KeepAliveGuard {
    /// Wraps whatever guard the implementation uses (dropped with this one).
    pub fn new(inner: impl Send + 'static) -> Self {
        KeepAliveGuard {
            _inner: Box::new(inner),
        }
    }
}

impl fmt::Debug for KeepAliveGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeepAliveGuard")
    }
}
