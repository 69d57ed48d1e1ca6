//! Upstream's own eight Host Configuration samples, verbatim
//! (tests/fixtures/upstream-samples/, with upstream's license): each
//! parses, and is valid or refused only as unsupported-configuration
//! naming the feature not applied yet: never a parse, schema or
//! unknown-key error. What each sample asks for is installed for real by
//! the VM scenarios: `basic`, `simple` and `base` from these files
//! themselves (tests/tests/vm/vm_samples.rs rewrites devices, image and
//! sizes), the others from our fixtures (tests/fixtures/host-config/).

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::PathBuf;

use trident_host::Category;
use trident_host::config::parse;

fn sample(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream-samples")
        .join(format!("{name}.yaml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(sample, None: valid | Some(the key its refusal names))`.
const EXPECTED: [(&str, Option<&str>); 8] = [
    ("basic", None),
    ("simple", None),
    ("base", None),
    ("advanced", None),
    ("raid", None),
    ("raid-mirrored", None),
    ("encryption", None),
    ("verity", None),
];

#[test]
fn upstreams_samples_are_valid_or_refused_only_as_not_applied_yet() {
    let listed = std::fs::read_dir(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-samples"),
    )
    .unwrap()
    .filter(|e| {
        e.as_ref()
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "yaml")
    })
    .count();
    assert_eq!(listed, EXPECTED.len(), "a sample without an expectation");
    let mut wrong = Vec::new();
    for (name, refused_key) in EXPECTED {
        match (parse(&sample(name)), refused_key) {
            (Ok(_), None) => {}
            (Err(err), Some(key))
                if err.category() == Category::UnsupportedConfiguration
                    && err.message().contains(&format!("'{key}' (line ")) => {}
            (Ok(_), Some(key)) => wrong.push(format!("{name}: accepted, expected {key} refused")),
            (Err(err), _) => wrong.push(format!("{name}: {}", err.report())),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
