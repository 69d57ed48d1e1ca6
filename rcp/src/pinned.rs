//! Upstream mode's trust rule: a peer certificate that is byte for byte
//! one of the trust file's certificates is accepted as it stands, as Go's
//! crypto/tls accepts a certificate that is itself in the pool (a chain of
//! length 1), even when it is `CA:TRUE`. Upstream's `go:generate` makes
//! its certificates with `openssl req -x509`, which are `CA:TRUE`, and
//! each side trusts the other's certificate itself; webpki refuses every
//! CA certificate as an end entity (`CaUsedAsEndEntity`), so without this
//! rule our side would refuse every upstream agent and netlaunch built the
//! stock way.
//!
//! A pinned certificate is still checked as Go checks a chain of one: it
//! must parse, be within its validity dates, allow the purpose if it has
//! an extended key usage, and (agent side) name the server in its subject
//! alternative names. The handshake signature is webpki's check, as for
//! any certificate. Every other certificate goes through webpki
//! unchanged. Our own protocol does not use this: its rules stay webpki's.

use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, verify_server_name};
use rustls::server::ParsedCertificate;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use x509_parser::prelude::{FromDer, X509Certificate};

/// What the peer's certificate authenticates (its extended key usage).
#[derive(Debug, Clone, Copy)]
enum Purpose {
    Server,
    Client,
}

/// The trust file's certificates, compared as DER.
#[derive(Debug, Clone)]
struct Pins(Vec<CertificateDer<'static>>);

impl Pins {
    fn contains(&self, cert: &CertificateDer<'_>) -> bool {
        self.0.iter().any(|pin| pin.as_ref() == cert.as_ref())
    }
}

/// Go's checks of a pool certificate presented as the peer's own.
fn check_pinned(cert: &CertificateDer<'_>, now: UnixTime, purpose: Purpose) -> Result<(), Error> {
    // webpki's parser refuses what it refuses in any certificate (bad DER,
    // an unhandled critical extension), as Go's parser and checks do.
    ParsedCertificate::try_from(cert)?;
    let (_, parsed) = X509Certificate::from_der(cert.as_ref())
        .map_err(|_| Error::from(CertificateError::BadEncoding))?;
    let validity = parsed.validity();
    let now_secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let not_before = validity.not_before.timestamp();
    let not_after = validity.not_after.timestamp();
    if now_secs < not_before {
        return Err(CertificateError::NotValidYetContext {
            time: now,
            not_before: unix_time(not_before),
        }
        .into());
    }
    if now_secs > not_after {
        return Err(CertificateError::ExpiredContext {
            time: now,
            not_after: unix_time(not_after),
        }
        .into());
    }
    // Go: no extended key usage, or "any", allows every purpose.
    let eku = parsed
        .extended_key_usage()
        .map_err(|_| Error::from(CertificateError::BadEncoding))?;
    if let Some(eku) = eku {
        let eku = eku.value;
        let allowed = eku.any
            || match purpose {
                Purpose::Server => eku.server_auth,
                Purpose::Client => eku.client_auth,
            };
        if !allowed {
            return Err(CertificateError::InvalidPurpose.into());
        }
    }
    Ok(())
}

fn unix_time(secs: i64) -> UnixTime {
    UnixTime::since_unix_epoch(Duration::from_secs(u64::try_from(secs).unwrap_or(0)))
}

/// webpki's answer for a certificate outside the trust file. A
/// self-issued one is refused for being a CA before webpki looks for its
/// issuer, and `CaUsedAsEndEntity` would read as though upstream's
/// certificates were refused for their `CA:TRUE`; Go says its issuer is
/// unknown, and so do we.
fn not_pinned(cert: &CertificateDer<'_>, err: Error) -> Error {
    let ca_as_end_entity = matches!(
        &err,
        Error::InvalidCertificate(CertificateError::Other(other))
            if matches!(other.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity))
    );
    let self_issued = || {
        X509Certificate::from_der(cert.as_ref())
            .is_ok_and(|(_, c)| c.subject().as_raw() == c.issuer().as_raw())
    };
    if ca_as_end_entity && self_issued() {
        CertificateError::UnknownIssuer.into()
    } else {
        err
    }
}

/// The agent's check of the listener's certificate in upstream mode.
#[derive(Debug)]
pub struct PinnedServerVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    pins: Pins,
}

impl PinnedServerVerifier {
    /// `trusted` are the trust file's certificates, `webpki` a verifier
    /// built from them.
    pub fn new(webpki: Arc<WebPkiServerVerifier>, trusted: Vec<CertificateDer<'static>>) -> Self {
        PinnedServerVerifier {
            webpki,
            pins: Pins(trusted),
        }
    }
}

impl ServerCertVerifier for PinnedServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if !self.pins.contains(end_entity) {
            return self
                .webpki
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
                .map_err(|err| not_pinned(end_entity, err));
        }
        check_pinned(end_entity, now, Purpose::Server)?;
        // Go checks the name against a pool certificate too.
        verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// The listener's check of an agent's certificate in upstream mode.
#[derive(Debug)]
pub struct PinnedClientVerifier {
    webpki: Arc<dyn ClientCertVerifier>,
    pins: Pins,
}

impl PinnedClientVerifier {
    /// `trusted` are the trust file's certificates, `webpki` a verifier
    /// built from them.
    pub fn new(webpki: Arc<dyn ClientCertVerifier>, trusted: Vec<CertificateDer<'static>>) -> Self {
        PinnedClientVerifier {
            webpki,
            pins: Pins(trusted),
        }
    }
}

impl ClientCertVerifier for PinnedClientVerifier {
    fn offer_client_auth(&self) -> bool {
        self.webpki.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.webpki.client_auth_mandatory()
    }

    // The trust file's subjects, as Go's listener hints its pool's: Go's
    // agent sends its certificate only if its issuer is among them.
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        if !self.pins.contains(end_entity) {
            return self
                .webpki
                .verify_client_cert(end_entity, intermediates, now)
                .map_err(|err| not_pinned(end_entity, err));
        }
        check_pinned(end_entity, now, Purpose::Client)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(all(test, feature = "test-pki"))]
#[path = "pinned_tests.rs"]
mod tests;
