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

/// Default number of retries of one download.
pub const DEFAULT_DOWNLOAD_RETRIES: u32 = 10;
/// Default wait before the first retry.
pub const DEFAULT_RETRY_BACKOFF: Duration = Duration::from_millis(500);
/// Default cap on the wait between two retries.
pub const DEFAULT_RETRY_BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Default time after the start of a download past which no retry starts.
pub const DEFAULT_DOWNLOAD_DEADLINE: Duration = Duration::from_secs(60 * 60);
/// Default number of re-reads from byte 0 a server without ranges gets.
pub const DEFAULT_RESTARTS_WITHOUT_RANGES: u32 = 2;

/// How a broken `http(s)://` download or `oci://` blob pull is resumed:
/// after a dropped connection, a stall (no byte for
/// [`HttpTimeouts::read`]), a body shorter than its `Content-Length` or a
/// 5xx answer, the source asks for the rest (`Range: bytes=N-`, with
/// `If-Range` so a file that changed is never mixed in) after a jittered
/// backoff, within these bounds. The layers above see one unbroken stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumePolicy {
    /// Retries of one download, whatever their reason; 0: the first
    /// failure fails the download (the behaviour before resuming).
    pub max_retries: u32,
    /// Wait before the first retry; each later one waits twice the one
    /// before, up to `max_backoff`, the second half of each wait random
    /// (so many hosts that lost one server do not come back in step).
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    /// No retry starts once the download has run this long (a download
    /// that keeps receiving is never cut by it).
    pub deadline: Duration,
    /// Of the retries, how many may re-read the file from byte 0 because
    /// the server ignores `Range` (each re-read downloads again what was
    /// already delivered, and skips it); past them the download fails
    /// saying the server does not serve ranges.
    pub max_restarts_without_ranges: u32,
}

impl Default for ResumePolicy {
    fn default() -> Self {
        ResumePolicy {
            max_retries: DEFAULT_DOWNLOAD_RETRIES,
            initial_backoff: DEFAULT_RETRY_BACKOFF,
            max_backoff: DEFAULT_RETRY_BACKOFF_MAX,
            deadline: DEFAULT_DOWNLOAD_DEADLINE,
            max_restarts_without_ranges: DEFAULT_RESTARTS_WITHOUT_RANGES,
        }
    }
}

/// One retry of a download, as the source reports it to its
/// [`RetryObserver`] (on the thread that reads the source, so the record
/// lands in the reading operation's span).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The source's URL as given, credentials and all: the observer
    /// redacts it before it is logged.
    pub url: String,
    /// 1 for the first retry of this download.
    pub attempt: u32,
    /// The policy's bound on `attempt`.
    pub max_retries: u32,
    /// The byte the download resumes at: what was delivered so far.
    pub offset: u64,
    /// The download's length, when the server announced it.
    pub total: Option<u64>,
    /// Why: the failure that broke the download, or that the server
    /// ignored the range asked for.
    pub reason: String,
    /// The wait before the request.
    pub delay: Duration,
    /// The server ignored `Range`: the file is read again from byte 0
    /// and its first `offset` bytes (already delivered) are skipped.
    pub restart: bool,
}

/// Who hears of each retry ([`RetryNotice`]); none by default. The daemon's
/// engine logs each as a warning on its telemetry bus, so retries show in
/// `trident watch` and `trident logs`.
#[derive(Clone, Default)]
pub struct RetryObserver(Option<Arc<ObserveRetry>>);

/// What a [`RetryObserver`] calls.
type ObserveRetry = dyn Fn(&RetryNotice) + Send + Sync;

impl RetryObserver {
    pub fn new(observe: impl Fn(&RetryNotice) + Send + Sync + 'static) -> Self {
        RetryObserver(Some(Arc::new(observe)))
    }

    pub(crate) fn notify(&self, notice: &RetryNotice) {
        if let Some(observe) = &self.0 {
            observe(notice);
        }
    }
}

impl std::fmt::Debug for RetryObserver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "RetryObserver(set)"
        } else {
            "RetryObserver(none)"
        })
    }
}

/// The same observer (clones of one), or none on both sides.
impl PartialEq for RetryObserver {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for RetryObserver {}

/// What opening a source needs besides its URL. The default: the default
/// timeouts and resume policy, anonymous registry pulls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceOptions {
    pub http_timeouts: HttpTimeouts,
    /// How broken `http(s)://` downloads and `oci://` pulls are resumed.
    pub resume: ResumePolicy,
    /// Who hears of each retry.
    pub on_retry: RetryObserver,
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
