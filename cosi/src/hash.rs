//! SHA-384 helpers and the "expected hash" of a COSI file's metadata.

use sha2::{Digest, Sha384};

use crate::error::CosiError;
use crate::metadata::is_sha384_hex;

/// The keyword meaning "do not check the metadata hash".
pub const IGNORED: &str = "ignored";

/// The expected SHA-384 of `metadata.json`, as given by the Host
/// Configuration (`image.sha384`) or StreamDisk (`image_hash`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectedHash {
    /// 96 lowercase hex digits.
    Sha384(String),
    Ignored,
}

impl ExpectedHash {
    /// Parses `"ignored"` or 96 lowercase hex digits. A `sha384:` prefix (the
    /// form `Completed.image_hash` uses) is accepted too, so a reported hash
    /// can be fed back in.
    pub fn parse(value: &str) -> Result<Self, CosiError> {
        if value == IGNORED {
            return Ok(ExpectedHash::Ignored);
        }
        let hex = value.strip_prefix("sha384:").unwrap_or(value);
        if is_sha384_hex(hex) {
            Ok(ExpectedHash::Sha384(hex.to_owned()))
        } else {
            Err(CosiError::InvalidExpectedHash {
                value: value.to_owned(),
            })
        }
    }

    /// StreamDisk semantics: an absent hash means "ignored".
    pub fn from_optional(value: Option<&str>) -> Result<Self, CosiError> {
        value.map_or(Ok(ExpectedHash::Ignored), Self::parse)
    }
}

/// Lowercase hex SHA-384 of `bytes`.
pub fn sha384_hex(bytes: &[u8]) -> String {
    hex::encode(Sha384::digest(bytes))
}
