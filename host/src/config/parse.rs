//! YAML → [`HostConfiguration`] with key paths and line/column in errors.

use super::storage_graph::StorageGraph;
use super::{HostConfiguration, unsupported, validate};
use crate::error::{ResultExt, Subkind, TridentError};

/// Parses and fully validates a Host Configuration.
///
/// Errors: unknown keys → invalid-input `unknown-key`; malformed values →
/// invalid-input `parse-host-configuration`; unsupported upstream features →
/// unsupported-configuration (naming the storage's graph error too, if
/// any); a storage that is no valid graph of block devices and other
/// broken references → invalid-input `invalid-host-configuration`. Every
/// message names the key path.
pub fn parse(yaml: &str) -> Result<HostConfiguration, TridentError> {
    let mut hc = parse_syntax(yaml)?;
    normalize(&mut hc)?;
    // The block-device graph is checked for documents that use RAID,
    // encryption or verity too (not applied yet): a broken storage is
    // reported alone, or with the refusal of the unsupported feature.
    let graph = StorageGraph::build(&hc).map_err(|e| e.into_trident(Some(yaml)));
    unsupported::check(&hc, yaml).map_err(|refused| match &graph {
        Err(invalid) => TridentError::new(
            refused.subkind(),
            format!(
                "{}; and the storage is invalid: {}",
                refused.message(),
                invalid.message()
            ),
        ),
        Ok(_) => refused,
    })?;
    graph?;
    validate(&hc)?;
    Ok(hc)
}

/// Folds upstream's alternative spellings into one form: tagged health
/// checks become flat ones, an upper-case image hash lower-case.
fn normalize(hc: &mut HostConfiguration) -> Result<(), TridentError> {
    for (i, check) in hc.health.checks.iter_mut().enumerate() {
        if !check.untag() {
            return Err(TridentError::new(
                Subkind::InvalidHostConfiguration,
                format!(
                    "Host Configuration key 'health.checks[{i}]': a tagged check \
                     ('Script' or 'SystemdCheck') must be the only key of its entry"
                ),
            ));
        }
    }
    if let Some(image) = &mut hc.image
        && image.sha384 != super::HASH_IGNORED
    {
        image.sha384.make_ascii_lowercase();
    }
    Ok(())
}

/// Deserializes only (no semantic checks).
pub(super) fn parse_syntax(yaml: &str) -> Result<HostConfiguration, TridentError> {
    if yaml.trim().is_empty() {
        return Err(TridentError::new(
            Subkind::ParseHostConfiguration,
            "The Host Configuration is empty",
        ));
    }
    let mut path = String::new();
    let result = serde_saphyr::with_deserializer_from_str(yaml, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = e.path().to_string();
            e.into_inner()
        })
    });
    result.map_err(|e| {
        let detail = e.without_snippet().to_string();
        let subkind = if detail.starts_with("unknown field") {
            Subkind::UnknownKey
        } else {
            Subkind::ParseHostConfiguration
        };
        let key = if path.is_empty() || path == "." {
            "(document root)".to_owned()
        } else {
            path.clone()
        };
        TridentError::new(subkind, format!("Host Configuration key '{key}': {detail}"))
    })
}

/// The configuration as YAML (what GetProvisionedConfig returns).
pub fn to_yaml(hc: &HostConfiguration) -> Result<String, TridentError> {
    serde_saphyr::to_string(hc).structured(Subkind::SerializeHostStatus)
}
