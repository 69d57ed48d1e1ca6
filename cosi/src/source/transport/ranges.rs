//! Parts of an image by byte range: `Range: bytes=A-B` requests to an
//! `http(s)://` server (or positioned reads of a `file://` image), for an
//! adaptive update that fetches only the frames it has nowhere locally,
//! and for reading an image's head (marker, metadata, chunk index) without
//! starting a whole download.
//!
//! Every answer after the first carries `If-Range` with the first one's
//! strong `ETag` (else `Last-Modified`), so a file replaced between two
//! requests is told apart, never mixed ([`CosiError::ImageChanged`]). A
//! server that answers a range request with the whole file (`200`) does
//! not serve ranges ([`CosiError::RangesUnsupported`]): the caller streams
//! the image whole instead. A dropped, stalled or short answer, or a 5xx,
//! is asked again within the caller's resume policy, each retry reported
//! to its observer like a resumed download's.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use super::http::agent;
use super::identity::{Identity, content_range, header};
use super::resume::Retrying;
use crate::error::CosiError;
use crate::source::options::SourceOptions;

/// Byte ranges of one image; clones share the connection settings, the
/// file's identity, the retry budget and the counters.
#[derive(Clone)]
pub struct RangeReader {
    inner: Arc<Mutex<Inner>>,
    url: String,
}

impl std::fmt::Debug for RangeReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RangeReader")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

struct Inner {
    backend: Backend,
    /// The file's length, once known.
    length: Option<u64>,
    /// Body bytes received (over HTTP) or read (from a file).
    fetched: u64,
    requests: u64,
}

enum Backend {
    File(File),
    Http(Box<Http>),
}

struct Http {
    agent: ureq::Agent,
    retrying: Retrying,
    /// What the first answer said about the file.
    identity: Option<Identity>,
}

/// How one request went.
enum Attempt {
    /// The bytes received.
    Done(usize),
    Retry(String),
    Fatal(CosiError),
}

impl RangeReader {
    /// Ranges of `url` (`file://`, a bare absolute path or `http(s)://`);
    /// no request is sent yet.
    pub fn open(url: &str, options: &SourceOptions) -> Result<RangeReader, CosiError> {
        let path = url
            .strip_prefix("file://")
            .or_else(|| url.starts_with('/').then_some(url));
        let (backend, length) = if let Some(path) = path {
            let open = |source| CosiError::Open {
                url: url.to_owned(),
                source,
            };
            if !path.starts_with('/') {
                return Err(CosiError::UnsupportedUrl {
                    url: url.to_owned(),
                });
            }
            let file = File::open(path).map_err(open)?;
            let length = file.metadata().map_err(open)?.len();
            (Backend::File(file), Some(length))
        } else if url.starts_with("http://") || url.starts_with("https://") {
            let backend = Backend::Http(Box::new(Http {
                agent: agent(options.http_timeouts),
                retrying: Retrying::new(url, options),
                identity: None,
            }));
            (backend, None)
        } else {
            return Err(CosiError::UnsupportedUrl {
                url: url.to_owned(),
            });
        };
        Ok(RangeReader {
            inner: Arc::new(Mutex::new(Inner {
                backend,
                length,
                fetched: 0,
                requests: 0,
            })),
            url: url.to_owned(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the counters unsafe.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The file's length, once a request (or opening a file) told it.
    pub fn length(&self) -> Option<u64> {
        self.lock().length
    }

    /// Bytes received so far, over all requests.
    pub fn bytes_fetched(&self) -> u64 {
        self.lock().fetched
    }

    /// Requests sent so far (retries included).
    pub fn requests(&self) -> u64 {
        self.lock().requests
    }

    /// Fills `buf` with the file's bytes from `offset` on; an error if the
    /// file ends first.
    pub fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), CosiError> {
        let n = self.read_at(offset, buf)?;
        if n < buf.len() {
            return Err(CosiError::Read {
                url: self.url.clone(),
                source: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the file ends at byte {}, before the {} bytes asked for at {offset}",
                        offset + n as u64,
                        buf.len()
                    ),
                ),
            });
        }
        Ok(())
    }

    /// Reads the file's bytes from `offset` on into `buf`, as many as there
    /// are (fewer than `buf.len()` only at the end of the file).
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, CosiError> {
        if buf.is_empty() {
            return Ok(0);
        }
        let url = self.url.clone();
        let mut inner = self.lock();
        let inner = &mut *inner;
        inner.requests += 1;
        match &mut inner.backend {
            Backend::File(file) => {
                let available = inner.length.unwrap_or(0).saturating_sub(offset);
                let n = usize::try_from(available).map_or(buf.len(), |a| a.min(buf.len()));
                file.read_exact_at(&mut buf[..n], offset)
                    .map_err(|source| CosiError::Read { url, source })?;
                inner.fetched += n as u64;
                Ok(n)
            }
            Backend::Http(http) => loop {
                let Http {
                    agent,
                    retrying,
                    identity,
                } = &mut **http;
                if retrying.cancel().requested() {
                    return Err(retrying.cancelled());
                }
                let attempt = http_range(agent, &url, identity, offset, buf, &mut inner.fetched);
                match attempt {
                    Attempt::Done(n) => {
                        inner.length = identity.as_ref().and_then(|i| i.length);
                        return Ok(n);
                    }
                    Attempt::Fatal(error) => return Err(error),
                    Attempt::Retry(reason) => {
                        let total = identity.as_ref().and_then(|i| i.length);
                        match retrying.next(&reason, offset, total) {
                            Ok(notice) => retrying.announce_and_wait(&notice)?,
                            Err(gave_up) => {
                                return Err(CosiError::Http {
                                    url,
                                    reason: format!("{reason}{gave_up}"),
                                });
                            }
                        }
                        inner.requests += 1;
                    }
                }
            },
        }
    }
}

/// One `GET` of `buf.len()` bytes at `offset`.
fn http_range(
    agent: &ureq::Agent,
    url: &str,
    identity: &mut Option<Identity>,
    offset: u64,
    buf: &mut [u8],
    fetched: &mut u64,
) -> Attempt {
    let last = offset + buf.len() as u64 - 1;
    let mut request = agent
        .get(url)
        .header("Range", format!("bytes={offset}-{last}"));
    if let Some(validator) = identity.as_ref().and_then(Identity::validator) {
        request = request.header("If-Range", validator);
    }
    let response = match request.call() {
        Ok(response) => response,
        Err(ureq::Error::StatusCode(code @ (408 | 429 | 500..=599))) => {
            return Attempt::Retry(format!("HTTP {code}"));
        }
        Err(
            e @ (ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled),
        ) if identity.is_some() => return Attempt::Retry(e.to_string()),
        Err(e) => {
            return Attempt::Fatal(CosiError::Http {
                url: url.to_owned(),
                reason: e.to_string(),
            });
        }
    };
    let status = response.status().as_u16();
    if status != 206 {
        let changed = identity.is_some();
        return Attempt::Fatal(if changed {
            CosiError::ImageChanged {
                url: url.to_owned(),
                detail: format!(
                    "a range request carrying If-Range was answered with HTTP {status}"
                ),
                delivered: 0,
            }
        } else {
            CosiError::RangesUnsupported {
                url: url.to_owned(),
                status,
            }
        });
    }
    let Some((first, total)) = header(&response, "content-range").and_then(|v| content_range(&v))
    else {
        return Attempt::Retry("the server answered 206 without a usable Content-Range".into());
    };
    let answer = Identity {
        length: total,
        ..Identity::of(&response, None)
    };
    match identity {
        Some(known) => {
            if let Some(detail) = known.changed(&answer) {
                return Attempt::Fatal(CosiError::ImageChanged {
                    url: url.to_owned(),
                    detail,
                    delivered: 0,
                });
            }
        }
        None => *identity = Some(answer),
    }
    if first != offset {
        return Attempt::Retry(format!(
            "the server sent the range from byte {first}, not {offset}"
        ));
    }
    // A range past the end of the file is cut at its end.
    let want = total.map_or(buf.len(), |t| {
        usize::try_from(t.saturating_sub(offset)).map_or(buf.len(), |left| left.min(buf.len()))
    });
    let mut body = response.into_body().into_reader();
    let mut filled = 0;
    while filled < want {
        match body.read(&mut buf[filled..want]) {
            Ok(0) => {
                return Attempt::Retry(format!("the answer ended after {filled} of {want} bytes"));
            }
            Ok(n) => {
                filled += n;
                *fetched += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Attempt::Retry(e.to_string()),
        }
    }
    Attempt::Done(want)
}

/// The file read front to back through range requests that grow from
/// 64 KiB to 4 MiB: an image's head without starting a whole download.
#[derive(Debug)]
pub struct RangeStream {
    ranges: RangeReader,
    pos: u64,
    buf: Vec<u8>,
    buf_pos: usize,
    next_len: usize,
}

impl RangeStream {
    const FIRST: usize = 64 << 10;
    const MAX: usize = 4 << 20;

    pub fn new(ranges: RangeReader) -> Self {
        RangeStream {
            ranges,
            pos: 0,
            buf: Vec::new(),
            buf_pos: 0,
            next_len: Self::FIRST,
        }
    }
}

impl Read for RangeStream {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.buf_pos == self.buf.len() {
            let mut len = self.next_len as u64;
            if let Some(total) = self.ranges.length() {
                len = len.min(total.saturating_sub(self.pos));
            }
            if len == 0 {
                return Ok(0);
            }
            self.buf.resize(len as usize, 0);
            let n = self
                .ranges
                .read_at(self.pos, &mut self.buf)
                .map_err(io::Error::other)?;
            self.buf.truncate(n);
            if n == 0 {
                return Ok(0);
            }
            self.pos += n as u64;
            self.buf_pos = 0;
            self.next_len = (self.next_len * 2).min(Self::MAX);
        }
        let n = out.len().min(self.buf.len() - self.buf_pos);
        out[..n].copy_from_slice(&self.buf[self.buf_pos..self.buf_pos + n]);
        self.buf_pos += n;
        Ok(n)
    }
}
