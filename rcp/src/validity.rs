//! This host's own certificate against the clock. TLS has one alert for a
//! certificate outside its validity window (`certificate_expired`, sent by
//! rustls for "expired" and "not valid yet" alike), so the agent cannot
//! learn from the orchestrator which it is; it tells from its own
//! certificate, where the fix differs (renew it, or fix this host's clock).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use x509_parser::prelude::{FromDer, X509Certificate};

use crate::error::RcpError;

/// `Ok` if the certificate in `der` is valid at `now`, else
/// [`RcpError::CertificateNotYetValid`] or [`RcpError::CertificateExpired`].
/// An unparsable certificate is not this check's business (`Ok`).
pub fn check_validity(der: &[u8], now: SystemTime) -> Result<(), RcpError> {
    let Ok((_, cert)) = X509Certificate::from_der(der) else {
        return Ok(());
    };
    let validity = cert.validity();
    let now_secs = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    let not_before = validity.not_before.timestamp();
    let not_after = validity.not_after.timestamp();
    if now_secs < not_before {
        return Err(RcpError::CertificateNotYetValid {
            not_before: rfc3339(not_before),
            now: rfc3339(now_secs),
        });
    }
    if now_secs > not_after {
        return Err(RcpError::CertificateExpired {
            not_after: rfc3339(not_after),
            now: rfc3339(now_secs),
        });
    }
    Ok(())
}

fn rfc3339(secs: i64) -> String {
    let time = UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    humantime::format_rfc3339_seconds(time).to_string()
}

#[cfg(all(test, feature = "test-pki"))]
mod tests {
    use super::*;
    use crate::pki::{LeafSpec, TestCa};
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;

    fn der(spec: &LeafSpec) -> Vec<u8> {
        let ca = TestCa::new("validity CA").expect("ca");
        let (pem, _) = ca.issue(spec).expect("issue");
        CertificateDer::from_pem_slice(pem.as_bytes())
            .expect("pem")
            .to_vec()
    }

    #[test]
    fn not_yet_valid_expired_and_valid_are_three_different_answers() {
        let now = SystemTime::now();
        let early = check_validity(
            &der(&LeafSpec {
                not_yet_valid: true,
                ..LeafSpec::dns("h")
            }),
            now,
        );
        assert!(
            matches!(&early, Err(RcpError::CertificateNotYetValid { not_before, .. }) if not_before.starts_with("2090-01-01")),
            "{early:?}"
        );
        let late = check_validity(
            &der(&LeafSpec {
                expired: true,
                ..LeafSpec::dns("h")
            }),
            now,
        );
        assert!(
            matches!(&late, Err(RcpError::CertificateExpired { not_after, .. }) if not_after.starts_with("2021-01-01")),
            "{late:?}"
        );
        check_validity(&der(&LeafSpec::dns("h")), now).expect("valid now");
    }
}
