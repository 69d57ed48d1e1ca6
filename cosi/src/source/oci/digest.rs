//! The digest of an `oci://` layer's bytes as the puller hands them up: a
//! ranged answer (a resumed pull) is not checked by the registry client,
//! so the whole blob is checked here, against the manifest's digest.

use sha2::Digest;

/// The digest of the bytes handed up, in the layer digest's algorithm
/// (another algorithm is left to the COSI's own SHA-384 chain).
pub(super) enum LayerDigest {
    Sha256(sha2::Sha256),
    Sha512(sha2::Sha512),
    Unchecked,
}

impl LayerDigest {
    pub(super) fn of(digest: &str) -> LayerDigest {
        match digest.split_once(':') {
            Some(("sha256", _)) => LayerDigest::Sha256(sha2::Sha256::new()),
            Some(("sha512", _)) => LayerDigest::Sha512(sha2::Sha512::new()),
            _ => LayerDigest::Unchecked,
        }
    }

    pub(super) fn update(&mut self, data: &[u8]) {
        match self {
            LayerDigest::Sha256(h) => h.update(data),
            LayerDigest::Sha512(h) => h.update(data),
            LayerDigest::Unchecked => {}
        }
    }

    /// Ok, or the digest the bytes have.
    pub(super) fn check(&mut self, expected: &str) -> Result<(), String> {
        let actual = match std::mem::replace(self, LayerDigest::Unchecked) {
            LayerDigest::Sha256(h) => format!("sha256:{}", hex::encode(h.finalize())),
            LayerDigest::Sha512(h) => format!("sha512:{}", hex::encode(h.finalize())),
            LayerDigest::Unchecked => return Ok(()),
        };
        if actual == expected {
            Ok(())
        } else {
            Err(actual)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_layer_digest_checks_the_bytes_handed_up() {
        let good = format!("sha256:{}", hex::encode(sha2::Sha256::digest(b"abc")));
        let mut digest = LayerDigest::of(&good);
        digest.update(b"ab");
        digest.update(b"c");
        assert_eq!(digest.check(&good), Ok(()));
        let mut digest = LayerDigest::of(&good);
        digest.update(b"abd");
        assert!(digest.check(&good).unwrap_err().starts_with("sha256:"));
        assert_eq!(LayerDigest::of("md5:x").check("md5:x"), Ok(()));
    }
}
