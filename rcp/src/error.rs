//! The errors of the RCP library.

use std::path::PathBuf;

/// Every failure of the agent and the listener library.
#[derive(Debug, thiserror::Error)]
pub enum RcpError {
    /// A certificate, CA or key file could not be read or parsed.
    #[error("{what} {}: {detail}", path.display())]
    Pem {
        what: &'static str,
        path: PathBuf,
        detail: String,
    },
    /// The private key file is readable or writable by group or others.
    #[error(
        "private key {} has mode {mode:04o}: it must not be accessible by group or others (chmod 600)",
        path.display()
    )]
    KeyPermissions { path: PathBuf, mode: u32 },
    /// rustls refused the configuration (e.g. key does not match certificate).
    #[error("TLS configuration: {0}")]
    TlsConfig(#[from] rustls::Error),
    /// A certificate verifier could not be built (e.g. empty CA).
    #[error("TLS certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    /// A certificate carries no DNS name nor common name usable as host id.
    #[error("certificate has no usable identity: {0}")]
    Identity(String),
    /// This host's certificate starts being valid later than this host's
    /// clock says it is now (a clock behind, or a certificate issued early).
    #[error(
        "this host's certificate is not valid yet: valid from {not_before}, this host's clock says {now}"
    )]
    CertificateNotYetValid { not_before: String, now: String },
    /// This host's certificate is past its end of validity.
    #[error(
        "this host's certificate expired: valid until {not_after}, this host's clock says {now}"
    )]
    CertificateExpired { not_after: String, now: String },
    /// A configuration value is missing or invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// A socket could not be bound or connected.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The HTTP/2 tunnel failed (host gone, stream refused).
    #[error("tunnel: {0}")]
    Tunnel(#[from] hyper::Error),
    /// The host answered a stream request with a non-success status
    /// (e.g. its tridentd socket is not there).
    #[error("host refused the stream with HTTP status {0}")]
    StreamRefused(u16),
    /// The host's tunnel closed (lost, or replaced by a newer connection).
    #[error("the tunnel to host {0} is closed")]
    TunnelClosed(String),
    /// The gRPC channel through the tunnel could not be set up.
    #[error("gRPC channel: {0}")]
    Channel(#[from] tonic::transport::Error),
}

impl RcpError {
    /// Wraps an I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        RcpError::Io {
            what: what.into(),
            source,
        }
    }
}
