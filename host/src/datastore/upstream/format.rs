//! Upstream's Host Status document (v0.27.0, `trident_api::status`), as
//! one row of its `hoststatus` table holds it: YAML, camelCase keys,
//! kebab-case values; `spec`, `servicingState` and `installIndex`
//! required; `specOld`, `lastError`, `partitionPaths`, `abActiveVolume`,
//! `diskUuids`, `isManagementOs` and `tridentVersion` left out when empty.
//!
//! Reading ([`decode`]) takes upstream's fields into our model and keeps
//! the document. Writing ([`encode`]) builds upstream's fields from ours,
//! and keeps what upstream wrote that our model does not hold: a key of
//! the previous row we do not know is written again as it was, and a
//! `spec` / `specOld` / `lastError` our model reads the same as the
//! previous row's is written as that row had it (with any keys a newer
//! upstream added, its `internalParams`, its YAML tags...).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::last_error;
use crate::config::HostConfiguration;
use crate::status::{AbVolume, HostStatus, ServicingState};

/// The keys of upstream's Host Status (all of them are read into ours).
pub const UPSTREAM_KEYS: [&str; 10] = [
    "spec",
    "specOld",
    "servicingState",
    "lastError",
    "partitionPaths",
    "abActiveVolume",
    "diskUuids",
    "installIndex",
    "isManagementOs",
    "tridentVersion",
];

/// The upstream release whose format we write: the `tridentVersion` of
/// our rows is `<this>+tridentd.<our version>`, a semver upstream parses
/// and, pre-release and build ignored, at least the 0.21.0 its manual
/// rollback asks of every row it rolls back across.
pub const UPSTREAM_FORMAT_VERSION: &str = "0.27.0";

/// `tridentVersion` of the rows we write.
pub fn stamp(our_version: &str) -> String {
    let build: String = our_version
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let build = build.trim_matches('.');
    if build.is_empty() {
        format!("{UPSTREAM_FORMAT_VERSION}+tridentd")
    } else {
        format!("{UPSTREAM_FORMAT_VERSION}+tridentd.{build}")
    }
}

/// A row read.
#[derive(Debug, Clone)]
pub struct Decoded {
    pub status: HostStatus,
    /// `tridentVersion` as written (empty when absent).
    pub trident_version: String,
    /// What our model does not hold, each kept in the datastore.
    pub kept: Vec<String>,
    /// The whole document.
    pub document: Value,
}

/// Why a row is not a Host Status we can read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    NotYaml(String),
    NotHostStatus(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotYaml(e) => write!(f, "not valid YAML: {e}"),
            Self::NotHostStatus(e) => write!(f, "not a Host Status: {e}"),
        }
    }
}

/// Reads one row's text.
pub fn decode(text: &str) -> Result<Decoded, DecodeError> {
    let document: Value =
        serde_saphyr::from_str(text).map_err(|e| DecodeError::NotYaml(e.to_string()))?;
    let Value::Object(map) = &document else {
        return Err(DecodeError::NotHostStatus(format!(
            "a YAML {}, not a mapping",
            kind_of(&document)
        )));
    };
    let not = |e: String| DecodeError::NotHostStatus(e);
    let required = |key: &str| {
        map.get(key)
            .ok_or_else(|| not(format!("missing field `{key}`")))
    };
    let field = |key: &str, e: serde_json::Error| not(format!("field `{key}`: {e}"));
    let mut kept = Vec::new();

    let servicing_state: ServicingState =
        serde_json::from_value(required("servicingState")?.clone())
            .map_err(|e| field("servicingState", e))?;
    let install_index = required("installIndex")?
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| not("field `installIndex`: not a count".to_owned()))?;
    let spec = read_spec(required("spec")?, "spec", &mut kept).map_err(not)?;
    let spec_old = match present(map, "specOld") {
        Some(value) => read_spec(value, "specOld", &mut kept).map_err(not)?,
        None => None,
    };
    let last_error = present(map, "lastError").map(last_error::from_upstream);
    let partition_paths = string_map(map, "partitionPaths").map_err(not)?;
    let disk_uuids = string_map(map, "diskUuids").map_err(not)?;
    let ab_active_volume: Option<AbVolume> = match present(map, "abActiveVolume") {
        Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| field("abActiveVolume", e))?),
        None => None,
    };
    let is_management_os = match present(map, "isManagementOs") {
        Some(v) => v
            .as_bool()
            .ok_or_else(|| not("field `isManagementOs`: not a boolean".to_owned()))?,
        None => false,
    };
    let trident_version = match present(map, "tridentVersion") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    for key in map.keys() {
        if !UPSTREAM_KEYS.contains(&key.as_str()) {
            kept.push(format!("`{key}`"));
        }
    }
    let status = HostStatus {
        spec,
        spec_old,
        servicing_state,
        last_error,
        partition_paths,
        ab_active_volume,
        disk_uuids,
        install_index,
        is_management_os,
        trident_version: trident_version.clone(),
        ..HostStatus::default()
    };
    Ok(Decoded {
        status,
        trident_version,
        kept,
        document,
    })
}

/// Writes `status` as one row: upstream's fields from ours, stamped
/// `trident_version`, and what `previous` (the newest row) holds that our
/// model does not.
pub fn encode(
    status: &HostStatus,
    previous: Option<&Value>,
    trident_version: &str,
) -> Result<String, serde_saphyr::ser::Error> {
    let previous = previous.and_then(Value::as_object);
    let earlier = |key: &str| previous.and_then(|m| present(m, key));
    // A configuration as upstream last wrote it, when ours reads the same.
    let same_spec = |ours: &HostConfiguration| {
        let ours = config_value(ours);
        ["spec", "specOld"]
            .into_iter()
            .filter_map(earlier)
            .find(|raw| {
                let mut ignored = Vec::new();
                read_spec(raw, "", &mut ignored).is_ok_and(|parsed| match parsed {
                    Some(parsed) => config_value(&parsed) == ours,
                    None => is_default(&ours),
                })
            })
            .cloned()
    };
    let spec_value =
        |spec: &HostConfiguration| same_spec(spec).unwrap_or_else(|| config_value(spec));

    let mut map = Map::new();
    map.insert(
        "spec".into(),
        status
            .spec
            .as_ref()
            .map_or_else(|| Value::Object(Map::new()), spec_value),
    );
    if let Some(old) = status.spec_old.as_ref()
        && !is_default(&config_value(old))
    {
        map.insert("specOld".into(), spec_value(old));
    }
    map.insert("servicingState".into(), to_value(status.servicing_state));
    if let Some(error) = &status.last_error {
        let value = earlier("lastError")
            .filter(|raw| last_error::from_upstream(raw) == *error)
            .cloned()
            .unwrap_or_else(|| last_error::to_upstream(error));
        map.insert("lastError".into(), value);
    }
    if !status.partition_paths.is_empty() {
        map.insert("partitionPaths".into(), to_value(&status.partition_paths));
    }
    if let Some(volume) = status.ab_active_volume {
        map.insert("abActiveVolume".into(), to_value(volume));
    }
    // Upstream reads each as a UUID: one that is not is left out rather
    // than make the whole row unreadable to it.
    let uuids: BTreeMap<&String, &String> = status
        .disk_uuids
        .iter()
        .filter(|(_, uuid)| uuid::Uuid::parse_str(uuid).is_ok())
        .collect();
    if !uuids.is_empty() {
        map.insert("diskUuids".into(), to_value(&uuids));
    }
    map.insert("installIndex".into(), status.install_index.into());
    if status.is_management_os {
        map.insert("isManagementOs".into(), true.into());
    }
    map.insert("tridentVersion".into(), trident_version.into());
    if let Some(previous) = previous {
        for (key, value) in previous {
            if !UPSTREAM_KEYS.contains(&key.as_str()) {
                map.insert(key.clone(), value.clone());
            }
        }
    }
    serde_saphyr::to_string(&Value::Object(map))
}

/// A configuration read leniently: a key our model does not know (a newer
/// upstream's) is left out of ours, named in `kept` (the document keeps
/// it); the default configuration (upstream's "none") reads as `None`.
fn read_spec(
    value: &Value,
    key: &str,
    kept: &mut Vec<String>,
) -> Result<Option<HostConfiguration>, String> {
    if value.is_null() {
        return Ok(None);
    }
    let mut value = value.clone();
    // Each pass removes one unknown key; a document has only so many.
    for _ in 0..256 {
        match serde_path_to_error::deserialize::<_, HostConfiguration>(&value) {
            Ok(config) => return Ok((!is_default(&config_value(&config))).then_some(config)),
            Err(e) => {
                let path = e.path().to_string();
                let Some(unknown) = unknown_field(&e.inner().to_string()) else {
                    return Err(format!("field `{key}.{path}`: {}", e.inner()));
                };
                if !remove_key(&mut value, e.path(), &unknown) {
                    return Err(format!("field `{key}.{path}`: {}", e.inner()));
                }
                let at = if path == "." || path.is_empty() {
                    format!("{key}.{unknown}")
                } else if path.ends_with(&unknown) {
                    format!("{key}.{path}")
                } else {
                    format!("{key}.{path}.{unknown}")
                };
                kept.push(format!("`{at}`"));
            }
        }
    }
    Err(format!("field `{key}`: too many unknown keys"))
}

/// The name in serde's "unknown field `x`, expected ..." message.
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(name, _)| name.to_owned())
}

/// Removes `name` from the mapping at `path` (or at its parent, when the
/// path already ends in the unknown key); whether it was there.
fn remove_key(value: &mut Value, path: &serde_path_to_error::Path, name: &str) -> bool {
    let segments: Vec<&serde_path_to_error::Segment> = path.iter().collect();
    let try_at = |upto: usize, value: &mut Value| -> bool {
        let mut node = value;
        for segment in &segments[..upto] {
            let next = match segment {
                serde_path_to_error::Segment::Map { key } => node.get_mut(key.as_str()),
                serde_path_to_error::Segment::Seq { index } => node.get_mut(*index),
                _ => None,
            };
            match next {
                Some(n) => node = n,
                None => return false,
            }
        }
        node.as_object_mut()
            .is_some_and(|m| m.remove(name).is_some())
    };
    try_at(segments.len(), value) || (!segments.is_empty() && try_at(segments.len() - 1, value))
}

fn present<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).filter(|v| !v.is_null())
}

fn string_map(map: &Map<String, Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    match present(map, key) {
        None => Ok(BTreeMap::new()),
        Some(Value::Object(entries)) => entries
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(format!(
                    "field `{key}.{k}`: a {}, not a string",
                    kind_of(other)
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "field `{key}`: a {}, not a mapping",
            kind_of(other)
        )),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "sequence",
        Value::Object(_) => "mapping",
    }
}

fn config_value(config: &HostConfiguration) -> Value {
    to_value(config)
}

/// Upstream's "no configuration" (`{}`, or every key at its default).
fn is_default(config: &Value) -> bool {
    *config == Value::Object(Map::new()) || *config == config_value(&HostConfiguration::default())
}

/// Our model's values always serialize (string keys, no floats).
fn to_value(value: impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
