//! Our `get status` against upstream's, as parsed YAML: equal once both
//! leave out what is empty (upstream leaves out empty fields, we print
//! them as null or empty), with our additions set aside and `lastError`
//! compared by meaning (ours is our error record: message, category,
//! subkind, location, causes).

use serde_json::{Map, Value};

/// Our keys upstream's Host Status does not have.
pub const ADDITIONS: [&str; 6] = [
    "imageHash",
    "stagedImageHash",
    "layout",
    "raidArrays",
    "encryptedVolumes",
    "verityRootHashes",
];

/// Defaults one side prints and the other leaves out, as `(key, value as
/// JSON)` found in any mapping of a configuration: upstream prints a
/// mount point's `options: defaults`, we print a user's locked password.
const DEFAULTS: [(&str, &str); 2] = [
    ("options", r#""defaults""#),
    ("password", r#"{"type":"locked"}"#),
];

/// Without nulls, empty strings, mappings and sequences, and `false`.
pub fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map {
                let item = normalize(item);
                if !is_empty(&item)
                    && !DEFAULTS.iter().any(|(k, v)| {
                        k == key && serde_json::from_str::<Value>(v).is_ok_and(|v| item == v)
                    })
                {
                    out.insert(key.clone(), item);
                }
            }
            // A mount point given as its path alone.
            if out.len() == 1
                && let Some(path) = out.get("path")
            {
                return path.clone();
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Every difference, as `path: ours != theirs`.
pub fn differences(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                let null = Value::Null;
                differences(
                    &format!("{path}.{key}"),
                    a.get(key).unwrap_or(&null),
                    b.get(key).unwrap_or(&null),
                    out,
                );
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(&format!("{path}[{i}]"), x, y, out);
            }
        }
        (a, b) if a == b => {}
        // YAML scalars: a number printed by one side, a string by the other.
        (Value::Number(n), Value::String(s)) | (Value::String(s), Value::Number(n))
            if n.to_string() == *s => {}
        (a, b) => out.push(format!("{path}: ours {a} != upstream's {b}")),
    }
}

pub fn assert_config_matches(name: &str, ours: &Value, theirs: &Value) {
    let mut theirs = normalize(theirs);
    // What offline-initialize adds to the configuration it is given; our
    // model does not hold it (the datastore keeps it).
    if let Value::Object(map) = &mut theirs {
        map.remove("internalParams");
    }
    // No configuration (ours: null) is upstream's empty one (`spec` is
    // required there: `{}`, as tridentd writes it for a host with none).
    let none_if_empty = |v: Value| if is_empty(&v) { Value::Null } else { v };
    let mut diffs = Vec::new();
    differences(
        "spec",
        &none_if_empty(normalize(ours)),
        &none_if_empty(theirs),
        &mut diffs,
    );
    assert!(diffs.is_empty(), "{name}:\n  {}", diffs.join("\n  "));
}

pub fn assert_status_matches(name: &str, ours: &Value, theirs: &Value) {
    let mut ours = ours.as_object().cloned().unwrap_or_default();
    let mut theirs = theirs.as_object().cloned().unwrap_or_default();
    for key in ADDITIONS {
        ours.remove(key);
    }
    for key in ["spec", "specOld"] {
        assert_config_matches(
            &format!("{name} {key}"),
            ours.remove(key).as_ref().unwrap_or(&Value::Null),
            theirs.remove(key).as_ref().unwrap_or(&Value::Null),
        );
    }
    match (ours.remove("lastError"), theirs.remove("lastError")) {
        (Some(Value::Null) | None, None) => {}
        (Some(ours), Some(theirs)) => {
            assert_eq!(ours["message"], theirs["message"], "{name} lastError");
            assert_eq!(ours["category"], theirs["category"], "{name} lastError");
            let location = format!(
                "{}:{}",
                ours["location"]["file"].as_str().unwrap(),
                ours["location"]["line"]
            );
            assert_eq!(
                Value::from(location),
                theirs["location"],
                "{name} lastError"
            );
        }
        (ours, theirs) => panic!("{name}: lastError {ours:?} != {theirs:?}"),
    }
    let mut diffs = Vec::new();
    differences(
        "",
        &normalize(&Value::Object(ours)),
        &normalize(&Value::Object(theirs)),
        &mut diffs,
    );
    assert!(diffs.is_empty(), "{name}:\n  {}", diffs.join("\n  "));
}
