//! One legacy endpoint: a bounded queue of JSON bodies and a thread that
//! POSTs them one by one. The bus subscriber only ever `try_send`s, so a
//! dead or stalling endpoint costs servicing nothing: a full queue drops
//! (counted), a failed POST drops (counted), and the next record is tried
//! again. Each outage is told once (warning) and its end once (with the
//! count lost); when the stream closes, one summary record says what was
//! posted and dropped in all.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use super::NOTICE_TARGET;

/// Bodies waiting per endpoint; beyond this, records are dropped.
pub const QUEUE_CAPACITY: usize = 1024;
/// Longest one POST may take (connect, send, answer), as upstream's logstream.
pub const POST_TIMEOUT: Duration = Duration::from_secs(5);

/// Which legacy stream an endpoint serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legacy {
    PhoneHome,
    LogStream,
    TraceStream,
}

impl Legacy {
    pub fn as_str(self) -> &'static str {
        match self {
            Legacy::PhoneHome => "phonehome",
            Legacy::LogStream => "logstream",
            Legacy::TraceStream => "tracestream",
        }
    }
}

/// Counters shared by the queue side and the posting thread.
#[derive(Debug, Default)]
pub struct Counts {
    pub posted: AtomicU64,
    pub dropped: AtomicU64,
}

/// The queue side of one endpoint. Dropping it closes the stream: the
/// thread posts what is queued (in an outage only the last body, so a
/// stalling endpoint cannot hold it for long), then reports and ends.
#[derive(Debug)]
pub struct Poster {
    queue: mpsc::Sender<String>,
    counts: Arc<Counts>,
    closing: Arc<AtomicBool>,
}

impl Poster {
    /// Starts the posting thread for `url`.
    pub fn start(stream: Legacy, url: String) -> std::io::Result<Poster> {
        let (queue, bodies) = mpsc::channel(QUEUE_CAPACITY);
        let counts = Arc::new(Counts::default());
        let closing = Arc::new(AtomicBool::new(false));
        let thread = PostingThread {
            stream,
            url,
            bodies,
            counts: counts.clone(),
            closing: closing.clone(),
            agent: agent(),
            outage_dropped_at: None,
        };
        std::thread::Builder::new()
            .name(format!("legacy-{}", stream.as_str()))
            .spawn(move || thread.run())?;
        Ok(Poster {
            queue,
            counts,
            closing,
        })
    }

    /// Queues one JSON body; never waits. A full queue drops it (counted).
    pub fn post(&self, body: String) {
        if self.queue.try_send(body).is_err() {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts `n` records this stream missed upstream of the queue (the
    /// bridge's bus subscription fell behind).
    pub fn missed(&self, n: u64) {
        self.counts.dropped.fetch_add(n, Ordering::Relaxed);
    }
}

impl Drop for Poster {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Release);
    }
}

fn agent() -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(POST_TIMEOUT))
        .build();
    ureq::Agent::new_with_config(config)
}

struct PostingThread {
    stream: Legacy,
    url: String,
    bodies: mpsc::Receiver<String>,
    counts: Arc<Counts>,
    closing: Arc<AtomicBool>,
    agent: ureq::Agent,
    /// While in an outage: the drop count when it began.
    outage_dropped_at: Option<u64>,
}

impl PostingThread {
    fn run(mut self) {
        while let Some(body) = self.bodies.blocking_recv() {
            let closing = self.closing.load(Ordering::Acquire);
            if closing && self.outage_dropped_at.is_some() && !self.bodies.is_empty() {
                // Closing during an outage: only the newest body is tried.
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            match self.send(&body) {
                Ok(()) => self.posted(),
                Err(cause) => self.failed(&cause),
            }
        }
        tracing::info!(
            target: NOTICE_TARGET,
            stream = self.stream.as_str(),
            url = self.url.as_str(),
            posted = self.counts.posted.load(Ordering::Relaxed),
            dropped = self.counts.dropped.load(Ordering::Relaxed),
            "legacy {} stream closed",
            self.stream.as_str()
        );
    }

    fn send(&self, body: &str) -> Result<(), String> {
        self.agent
            .post(&self.url)
            .header("content-type", "application/json")
            .send(body)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    fn posted(&mut self) {
        self.counts.posted.fetch_add(1, Ordering::Relaxed);
        if let Some(at) = self.outage_dropped_at.take() {
            let dropped = self.counts.dropped.load(Ordering::Relaxed) - at;
            tracing::info!(
                target: NOTICE_TARGET,
                stream = self.stream.as_str(),
                url = self.url.as_str(),
                dropped,
                "legacy {} endpoint answers again",
                self.stream.as_str()
            );
        }
    }

    fn failed(&mut self, cause: &str) {
        let before = self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        if self.outage_dropped_at.is_none() {
            self.outage_dropped_at = Some(before);
            tracing::warn!(
                target: NOTICE_TARGET,
                stream = self.stream.as_str(),
                url = self.url.as_str(),
                cause,
                "legacy {} endpoint failed; its records are dropped (counted) until it answers again",
                self.stream.as_str()
            );
        }
    }
}
