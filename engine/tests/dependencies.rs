//! The engine carries no transport: `trident-engine` must not depend
//! directly on tonic's server side (tonic with its `transport`, `server`
//! or `router` features, or its default features, which include them),
//! `tonic-health`, `tonic-reflection`, hyper-util's server, nor on the
//! daemon (`tridentd`) at any depth. Read from `cargo metadata`, the
//! declared dependencies with their features. `trident-host` and
//! `trident-telemetry` bring tonic's types with them; that is accepted,
//! and not what this checks.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::{Value, json};

const ENGINE: &str = "trident-engine";
const DAEMON: &str = "tridentd";
/// tonic's features that pull in its server and transport.
const TONIC_SERVER_FEATURES: [&str; 3] = ["transport", "server", "router"];

/// The workspace's packages as `cargo metadata --no-deps` sees them.
fn workspace_packages() -> Vec<Value> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .args(["--manifest-path", manifest])
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    metadata["packages"].as_array().expect("packages").clone()
}

fn name(value: &Value) -> &str {
    value["name"].as_str().unwrap_or_default()
}

/// A normal (not dev, not build) dependency.
fn is_normal(dep: &Value) -> bool {
    dep["kind"].is_null()
}

/// What is wrong with `package`'s own normal dependencies, one line each.
fn forbidden_direct(package: &Value) -> Vec<String> {
    let mut wrong = Vec::new();
    for dep in package["dependencies"].as_array().into_iter().flatten() {
        if !is_normal(dep) {
            continue;
        }
        let features: BTreeSet<&str> = dep["features"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let defaults = dep["uses_default_features"].as_bool().unwrap_or(true);
        match name(dep) {
            "tonic" => {
                let server: Vec<&str> = TONIC_SERVER_FEATURES
                    .into_iter()
                    .filter(|f| features.contains(f))
                    .collect();
                if !server.is_empty() {
                    wrong.push(format!("tonic with features {server:?}"));
                }
                if defaults {
                    wrong.push("tonic with its default features (transport, router)".into());
                }
            }
            "hyper-util" if features.contains("server") || features.contains("server-auto") => {
                wrong.push("hyper-util with its server".into());
            }
            "tonic-health" | "tonic-reflection" | DAEMON => wrong.push(name(dep).to_owned()),
            _ => {}
        }
    }
    wrong
}

/// The workspace packages `from` reaches through normal dependencies,
/// `from` included.
fn reachable(packages: &[Value], from: &str) -> BTreeSet<String> {
    let by_name: BTreeMap<&str, &Value> = packages.iter().map(|p| (name(p), p)).collect();
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_owned()];
    while let Some(next) = todo.pop() {
        let Some(package) = by_name.get(next.as_str()) else {
            continue;
        };
        if !seen.insert(next) {
            continue;
        }
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            if is_normal(dep) {
                todo.push(name(dep).to_owned());
            }
        }
    }
    seen
}

#[test]
fn the_engine_depends_on_no_transport_server_and_not_on_the_daemon() {
    let packages = workspace_packages();
    let engine = packages
        .iter()
        .find(|p| name(p) == ENGINE)
        .expect("trident-engine is a workspace member");
    // The check reads the engine's dependencies (else it passes on nothing).
    let deps = engine["dependencies"].as_array().expect("dependencies");
    assert!(
        deps.iter()
            .any(|d| name(d) == "trident-host" && is_normal(d)),
        "{deps:?}"
    );
    let wrong = forbidden_direct(engine);
    assert!(
        wrong.is_empty(),
        "{ENGINE} must carry no transport; it depends on: {}",
        wrong.join(", ")
    );
    let reached = reachable(&packages, ENGINE);
    assert!(reached.contains("trident-telemetry"), "{reached:?}");
    assert!(
        !reached.contains(DAEMON),
        "{ENGINE} reaches {DAEMON} through the workspace: {reached:?}"
    );
}

/// The checker itself: each forbidden dependency is named; tonic's
/// codegen alone (the types a client or generated code needs) is not.
#[test]
fn the_check_names_each_forbidden_dependency() {
    let dep = |name: &str, features: &[&str], defaults: bool| json!({ "name": name, "kind": null, "features": features, "uses_default_features": defaults });
    let bad = json!({ "name": ENGINE, "dependencies": [
        dep("tonic", &["codegen", "transport"], false),
        dep("tonic-health", &[], true),
        dep("tonic-reflection", &[], true),
        dep("hyper-util", &["tokio", "server"], true),
        dep(DAEMON, &[], true),
        // Dev-dependencies may have anything.
        json!({ "name": "tonic-health", "kind": "dev", "features": [], "uses_default_features": true }),
    ]});
    assert_eq!(
        forbidden_direct(&bad),
        [
            "tonic with features [\"transport\"]",
            "tonic-health",
            "tonic-reflection",
            "hyper-util with its server",
            DAEMON,
        ]
    );
    let defaults = json!({ "name": ENGINE, "dependencies": [dep("tonic", &[], true)] });
    assert_eq!(forbidden_direct(&defaults).len(), 1);
    let fine = json!({ "name": ENGINE, "dependencies": [
        dep("tonic", &["codegen"], false),
        dep("hyper-util", &["tokio", "client"], false),
    ]});
    assert!(forbidden_direct(&fine).is_empty());
    // Through another workspace package.
    let packages = [
        json!({ "name": ENGINE, "dependencies": [dep("middle", &[], true)] }),
        json!({ "name": "middle", "dependencies": [dep(DAEMON, &[], true)] }),
        json!({ "name": DAEMON, "dependencies": [] }),
    ];
    assert!(reachable(&packages, ENGINE).contains(DAEMON));
}
