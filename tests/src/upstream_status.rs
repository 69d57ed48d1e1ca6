//! What upstream Trident's own binary prints against what tridentd says:
//! its recorded `get status` and `get rollback-chain` outputs
//! (`host/tests/fixtures/upstream-datastores/`), and, when
//! `UPSTREAM_TRIDENT` names upstream's binary (v0.27.0), that binary run
//! on a datastore tridentd wrote. The rules are the host crate's
//! (`host/tests/it/upstream_datastores/compare.rs`): both sides without
//! what is empty, our additions set aside, `lastError` compared by meaning.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Our Host Status keys upstream's does not have.
const ADDITIONS: [&str; 6] = [
    "imageHash",
    "stagedImageHash",
    "layout",
    "raidArrays",
    "encryptedVolumes",
    "verityRootHashes",
];

/// Defaults one side prints and the other leaves out.
const DEFAULTS: [(&str, &str); 2] = [
    ("options", r#""defaults""#),
    ("password", r#"{"type":"locked"}"#),
];

/// The folder of the datastores upstream's binary wrote.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../host/tests/fixtures/upstream-datastores")
}

/// A YAML file or text as a value.
pub fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("YAML: {e}\n{text}"))
}

/// What upstream's binary printed for fixture `name` (`status` or
/// `rollback-chain`).
pub fn recorded(name: &str, kind: &str) -> Value {
    let path = fixtures().join(format!("{name}.get-{kind}.yaml"));
    yaml(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Upstream's binary (`UPSTREAM_TRIDENT`), when set.
pub fn upstream_binary() -> Option<String> {
    std::env::var("UPSTREAM_TRIDENT")
        .ok()
        .filter(|v| !v.is_empty())
}

/// Upstream's `trident -v WARN get KIND` on the datastore at `path`, in a
/// private mount namespace (tmpfs over /var/lib, /var/log, /run and
/// /etc/trident, the datastore copied where upstream looks for it).
pub fn upstream_get(trident: &str, path: &Path, kind: &str) -> Value {
    let script = r#"set -e
        mount --make-rprivate /
        for dir in /var/lib /var/log /run; do mount -t tmpfs none "$dir"; done
        if [ -d /etc/trident ]; then mount -t tmpfs none /etc/trident; fi
        mkdir -p /var/lib/trident
        cp "$2" /var/lib/trident/datastore.sqlite
        exec "$1" -v WARN get "$3""#;
    let output = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", script, "sh", trident])
        .arg(path)
        .arg(kind)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "upstream's get {kind}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    yaml(&String::from_utf8_lossy(&output.stdout))
}

/// `<kind>:<volume>:<image url>` of each item of upstream's `get
/// rollback-chain`: how tridentd's `GetRollbackChain` names them.
pub fn chain_names(chain: &Value) -> Vec<String> {
    chain
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|item| {
            format!(
                "{}:{}:{}",
                item["kind"].as_str().unwrap_or_default(),
                item["abActiveVolume"].as_str().unwrap_or("none"),
                item["spec"]["image"]["url"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// Our Host Status (`get status` YAML as a value) says what upstream's
/// does, apart from our additions.
pub fn assert_status_matches(what: &str, ours: &Value, theirs: &Value) {
    let mut ours = ours.as_object().cloned().unwrap_or_default();
    let mut theirs = theirs.as_object().cloned().unwrap_or_default();
    for key in ADDITIONS {
        ours.remove(key);
    }
    for key in ["spec", "specOld"] {
        let mut spec = normalize(theirs.remove(key).as_ref().unwrap_or(&Value::Null));
        // What offline-initialize adds; our model does not hold it.
        if let Value::Object(map) = &mut spec {
            map.remove("internalParams");
        }
        let mut diffs = Vec::new();
        differences(
            key,
            &normalize(ours.remove(key).as_ref().unwrap_or(&Value::Null)),
            &spec,
            &mut diffs,
        );
        assert!(diffs.is_empty(), "{what}:\n  {}", diffs.join("\n  "));
    }
    match (ours.remove("lastError"), theirs.remove("lastError")) {
        (Some(Value::Null) | None, None) => {}
        (Some(ours), Some(theirs)) => {
            assert_eq!(ours["message"], theirs["message"], "{what} lastError");
            assert_eq!(ours["category"], theirs["category"], "{what} lastError");
        }
        (ours, theirs) => panic!("{what}: lastError {ours:?} != {theirs:?}"),
    }
    let mut diffs = Vec::new();
    differences(
        "",
        &normalize(&Value::Object(ours)),
        &normalize(&Value::Object(theirs)),
        &mut diffs,
    );
    assert!(diffs.is_empty(), "{what}:\n  {}", diffs.join("\n  "));
}

/// Without nulls, empty strings, mappings and sequences, `false`, and the
/// defaults one side prints; a mount point given as its path alone.
fn normalize(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map {
                let item = normalize(item);
                let default = DEFAULTS.iter().any(|(k, v)| {
                    k == key && serde_json::from_str::<Value>(v).is_ok_and(|v| item == v)
                });
                if !is_empty(&item) && !default {
                    out.insert(key.clone(), item);
                }
            }
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

fn differences(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                differences(
                    &format!("{path}.{key}"),
                    a.get(key).unwrap_or(&Value::Null),
                    b.get(key).unwrap_or(&Value::Null),
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
