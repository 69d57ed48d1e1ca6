//! `metadata.json` bytes → [`Metadata`], with the JSON path of a missing or
//! mistyped field in the error.

use super::{Metadata, MetadataError};

impl Metadata {
    /// Parses `metadata.json` bytes (no semantic checks; see
    /// [`Metadata::validate`]). Malformed JSON is a [`MetadataError::Parse`]
    /// with line and column; a missing field or a wrong value is a
    /// [`MetadataError::Invalid`] naming the field (`osPackages[0].arch`).
    /// Hashes are normalised to lower case (the schema allows either).
    pub fn from_json(bytes: &[u8]) -> Result<Self, MetadataError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let mut metadata: Metadata =
            serde_path_to_error::deserialize(&mut de).map_err(data_error)?;
        de.end().map_err(|e| syntax_error(&e))?;
        metadata.lowercase_hashes();
        Ok(metadata)
    }

    fn lowercase_hashes(&mut self) {
        for fs in &mut self.images {
            fs.image.sha384.make_ascii_lowercase();
            if let Some(v) = &mut fs.verity {
                v.image.sha384.make_ascii_lowercase();
            }
        }
        if let Some(index) = &mut self.chunk_index {
            index.sha384.make_ascii_lowercase();
        }
        if let Some(disk) = &mut self.disk {
            for region in &mut disk.gpt_regions {
                region.image.sha384.make_ascii_lowercase();
            }
        }
    }
}

fn syntax_error(e: &serde_json::Error) -> MetadataError {
    MetadataError::Parse {
        line: e.line(),
        column: e.column(),
        reason: strip_position(&e.to_string()).to_owned(),
    }
}

fn data_error(e: serde_path_to_error::Error<serde_json::Error>) -> MetadataError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    if !inner.is_data() {
        return syntax_error(&inner);
    }
    let text = inner.to_string();
    let reason = strip_position(&text);
    // serde reports a missing field at the object that lacks it.
    if let Some(field) = reason
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        let location = if path == "." {
            field.to_owned()
        } else {
            format!("{path}.{field}")
        };
        return MetadataError::Invalid {
            location,
            reason: "is required".to_owned(),
        };
    }
    MetadataError::Invalid {
        location: if path == "." {
            "(root)".to_owned()
        } else {
            path
        },
        reason: reason.to_owned(),
    }
}

/// serde_json appends " at line L column C"; the location says more.
fn strip_position(text: &str) -> &str {
    text.rfind(" at line ").map_or(text, |i| &text[..i])
}
