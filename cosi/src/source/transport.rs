//! Opening a COSI URL as a plain byte stream.

use std::fs::File;
use std::io::Read;
use std::time::Duration;

use crate::error::CosiError;

/// How long to wait for a TCP/TLS connection to the image server.
const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// A stalled download fails after this long without any received byte.
const HTTP_READ_TIMEOUT: Duration = Duration::from_secs(120);

/// A readable image stream plus its length when known.
pub(crate) struct Opened {
    pub reader: Box<dyn Read + Send>,
    pub len: Option<u64>,
}

/// Turns `file:///abs/path`, a bare absolute path, or `http(s)://...` into a
/// stream.
pub(crate) fn open(url: &str) -> Result<Opened, CosiError> {
    if let Some(path) = url.strip_prefix("file://") {
        return open_file(url, path);
    }
    if url.starts_with('/') {
        return open_file(url, url);
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return open_http(url);
    }
    Err(CosiError::UnsupportedUrl {
        url: url.to_owned(),
    })
}

fn open_file(url: &str, path: &str) -> Result<Opened, CosiError> {
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
    let len = file.metadata().ok().map(|m| m.len());
    Ok(Opened {
        reader: Box::new(file),
        len,
    })
}

fn open_http(url: &str) -> Result<Opened, CosiError> {
    // HTTPS trusts the system's certificate store (rustls-platform-verifier:
    // on Linux the distribution's CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR
    // when set), so an image server behind an organisation's own CA works
    // once that CA is added to the system store (README, "Image sources").
    let tls = ureq::tls::TlsConfig::builder()
        .root_certs(ureq::tls::RootCerts::PlatformVerifier)
        .build();
    let config = ureq::Agent::config_builder()
        .tls_config(tls)
        .timeout_connect(Some(HTTP_CONNECT_TIMEOUT))
        .timeout_recv_body(None)
        .timeout_per_read(Some(HTTP_READ_TIMEOUT))
        .build();
    let agent = ureq::Agent::new_with_config(config);
    let response = agent.get(url).call().map_err(|e| CosiError::Http {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    let len = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    Ok(Opened {
        reader: Box::new(response.into_body().into_reader()),
        len,
    })
}
