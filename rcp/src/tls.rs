//! Mutual TLS for both ends of the tunnel (rustls with the ring provider).
//! Both sides present a certificate signed by the configured CA and verify
//! the other's against it; there is no plaintext mode. In upstream mode a
//! peer certificate that is itself in the CA file is accepted too, as Go
//! does (see [`crate::pinned`]).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::error::RcpError;
use crate::pinned::{PinnedClientVerifier, PinnedServerVerifier};

/// The ALPN protocol both sides insist on, so an RCP endpoint never talks
/// to a TLS server or client of another kind by accident (our protocol).
pub const ALPN: &[u8] = b"trident-rcp/1";

/// Which wire protocol a tunnel speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Ours: one TLS session (ALPN `trident-rcp/1`) carrying HTTP/2, one
    /// CONNECT stream per connection to tridentd.
    #[default]
    Trident,
    /// Upstream Trident's (`tools/pkg/rcp`): each TLS 1.3 mutual-TLS
    /// connection (no ALPN) carries one raw byte stream to tridentd's
    /// socket; the agent dials again after each close.
    Upstream,
}

/// The name upstream's agent expects in the listener's certificate
/// (`tlscerts.ServerSubjectAltName`).
pub const UPSTREAM_SERVER_NAME: &str = "reverseconnectproxy";

/// TLS 1.3 only, as upstream's Go code sets (`MinVersion: tls.VersionTLS13`).
static TLS13_ONLY: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13];

fn tls13() -> &'static [&'static rustls::SupportedProtocolVersion] {
    TLS13_ONLY
}

/// The three PEM files of one side.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The CA that signs both sides' certificates.
    pub ca: PathBuf,
    /// This side's certificate chain.
    pub cert: PathBuf,
    /// This side's private key (must be mode 0600 or stricter).
    pub key: PathBuf,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn pem_error(what: &'static str, path: &Path, detail: impl ToString) -> RcpError {
    RcpError::Pem {
        what,
        path: path.to_path_buf(),
        detail: detail.to_string(),
    }
}

/// Every certificate in a PEM file (at least one).
pub fn load_certs(
    what: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, RcpError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(what, path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(what, path, e))?;
    if certs.is_empty() {
        return Err(pem_error(what, path, "no CERTIFICATE block"));
    }
    Ok(certs)
}

/// Refuses a key file that group or others may access: a key anyone on
/// the host can read lets them impersonate it.
pub fn check_key_permissions(path: &Path) -> Result<(), RcpError> {
    let meta = fs::metadata(path).map_err(|e| pem_error("private key", path, e))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(RcpError::KeyPermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

/// The private key, after its permissions were checked.
pub fn load_key(path: &Path) -> Result<PrivateKeyDer<'static>, RcpError> {
    check_key_permissions(path)?;
    PrivateKeyDer::from_pem_file(path).map_err(|e| pem_error("private key", path, e))
}

/// The CA file's certificates, and webpki's trust anchors made of them.
type Trust = (Vec<CertificateDer<'static>>, Arc<RootCertStore>);

fn trust(path: &Path) -> Result<Trust, RcpError> {
    let certs = load_certs("CA", path)?;
    let mut roots = RootCertStore::empty();
    for cert in &certs {
        roots
            .add(cert.clone())
            .map_err(|e| pem_error("CA", path, e))?;
    }
    Ok((certs, Arc::new(roots)))
}

/// The listener's (orchestrator's) TLS configuration: a client certificate
/// signed by the CA (upstream mode: or in the CA file) is mandatory.
pub fn server_config(files: &TlsFiles, protocol: Protocol) -> Result<Arc<ServerConfig>, RcpError> {
    let (trusted, roots) = trust(&files.ca)?;
    let webpki = WebPkiClientVerifier::builder_with_provider(roots, provider()).build()?;
    let verifier: Arc<dyn ClientCertVerifier> = match protocol {
        Protocol::Trident => webpki,
        Protocol::Upstream => Arc::new(PinnedClientVerifier::new(webpki, trusted)),
    };
    let builder = ServerConfig::builder_with_provider(provider());
    let builder = match protocol {
        Protocol::Trident => builder.with_safe_default_protocol_versions()?,
        Protocol::Upstream => builder.with_protocol_versions(tls13())?,
    };
    let mut config = builder
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            load_certs("certificate", &files.cert)?,
            load_key(&files.key)?,
        )?;
    if protocol == Protocol::Trident {
        config.alpn_protocols = vec![ALPN.to_vec()];
    }
    Ok(Arc::new(config))
}

/// The agent's TLS configuration: the orchestrator's certificate must be
/// signed by the CA (upstream mode: or be in the CA file) and valid for the
/// configured server name.
pub fn client_config(files: &TlsFiles, protocol: Protocol) -> Result<Arc<ClientConfig>, RcpError> {
    let (trusted, roots) = trust(&files.ca)?;
    let builder = ClientConfig::builder_with_provider(provider());
    let builder = match protocol {
        Protocol::Trident => builder
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots),
        Protocol::Upstream => {
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider()).build()?;
            builder
                .with_protocol_versions(tls13())?
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PinnedServerVerifier::new(
                    webpki, trusted,
                )))
        }
    };
    let mut config = builder.with_client_auth_cert(
        load_certs("certificate", &files.cert)?,
        load_key(&files.key)?,
    )?;
    if protocol == Protocol::Trident {
        config.alpn_protocols = vec![ALPN.to_vec()];
    }
    Ok(Arc::new(config))
}

/// A TLS failure in words: the rustls error if there is one (e.g.
/// "invalid peer certificate: UnknownIssuer"), else the I/O error.
pub fn describe_tls_error(err: &std::io::Error) -> String {
    match err
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(tls) => tls.to_string(),
        None => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_readable_by_others_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = dir.path().join("key.pem");
        fs::write(&key, "not read").expect("write");
        fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = load_key(&key).expect_err("must refuse");
        assert!(
            matches!(err, RcpError::KeyPermissions { mode: 0o644, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("chmod 600"), "{err}");
    }
}
