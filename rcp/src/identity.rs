//! A host's identity: the first DNS name of its certificate's subject
//! alternative names, else its common name. It names the host's socket
//! (`DIR/<id>.sock`), so it must be a safe file name.

use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

use crate::error::RcpError;

/// Longest identity accepted (a file name is at most 255 bytes, and
/// `.sock` plus a temporary suffix are appended).
const MAX_ID_LEN: usize = 200;

/// The identity of the certificate in `der`.
pub fn identity_of(der: &[u8]) -> Result<String, RcpError> {
    let (_, cert) = X509Certificate::from_der(der)
        .map_err(|e| RcpError::Identity(format!("unparsable certificate: {e}")))?;
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        let first_dns = san.value.general_names.iter().find_map(|name| match name {
            GeneralName::DNSName(dns) => Some(dns.to_string()),
            _ => None,
        });
        if let Some(dns) = first_dns {
            return Ok(dns);
        }
    }
    cert.subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            RcpError::Identity("no DNS subject alternative name and no common name".into())
        })
}

/// Whether `id` is usable as a socket file name: letters, digits, `.`, `-`,
/// `_`, not starting with a dot (no hidden files, no `..`), not too long.
pub fn is_valid_host_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_ids_that_could_escape_the_directory_are_rejected() {
        assert!(is_valid_host_id("host-1.example_lab"));
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            ".hidden",
            "sp ace",
            "*.example",
        ] {
            assert!(!is_valid_host_id(bad), "{bad:?}");
        }
        assert!(!is_valid_host_id(&"a".repeat(MAX_ID_LEN + 1)));
    }
}
