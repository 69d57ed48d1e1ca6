//! YAML → [`HostConfiguration`] with key paths and line/column in errors.

use super::storage_graph::StorageGraph;
use super::validate::validate_with_graph;
use super::{HostConfiguration, ValidatedConfig, unsupported, verity_rules};
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
    parse_validated(yaml).map(ValidatedConfig::into_config)
}

/// [`parse`], handing back the configuration with the storage graph its
/// validation built.
pub fn parse_validated(yaml: &str) -> Result<ValidatedConfig, TridentError> {
    let mut hc = parse_syntax(yaml)?;
    normalize(&mut hc)?;
    // The block-device graph is checked for documents that use RAID,
    // encryption or verity too (not applied yet): a broken storage is
    // reported alone, or with the refusal of the unsupported feature.
    let graph = StorageGraph::build(&hc).map_err(|e| e.into_trident(Some(yaml)));
    // Upstream's verity rules first: a verity configuration upstream
    // refuses is invalid, whatever this daemon applies.
    if graph.is_ok() {
        verity_rules::validate(&hc)?;
    }
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
    let graph = validate_with_graph(&hc, Some(graph?))?;
    Ok(ValidatedConfig::new(hc, graph))
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
    let mut secret = false;
    let result = serde_saphyr::with_deserializer_from_str(yaml, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = e.path().to_string();
            secret = holds_secret(e.path());
            e.into_inner()
        })
    });
    result.map_err(|e| {
        let detail = e.without_snippet().to_string();
        let detail = if secret {
            without_value(&detail)
        } else {
            crate::redact::pem::redact_private_keys(&detail).into_owned()
        };
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

/// Whether the value at `path` is (or holds) a secret, as the redaction
/// sees it: under a key named like a secret (`password`, `*TOKEN*`, ...)
/// or under `environmentVariables` (whose values are secret by their
/// names, which a malformed block may not show).
fn holds_secret(path: &serde_path_to_error::Path) -> bool {
    path.iter().any(|segment| match segment {
        serde_path_to_error::Segment::Map { key } => {
            crate::redact::is_secret_name(key) || key == crate::redact::document::ENVIRONMENT_KEY
        }
        _ => false,
    })
}

/// serde's message for a value at a secret key, without the value: its
/// messages quote it (`invalid type: string "...", expected ...`,
/// ``unknown variant `...` ``). What is kept: the kind of error, the shape
/// of the value (`string`, `integer`, `sequence`, ...) and what was
/// expected (from the schema, written after the value, hence the last
/// `, expected `).
fn without_value(detail: &str) -> String {
    const NOT_SHOWN: &str = "(value not shown: the key holds a secret)";
    const KINDS: [&str; 4] = [
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown variant",
    ];
    const SHAPES: [&str; 12] = [
        "string",
        "integer",
        "floating",
        "boolean",
        "character",
        "byte",
        "unit",
        "Option",
        "newtype",
        "sequence",
        "map",
        "enum",
    ];
    let Some(kind) = KINDS.iter().find(|kind| detail.starts_with(*kind)) else {
        return format!("malformed value {NOT_SHOWN}");
    };
    let Some((head, expected)) = detail.rsplit_once(", expected ") else {
        return format!("{kind} {NOT_SHOWN}");
    };
    let shape = head
        .strip_prefix(kind)
        .and_then(|rest| rest.strip_prefix(": "))
        .and_then(|rest| rest.split([' ', '`', '"']).next())
        .filter(|word| SHAPES.contains(word));
    match shape {
        Some(shape) => format!("{kind}: {shape} {NOT_SHOWN}, expected {expected}"),
        None => format!("{kind} {NOT_SHOWN}, expected {expected}"),
    }
}

/// The configuration as YAML (what GetProvisionedConfig returns).
pub fn to_yaml(hc: &HostConfiguration) -> Result<String, TridentError> {
    serde_saphyr::to_string(hc).structured(Subkind::SerializeHostStatus)
}
