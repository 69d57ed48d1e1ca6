//! The puller thread of an `oci://` source: it streams the layer blob
//! through a bounded channel into the synchronous reader the COSI reader
//! consumes, and resumes a broken blob download (`Range: bytes=N-`, which
//! registries serve on blobs) within the caller's resume policy, so the
//! reader sees one unbroken stream.
//!
//! A blob is named by its digest, so the registry cannot hand out another
//! file under the same name: a resumed pull never mixes. The layer's bytes
//! are hashed here as they are handed up (a ranged answer is not checked
//! by the client) and compared with the layer's digest at the end. A
//! registry that ignores `Range` (the whole blob again, `200`) is read
//! again from byte 0, the bytes already delivered skipped, a bounded
//! number of times.

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use oci_client::client::{BlobResponse, SizedStream};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use super::digest::LayerDigest;
use super::registry::{client, error_chain, open_layer, registry_error, retryable};
use crate::error::{CosiError, RegistryFailure};
use crate::source::options::{HttpTimeouts, RetryNotice, RetryObserver, SourceOptions};
use crate::source::transport::ImageStream;
use crate::source::transport::resume::{CANCEL_POLL, Retrying};

/// Chunks in flight between the puller thread and the reader.
const CHANNEL_CHUNKS: usize = 8;

/// What the puller hands the reader.
enum Chunk {
    Data(Bytes),
    /// A retry to announce (on the reader's thread, inside the reading
    /// operation's span).
    Retry(RetryNotice),
    Failed(io::Error),
    End,
}

/// Starts the puller for `reference` and returns the reader end once the
/// layer is open (or the failure to open it).
pub(super) fn start(
    url: &str,
    reference: Reference,
    auth: RegistryAuth,
    options: &SourceOptions,
) -> Result<ImageStream, CosiError> {
    let (opened_tx, opened_rx) = sync_channel(1);
    let (chunks_tx, chunks_rx) = sync_channel(CHANNEL_CHUNKS);
    let job = Job {
        reference,
        auth,
        timeouts: options.http_timeouts,
        retrying: Retrying::new(url, options),
    };
    std::thread::Builder::new()
        .name("oci-pull".to_owned())
        .spawn(move || pull(job, opened_tx, chunks_tx))
        .map_err(|source| CosiError::Open {
            url: url.to_owned(),
            source,
        })?;
    // The puller always answers (its sender is dropped only after sending).
    opened_rx.recv().map_err(|_| CosiError::Registry {
        url: url.to_owned(),
        failure: RegistryFailure::Transport,
        reason: "the registry client stopped before it opened the image".to_owned(),
    })??;
    Ok(Box::new(ChannelReader {
        chunks: chunks_rx,
        current: Bytes::new(),
        finished: false,
        observer: options.on_retry.clone(),
    }))
}

struct Job {
    reference: Reference,
    auth: RegistryAuth,
    timeouts: HttpTimeouts,
    retrying: Retrying,
}

/// The puller thread: opens the layer, reports the outcome on `opened`,
/// then forwards the blob to `chunks` until it ends, fails for good, or
/// the reader is dropped.
fn pull(job: Job, opened: SyncSender<Result<(), CosiError>>, chunks: SyncSender<Chunk>) {
    let url = job.retrying.url().to_owned();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(source) => {
            let _ = opened.send(Err(CosiError::Open { url, source }));
            return;
        }
    };
    runtime.block_on(async move {
        let client = match client(job.timeouts) {
            Ok(client) => client,
            Err(e) => {
                let _ = opened.send(Err(registry_error(&url, e)));
                return;
            }
        };
        let (layer, stream) = match open_layer(&client, &job.reference, &job.auth).await {
            Ok(opened) => opened,
            Err(e) => {
                let _ = opened.send(Err(registry_error(&url, e)));
                return;
            }
        };
        if opened.send(Ok(())).is_err() {
            return;
        }
        let declared = u64::try_from(layer.size).ok().filter(|size| *size > 0);
        let mut blob = Blob {
            total: stream.content_length.or(declared),
            digest: LayerDigest::of(&layer.digest),
            client,
            reference: job.reference,
            layer,
            retrying: job.retrying,
            chunks,
            delivered: 0,
        };
        blob.run(stream).await;
    });
}

/// One blob download and its resumes.
struct Blob {
    client: Client,
    reference: Reference,
    layer: OciDescriptor,
    retrying: Retrying,
    chunks: SyncSender<Chunk>,
    /// The blob's length, when known (the registry's `Content-Length`).
    total: Option<u64>,
    /// Bytes handed to the reader.
    delivered: u64,
    digest: LayerDigest,
}

/// How forwarding one answer's body ended.
enum Forwarded {
    End,
    Failed(io::Error),
    ReaderGone,
}

impl Blob {
    async fn run(&mut self, mut stream: SizedStream) {
        let mut skip = 0;
        loop {
            let (reason, kind) = match self.forward(&mut stream, &mut skip).await {
                Forwarded::ReaderGone => return,
                Forwarded::Failed(e) => (error_chain(&e), e.kind()),
                Forwarded::End => match self.total {
                    Some(total) if self.delivered < total => (
                        format!(
                            "the registry closed the connection after {} of the {total} bytes of the layer",
                            self.delivered
                        ),
                        io::ErrorKind::ConnectionAborted,
                    ),
                    _ => return self.finish(),
                },
            };
            match self.resume(reason, kind).await {
                Some((next, from)) => (stream, skip) = (next, from),
                None => return,
            }
        }
    }

    /// Hands the body's bytes (past `skip` of them) to the reader.
    async fn forward(&mut self, stream: &mut SizedStream, skip: &mut u64) -> Forwarded {
        while let Some(item) = stream.stream.next().await {
            let mut data = match item {
                Ok(data) => data,
                Err(e) => return Forwarded::Failed(e),
            };
            if *skip > 0 {
                let dropped = usize::try_from(*skip).map_or(data.len(), |s| s.min(data.len()));
                *skip -= dropped as u64;
                data = data.slice(dropped..);
            }
            if data.is_empty() {
                continue;
            }
            self.delivered += data.len() as u64;
            self.digest.update(&data);
            // A send error means the reader is gone: stop downloading.
            if self.chunks.send(Chunk::Data(data)).is_err() {
                return Forwarded::ReaderGone;
            }
        }
        Forwarded::End
    }

    /// After a failure: retries until an answer's body can be read (with
    /// the bytes to skip of it), or None once the failure was handed to
    /// the reader.
    async fn resume(
        &mut self,
        mut reason: String,
        mut kind: io::ErrorKind,
    ) -> Option<(SizedStream, u64)> {
        loop {
            let notice = match self.retrying.next(&reason, self.delivered, self.total) {
                Ok(notice) => notice,
                Err(gave_up) => {
                    self.fail(io::Error::new(kind, format!("{reason}{gave_up}")));
                    return None;
                }
            };
            let delay = notice.delay;
            if self.chunks.send(Chunk::Retry(notice)).is_err() {
                return None;
            }
            if !self.wait(delay).await {
                self.fail(io::Error::other(self.retrying.cancelled()));
                return None;
            }
            let answer = self
                .client
                .pull_blob_stream_partial(&self.reference, &self.layer, self.delivered, None)
                .await;
            match answer {
                Ok(BlobResponse::Partial(stream)) => return Some((stream, 0)),
                Ok(BlobResponse::Full(stream)) if self.delivered == 0 => return Some((stream, 0)),
                Ok(BlobResponse::Full(stream)) => return self.restart(stream),
                Err(e) if retryable(&e) => {
                    reason = error_chain(&e);
                    kind = io::ErrorKind::Other;
                }
                Err(e) => {
                    let error = registry_error(self.retrying.url(), e);
                    self.fail(io::Error::other(error));
                    return None;
                }
            }
        }
    }

    /// The registry ignored `Range`: read the whole blob again, skipping
    /// what was delivered, if restarts are left.
    fn restart(&mut self, stream: SizedStream) -> Option<(SizedStream, u64)> {
        if !self.retrying.restart() {
            self.fail(io::Error::other(CosiError::RangesNotServed {
                url: self.retrying.url().to_owned(),
                delivered: self.delivered,
                restarts: self.retrying.restarts(),
            }));
            return None;
        }
        let notice = RetryNotice {
            url: self.retrying.url().to_owned(),
            attempt: self.retrying.retries(),
            max_retries: 0,
            offset: self.delivered,
            total: self.total,
            reason: "the registry ignored the range asked for and sends the whole layer: reading it again from byte 0, skipping what was delivered".to_owned(),
            delay: Duration::ZERO,
            restart: true,
        };
        self.chunks.send(Chunk::Retry(notice)).ok()?;
        Some((stream, self.delivered))
    }

    /// Waits `delay`; false once the cancel is requested.
    async fn wait(&self, delay: Duration) -> bool {
        let until = Instant::now() + delay;
        loop {
            if self.retrying.cancel().requested() {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            tokio::time::sleep(left.min(CANCEL_POLL)).await;
        }
    }

    fn fail(&self, error: io::Error) {
        let _ = self.chunks.send(Chunk::Failed(error));
    }

    /// The end of the blob: its bytes checked against the layer's digest.
    fn finish(&mut self) {
        let chunk = match self.digest.check(&self.layer.digest) {
            Ok(()) => Chunk::End,
            Err(actual) => Chunk::Failed(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the layer's bytes have digest {actual}, the manifest says {}",
                    self.layer.digest
                ),
            )),
        };
        let _ = self.chunks.send(chunk);
    }
}

/// The reader end: hands out the puller's chunks in order, announcing its
/// retries on the way.
struct ChannelReader {
    chunks: Receiver<Chunk>,
    current: Bytes,
    finished: bool,
    observer: RetryObserver,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            if self.finished || buf.is_empty() {
                return Ok(0);
            }
            match self.chunks.recv() {
                Ok(Chunk::Data(data)) => self.current = data,
                Ok(Chunk::Retry(notice)) => self.observer.notify(&notice),
                Ok(Chunk::End) => self.finished = true,
                Ok(Chunk::Failed(e)) => {
                    self.finished = true;
                    // A structured error travels as itself.
                    if e.get_ref().is_some_and(|inner| inner.is::<CosiError>()) {
                        return Err(e);
                    }
                    return Err(io::Error::new(e.kind(), error_chain(&e)));
                }
                Err(_) => {
                    self.finished = true;
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionAborted,
                        "the registry download stopped without an error",
                    ));
                }
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::{Arc, Mutex};

    use super::*;

    fn reader(rx: Receiver<Chunk>, observer: RetryObserver) -> ChannelReader {
        ChannelReader {
            chunks: rx,
            current: Bytes::new(),
            finished: false,
            observer,
        }
    }

    #[test]
    fn the_reader_passes_chunks_through_and_reports_a_failed_download() {
        let (tx, rx) = sync_channel(4);
        tx.send(Chunk::Data(Bytes::from_static(b"hello "))).unwrap();
        tx.send(Chunk::Data(Bytes::from_static(b"world"))).unwrap();
        tx.send(Chunk::Failed(io::Error::new(
            io::ErrorKind::TimedOut,
            "stalled",
        )))
        .unwrap();
        let mut out = Vec::new();
        let err = reader(rx, RetryObserver::default())
            .read_to_end(&mut out)
            .unwrap_err();
        assert_eq!(out, b"hello world");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn the_reader_announces_retries_on_its_own_thread_between_the_bytes() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let observer = RetryObserver::new(move |n: &RetryNotice| {
            log.lock()
                .unwrap()
                .push((n.offset, std::thread::current().id()));
        });
        let (tx, rx) = sync_channel(4);
        tx.send(Chunk::Data(Bytes::from_static(b"abc"))).unwrap();
        tx.send(Chunk::Retry(RetryNotice {
            url: "oci://r/x".to_owned(),
            attempt: 1,
            max_retries: 3,
            offset: 3,
            total: Some(6),
            reason: "reset".to_owned(),
            delay: Duration::ZERO,
            restart: false,
        }))
        .unwrap();
        tx.send(Chunk::Data(Bytes::from_static(b"def"))).unwrap();
        tx.send(Chunk::End).unwrap();
        let mut out = Vec::new();
        reader(rx, observer).read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abcdef");
        assert_eq!(
            *seen.lock().unwrap(),
            vec![(3, std::thread::current().id())]
        );
    }
}
