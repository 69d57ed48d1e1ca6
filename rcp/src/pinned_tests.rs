//! The pinning rule, verifier by verifier, and a whole upstream-mode
//! handshake with `CA:TRUE` certificates (as upstream's openssl makes).

use std::path::Path;

use rustls_pki_types::pem::PemObject;

use super::*;
use crate::pki::{LeafSpec, TestCa, self_signed};
use crate::tls::{Protocol, TlsFiles, UPSTREAM_SERVER_NAME, client_config, server_config};

/// A `CA:TRUE` self-signed certificate, as upstream's `openssl req -x509`.
fn openssl_like(spec: &LeafSpec) -> (CertificateDer<'static>, String, String) {
    let (pem, key) = self_signed(spec).expect("self-signed");
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).expect("pem");
    (der, pem, key)
}

fn server_spec() -> LeafSpec {
    LeafSpec {
        common_name: Some("localhost".into()),
        ..LeafSpec::dns(UPSTREAM_SERVER_NAME)
    }
}

fn client_spec() -> LeafSpec {
    LeafSpec {
        common_name: Some("localhost".into()),
        ..LeafSpec::default()
    }
}

fn roots(trusted: &[CertificateDer<'static>]) -> Arc<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in trusted {
        roots.add(cert.clone()).expect("anchor");
    }
    Arc::new(roots)
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn server_verifier(trusted: Vec<CertificateDer<'static>>) -> PinnedServerVerifier {
    let webpki = WebPkiServerVerifier::builder_with_provider(roots(&trusted), provider())
        .build()
        .expect("verifier");
    PinnedServerVerifier::new(webpki, trusted)
}

fn client_verifier(trusted: Vec<CertificateDer<'static>>) -> PinnedClientVerifier {
    let webpki =
        rustls::server::WebPkiClientVerifier::builder_with_provider(roots(&trusted), provider())
            .build()
            .expect("verifier");
    PinnedClientVerifier::new(webpki, trusted)
}

fn check_server(
    verifier: &PinnedServerVerifier,
    cert: &CertificateDer<'_>,
    name: &str,
) -> Result<(), Error> {
    let name = ServerName::try_from(name.to_owned()).expect("name");
    verifier
        .verify_server_cert(cert, &[], &name, &[], UnixTime::now())
        .map(|_| ())
}

fn check_client(verifier: &PinnedClientVerifier, cert: &CertificateDer<'_>) -> Result<(), Error> {
    verifier
        .verify_client_cert(cert, &[], UnixTime::now())
        .map(|_| ())
}

#[test]
fn a_pinned_ca_true_certificate_is_accepted_by_both_sides() {
    let (server, _, _) = openssl_like(&server_spec());
    let (client, _, _) = openssl_like(&client_spec());
    check_server(
        &server_verifier(vec![server.clone()]),
        &server,
        UPSTREAM_SERVER_NAME,
    )
    .expect("agent accepts the pinned server certificate");
    check_client(&client_verifier(vec![client.clone()]), &client)
        .expect("listener accepts the pinned client certificate");
}

#[test]
fn a_self_signed_certificate_not_in_the_file_is_an_unknown_issuer() {
    let (pinned, _, _) = openssl_like(&server_spec());
    let (other, _, _) = openssl_like(&server_spec());
    let err = check_server(
        &server_verifier(vec![pinned.clone()]),
        &other,
        UPSTREAM_SERVER_NAME,
    )
    .expect_err("agent refuses");
    assert_eq!(err, CertificateError::UnknownIssuer.into(), "{err}");
    let err = check_client(&client_verifier(vec![pinned]), &other).expect_err("listener refuses");
    assert_eq!(err, CertificateError::UnknownIssuer.into(), "{err}");
}

#[test]
fn an_expired_or_not_yet_valid_pinned_certificate_is_refused() {
    for (spec, what) in [
        (
            LeafSpec {
                expired: true,
                ..server_spec()
            },
            "expired",
        ),
        (
            LeafSpec {
                not_yet_valid: true,
                ..server_spec()
            },
            "not valid yet",
        ),
    ] {
        let (cert, _, _) = openssl_like(&spec);
        let err = check_server(
            &server_verifier(vec![cert.clone()]),
            &cert,
            UPSTREAM_SERVER_NAME,
        )
        .expect_err(what);
        assert!(err.to_string().contains(what), "{err}");
        let err = check_client(&client_verifier(vec![cert.clone()]), &cert).expect_err(what);
        assert!(err.to_string().contains(what), "{err}");
    }
}

#[test]
fn a_pinned_server_certificate_for_another_name_is_refused() {
    let (cert, _, _) = openssl_like(&server_spec());
    let err = check_server(
        &server_verifier(vec![cert.clone()]),
        &cert,
        "other-orchestrator.test",
    )
    .expect_err("wrong name");
    assert!(
        matches!(
            &err,
            Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
        ),
        "{err}"
    );
    // No subject alternative name at all (upstream's client certificate).
    let (cert, _, _) = openssl_like(&client_spec());
    check_server(
        &server_verifier(vec![cert.clone()]),
        &cert,
        UPSTREAM_SERVER_NAME,
    )
    .expect_err("no name");
}

#[test]
fn a_certificate_signed_by_a_ca_in_the_file_still_goes_through_webpki() {
    let ca = TestCa::new("pinned test CA").expect("ca");
    let anchor = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).expect("pem");
    let (leaf, _) = ca
        .issue(&LeafSpec::dns(UPSTREAM_SERVER_NAME))
        .expect("leaf");
    let leaf = CertificateDer::from_pem_slice(leaf.as_bytes()).expect("pem");
    check_server(
        &server_verifier(vec![anchor.clone()]),
        &leaf,
        UPSTREAM_SERVER_NAME,
    )
    .expect("issued by the CA");
    check_client(&client_verifier(vec![anchor]), &leaf).expect("issued by the CA");
    let (expired, _) = ca
        .issue(&LeafSpec {
            expired: true,
            ..LeafSpec::dns(UPSTREAM_SERVER_NAME)
        })
        .expect("leaf");
    let expired = CertificateDer::from_pem_slice(expired.as_bytes()).expect("pem");
    let anchor = CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).expect("pem");
    check_client(&client_verifier(vec![anchor]), &expired).expect_err("expired");
}

fn write(
    dir: &Path,
    name: &str,
    cert: &str,
    key: &str,
) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let (crt, pem) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&crt, cert).expect("write");
    std::fs::write(&pem, key).expect("write");
    std::fs::set_permissions(&pem, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    (crt, pem)
}

/// Both configurations as `--protocol upstream` builds them, each side
/// trusting the other's `CA:TRUE` certificate itself: the handshake (and
/// so the TLS 1.3 signature check with a pinned certificate) succeeds,
/// and our own protocol still refuses the same files.
#[tokio::test]
async fn upstream_mode_handshakes_with_pinned_ca_true_certificates_and_ours_does_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_, server_pem, server_key) = openssl_like(&server_spec());
    let (_, client_pem, client_key) = openssl_like(&client_spec());
    let (server_crt, server_key) = write(dir.path(), "server", &server_pem, &server_key);
    let (client_crt, client_key) = write(dir.path(), "client", &client_pem, &client_key);
    let server = TlsFiles {
        ca: client_crt.clone(),
        cert: server_crt.clone(),
        key: server_key,
    };
    let client = TlsFiles {
        ca: server_crt,
        cert: client_crt,
        key: client_key,
    };
    assert!(
        handshake(&server, &client, Protocol::Upstream)
            .await
            .is_ok()
    );
    let err = handshake(&server, &client, Protocol::Trident)
        .await
        .expect_err("ours is strict");
    assert!(err.contains("CaUsedAsEndEntity"), "{err}");
}

/// One handshake over an in-memory pipe, and one read: `Ok` only if both
/// sides accepted the other.
async fn handshake(server: &TlsFiles, client: &TlsFiles, protocol: Protocol) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let acceptor =
        tokio_rustls::TlsAcceptor::from(server_config(server, protocol).expect("server"));
    let connector =
        tokio_rustls::TlsConnector::from(client_config(client, protocol).expect("client"));
    let (a, b) = tokio::io::duplex(64 * 1024);
    let name = ServerName::try_from(UPSTREAM_SERVER_NAME).expect("name");
    let server_side = async {
        let mut tls = acceptor.accept(a).await.map_err(|e| e.to_string())?;
        tls.write_all(b"ok").await.map_err(|e| e.to_string())?;
        tls.flush().await.map_err(|e| e.to_string())
    };
    let client_side = async {
        let mut tls = connector
            .connect(name, b)
            .await
            .map_err(|e| e.to_string())?;
        let mut buf = [0u8; 2];
        tls.read_exact(&mut buf).await.map_err(|e| e.to_string())?;
        Ok::<_, String>(buf)
    };
    match tokio::join!(server_side, client_side) {
        (Ok(()), Ok(_)) => Ok(()),
        (served, read) => Err(format!("server: {served:?}; client: {read:?}")),
    }
}
