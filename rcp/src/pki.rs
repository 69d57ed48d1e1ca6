//! A throw-away certificate authority for tests and benchmarks (feature
//! `test-pki`): a CA, and host or orchestrator certificates it signs,
//! written as the PEM files the agent and the listener read.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::tls::TlsFiles;

/// What to put in a leaf certificate.
#[derive(Debug, Clone, Default)]
pub struct LeafSpec {
    /// DNS subject alternative names (the first is the host identity).
    pub dns: Vec<String>,
    /// Subject common name (the identity when there is no DNS name).
    pub common_name: Option<String>,
    /// Valid from 2020 to 2021 only.
    pub expired: bool,
    /// Valid from 2090 on only (a host whose clock is behind).
    pub not_yet_valid: bool,
}

impl LeafSpec {
    /// A certificate for one DNS name.
    pub fn dns(name: &str) -> Self {
        LeafSpec {
            dns: vec![name.to_owned()],
            ..LeafSpec::default()
        }
    }
}

/// Valid from 2020 to 2021, from 2090 on, or rcgen's default (1975 to 4096).
fn set_validity(params: &mut CertificateParams, spec: &LeafSpec) {
    if spec.expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    if spec.not_yet_valid {
        params.not_before = rcgen::date_time_ymd(2090, 1, 1);
        params.not_after = rcgen::date_time_ymd(2091, 1, 1);
    }
}

/// A self-signed certificate and its key (PEM) as `openssl req -x509`
/// makes them (upstream's `go:generate`): `CA:TRUE`, no key usages, so
/// only a peer that pins it byte for byte trusts it.
pub fn self_signed(spec: &LeafSpec) -> Result<(String, String), rcgen::Error> {
    let mut params = CertificateParams::new(spec.dns.clone())?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    if let Some(cn) = &spec.common_name {
        params
            .distinguished_name
            .push(DnType::CommonName, cn.as_str());
    }
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    set_validity(&mut params, spec);
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A CA that exists only in memory and in the files it writes.
#[derive(Debug)]
pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl TestCa {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> Result<Self, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(TestCa { issuer })
    }

    /// The CA certificate (PEM).
    pub fn cert_pem(&self) -> String {
        self.issuer.pem()
    }

    /// A leaf certificate and its key (PEM), usable as server and client.
    pub fn issue(&self, spec: &LeafSpec) -> Result<(String, String), rcgen::Error> {
        let mut params = CertificateParams::new(spec.dns.clone())?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = &spec.common_name {
            params
                .distinguished_name
                .push(DnType::CommonName, cn.as_str());
        }
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        set_validity(&mut params, spec);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// Writes `DIR/ca.pem`, `DIR/NAME.pem` and `DIR/NAME.key` (0600) and
    /// returns them as [`TlsFiles`].
    pub fn write_files(
        &self,
        dir: &Path,
        name: &str,
        spec: &LeafSpec,
    ) -> std::io::Result<TlsFiles> {
        let (cert, key) = self.issue(spec).map_err(std::io::Error::other)?;
        let files = TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join(format!("{name}.pem")),
            key: dir.join(format!("{name}.key")),
        };
        fs::write(&files.ca, self.cert_pem())?;
        fs::write(&files.cert, cert)?;
        fs::write(&files.key, key)?;
        fs::set_permissions(&files.key, fs::Permissions::from_mode(0o600))?;
        Ok(files)
    }
}
