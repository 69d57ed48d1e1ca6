//! `http(s)://` downloads that survive the network: one `GET`, and after a
//! dropped connection, a stall, a short body or a 5xx answer another one
//! for the rest (`Range: bytes=N-`) within the caller's [`ResumePolicy`].
//! The reader above sees one unbroken stream of the file's bytes. The
//! first request is retried only when the server answers it with a
//! passing trouble (5xx, 408, 429): a server that cannot be reached at
//! all is reported at once.
//!
//! A file that changed between two requests is never mixed: each resumed
//! request carries `If-Range` with the first answer's strong `ETag` (else
//! its `Last-Modified`), which a server answers with the whole (new) file
//! when the file is no longer the same; the answer's validators and length
//! are compared with the first's as well. Since the bytes already handed
//! up were consumed (hashed, written), such a change fails the download
//! ([`CosiError::ImageChanged`]) unless nothing was handed up yet, when the
//! download simply starts over. A server that ignores `Range` (the same
//! file, whole, with `200`) is read again from byte 0, the bytes already
//! delivered skipped, at most `max_restarts_without_ranges` times
//! ([`CosiError::RangesNotServed`] after). The SHA-384 chain above still
//! checks every byte.

use std::io::{self, Read};

use super::identity::{Identity, content_range, header};
use super::resume::Retrying;
use crate::error::CosiError;
use crate::source::options::{HttpTimeouts, SourceOptions};

/// Whether a request that failed this way may be tried again.
fn retryable(error: &ureq::Error) -> bool {
    match error {
        ureq::Error::StatusCode(code) => matches!(code, 408 | 429 | 500..=599),
        ureq::Error::Io(_)
        | ureq::Error::Timeout(_)
        | ureq::Error::ConnectionFailed
        | ureq::Error::Protocol(_)
        | ureq::Error::BodyStalled => true,
        _ => false,
    }
}

/// A resumable download of one `http(s)://` URL.
pub(super) struct HttpDownload {
    agent: ureq::Agent,
    retrying: Retrying,
    identity: Identity,
    body: Option<ureq::BodyReader<'static>>,
    /// Bytes handed to the reader above.
    delivered: u64,
    /// Whether the server answered a request yet.
    answered: bool,
    /// Bytes of the current body to drop before handing any up (a server
    /// that ignored `Range` sends the file from byte 0 again).
    skip: u64,
}

/// What ended the current body.
enum Broken {
    /// A failure worth another request (its text).
    Retry(String, io::ErrorKind),
    /// A failure no request can mend.
    Fatal(CosiError),
}

impl HttpDownload {
    /// Sends the first request (retried like any other) and returns the
    /// download, or the first request's failure.
    pub(super) fn open(url: &str, options: &SourceOptions) -> Result<HttpDownload, CosiError> {
        let mut download = HttpDownload {
            agent: agent(options.http_timeouts),
            retrying: Retrying::new(url, options),
            identity: Identity::default(),
            body: None,
            delivered: 0,
            answered: false,
            skip: 0,
        };
        download.request()?;
        Ok(download)
    }

    fn url(&self) -> &str {
        self.retrying.url()
    }

    /// Requests the bytes from `delivered` on until an answer's body can be
    /// read, retrying (after announcing each retry and waiting its
    /// backoff) within the policy.
    fn request(&mut self) -> Result<(), CosiError> {
        loop {
            let (reason, kind) = match self.send() {
                Ok(()) => return Ok(()),
                Err(Broken::Fatal(error)) => return Err(error),
                Err(Broken::Retry(reason, kind)) => (reason, kind),
            };
            self.retry_after(&reason, kind, true)?;
        }
    }

    /// One request, and what its answer means.
    fn send(&mut self) -> Result<(), Broken> {
        let mut request = self.agent.get(self.url());
        let resuming = self.delivered > 0;
        if resuming {
            request = request.header("Range", format!("bytes={}-", self.delivered));
            if let Some(validator) = self.identity.validator() {
                request = request.header("If-Range", validator);
            }
        }
        let response = match request.call() {
            Ok(response) => response,
            // The file shrank below what was delivered.
            Err(ureq::Error::StatusCode(416)) if resuming => {
                return Err(Broken::Fatal(self.changed(
                    "the server says the range from the bytes already delivered is not in the file"
                        .to_owned(),
                )));
            }
            // Before any answer, only a server's own trouble (5xx, 408,
            // 429) is retried: a server that cannot be reached at all is
            // reported at once (a wrong URL, a server down), as before.
            Err(e)
                if retryable(&e) && (self.answered || matches!(e, ureq::Error::StatusCode(_))) =>
            {
                let kind = match &e {
                    ureq::Error::Io(io) => io.kind(),
                    ureq::Error::Timeout(_) => io::ErrorKind::TimedOut,
                    _ => io::ErrorKind::Other,
                };
                return Err(Broken::Retry(e.to_string(), kind));
            }
            Err(e) => {
                return Err(Broken::Fatal(CosiError::Http {
                    url: self.url().to_owned(),
                    reason: e.to_string(),
                }));
            }
        };
        self.answered = true;
        let length: Option<u64> = header(&response, "content-length").and_then(|v| v.parse().ok());
        match response.status().as_u16() {
            206 if resuming => {
                let range = header(&response, "content-range").and_then(|v| content_range(&v));
                let Some((first, total)) = range else {
                    return Err(Broken::Retry(
                        "the server answered 206 without a usable Content-Range".to_owned(),
                        io::ErrorKind::InvalidData,
                    ));
                };
                let answer = Identity {
                    length: total,
                    ..Identity::of(&response, None)
                };
                if let Some(detail) = self.identity.changed(&answer) {
                    return Err(Broken::Fatal(self.changed(detail)));
                }
                if first != self.delivered {
                    return Err(Broken::Retry(
                        format!(
                            "the server sent the range from byte {first}, not {}",
                            self.delivered
                        ),
                        io::ErrorKind::InvalidData,
                    ));
                }
                self.skip = 0;
            }
            200 if resuming => {
                let answer = Identity::of(&response, length);
                if let Some(detail) = self.identity.changed(&answer) {
                    return Err(Broken::Fatal(self.changed(detail)));
                }
                // The same file, whole: the server ignores `Range`.
                if !self.retrying.restart() {
                    return Err(Broken::Fatal(CosiError::RangesNotServed {
                        url: self.url().to_owned(),
                        delivered: self.delivered,
                        restarts: self.retrying.restarts(),
                    }));
                }
                self.retrying.observer().notify(&crate::source::options::RetryNotice {
                    url: self.url().to_owned(),
                    attempt: self.retrying.retries(),
                    max_retries: 0,
                    offset: self.delivered,
                    total: self.identity.length,
                    reason: "the server ignored the range asked for and sends the whole file: reading it again from byte 0, skipping what was delivered".to_owned(),
                    delay: std::time::Duration::ZERO,
                    restart: true,
                });
                self.skip = self.delivered;
            }
            200 => {
                // The first answer, or a new start before any byte was
                // handed up: whatever this file is, it is the one read.
                self.identity = Identity::of(&response, length);
                self.skip = 0;
            }
            status => {
                return Err(Broken::Fatal(CosiError::Http {
                    url: self.url().to_owned(),
                    reason: format!("unexpected HTTP status {status}"),
                }));
            }
        }
        self.body = Some(response.into_body().into_reader());
        Ok(())
    }

    fn changed(&self, detail: String) -> CosiError {
        CosiError::ImageChanged {
            url: self.url().to_owned(),
            detail,
            delivered: self.delivered,
        }
    }

    /// The next retry after `reason`, announced and waited for; the
    /// failure itself (`request`: as a download error, else as the read
    /// error it was) once none is left.
    fn retry_after(
        &mut self,
        reason: &str,
        kind: io::ErrorKind,
        request: bool,
    ) -> Result<(), CosiError> {
        self.body = None;
        let total = self.identity.length;
        match self.retrying.next(reason, self.delivered, total) {
            Ok(notice) => self.retrying.announce_and_wait(&notice),
            Err(gave_up) if request => Err(CosiError::Http {
                url: self.url().to_owned(),
                reason: format!("{reason}{gave_up}"),
            }),
            Err(gave_up) => Err(CosiError::Read {
                url: self.url().to_owned(),
                source: io::Error::new(kind, format!("{reason}{gave_up}")),
            }),
        }
    }

    /// One read of the current body, with the bytes to skip dropped.
    fn read_body(&mut self, buf: &mut [u8]) -> Result<usize, Broken> {
        let Some(body) = self.body.as_mut() else {
            return Ok(0);
        };
        loop {
            // The client reports an early close as an end of file, either
            // as a 0-byte read or as an `UnexpectedEof` error.
            let n = match body.read(buf) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => 0,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Broken::Retry(e.to_string(), e.kind())),
            };
            if n == 0 {
                return match self.identity.length {
                    Some(length) if self.delivered < length => Err(Broken::Retry(
                        format!(
                            "the server closed the connection after {} of the {length} bytes its Content-Length announced",
                            self.delivered
                        ),
                        io::ErrorKind::ConnectionAborted,
                    )),
                    _ => Ok(0),
                };
            }
            let skipped = usize::try_from(self.skip).map_or(n, |skip| skip.min(n));
            self.skip -= skipped as u64;
            if skipped < n {
                buf.copy_within(skipped..n, 0);
                let handed = n - skipped;
                self.delivered += handed as u64;
                return Ok(handed);
            }
        }
    }
}

impl Read for HttpDownload {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.retrying.cancel().requested() {
                return Err(io::Error::other(self.retrying.cancelled()));
            }
            if self.body.is_none() {
                if self.identity.length == Some(self.delivered) {
                    return Ok(0);
                }
                self.request().map_err(io::Error::other)?;
            }
            match self.read_body(buf) {
                Ok(0) => {
                    self.body = None;
                    // Only a body with nothing more to send gets here.
                    return Ok(0);
                }
                Ok(n) => return Ok(n),
                Err(Broken::Fatal(error)) => return Err(io::Error::other(error)),
                Err(Broken::Retry(reason, kind)) => self
                    .retry_after(&reason, kind, false)
                    .map_err(io::Error::other)?,
            }
        }
    }
}

/// The client of one download, within `timeouts`.
pub(super) fn agent(timeouts: HttpTimeouts) -> ureq::Agent {
    // HTTPS trusts the system's certificate store (rustls-platform-verifier:
    // on Linux the distribution's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR
    // when set), so an image server behind an organisation's own CA works
    // once that CA is added to the system store (docs/servicing.md,
    // "Image sources over HTTPS").
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_connect(Some(timeouts.connect))
        .timeout_recv_body(None)
        // The read bound also covers the response head: a server that
        // accepts and then says nothing fails like one that stalls
        // mid-body, and both are retried.
        .timeout_per_read(Some(timeouts.read))
        .build();
    ureq::Agent::new_with_config(config)
}
