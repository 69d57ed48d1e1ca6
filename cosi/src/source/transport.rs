//! `file://` and `http(s)://` sources as plain byte streams (the scheme
//! dispatch is in `source/mod.rs`).

use std::fs::File;
use std::io::Read;

use super::options::HttpTimeouts;
use crate::error::CosiError;

/// A readable image stream.
pub(crate) type ImageStream = Box<dyn Read + Send>;

/// `file:///abs/path` (`path` the part after the scheme) or a bare
/// absolute path.
pub(super) fn open_file(url: &str, path: &str) -> Result<ImageStream, CosiError> {
    // file://host/path is not supported; file:///path has an empty host.
    if !path.starts_with('/') {
        return Err(CosiError::UnsupportedUrl {
            url: url.to_owned(),
        });
    }
    let file = File::open(path).map_err(|source| CosiError::Open {
        url: url.to_owned(),
        source,
    })?;
    Ok(Box::new(file))
}

/// `http(s)://...`, within `timeouts`.
pub(super) fn open_http(url: &str, timeouts: HttpTimeouts) -> Result<ImageStream, CosiError> {
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
        .timeout_per_read(Some(timeouts.read))
        .build();
    let agent = ureq::Agent::new_with_config(config);
    // The read bound also covers the response head: a server that accepts
    // and then says nothing fails like one that stalls mid-body.
    let response = agent.get(url).call().map_err(|e| CosiError::Http {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    let len = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = response.into_body().into_reader();
    Ok(match len {
        Some(announced) => Box::new(AnnouncedLength::new(body, announced)),
        None => Box::new(body),
    })
}

/// An HTTP body that must be as long as its `Content-Length`: a server
/// that closes early is a download failure (a transport error), not the
/// "truncated image" the archive reader would otherwise report.
pub(crate) struct AnnouncedLength<R> {
    inner: R,
    announced: u64,
    received: u64,
}

impl<R> AnnouncedLength<R> {
    pub(crate) fn new(inner: R, announced: u64) -> Self {
        AnnouncedLength {
            inner,
            announced,
            received: 0,
        }
    }
}

impl<R: Read> Read for AnnouncedLength<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // The HTTP client reports an early close as an end of file, either
        // as a 0-byte read or as an `UnexpectedEof` error.
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(e),
        };
        self.received += n as u64;
        if n == 0 && !buf.is_empty() && self.received < self.announced {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                format!(
                    "the server closed the connection after {} of the {} bytes its Content-Length announced",
                    self.received, self.announced
                ),
            ));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_shorter_than_its_content_length_is_a_connection_error() {
        let mut short = AnnouncedLength {
            inner: &b"half"[..],
            announced: 8,
            received: 0,
        };
        let mut buf = Vec::new();
        let err = short.read_to_end(&mut buf).expect_err("short body");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionAborted);
        assert!(err.to_string().contains("after 4 of the 8 bytes"), "{err}");
        let mut whole = AnnouncedLength {
            inner: &b"whole"[..],
            announced: 5,
            received: 0,
        };
        buf.clear();
        whole.read_to_end(&mut buf).expect("whole body");
        assert_eq!(buf, b"whole");
    }
}
