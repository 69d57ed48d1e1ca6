//! "Valid by `validate`" implies "not refused later for a reason in the
//! document": documents are generated (seeded, replayable) with hostile
//! values in every key the installed OS uses as a file, name or word
//! (hostname, users, groups, home directories, SSH keys, additional files
//! and their modes, kernel arguments, modules, units, partition labels);
//! each one `trident validate` accepts is installed onto a disk-image file
//! through the real daemon, with the mini OS as its image. It never fails
//! with a subkind that `docs/host-configuration.md` lists as
//! document-only (the test reads the list there); and since the mini OS
//! has every tool the generated keys need, it does not fail at all.
//!
//! `VALIDATION_PROPERTY_SEED=N` replays a run; `VALIDATION_PROPERTY_CASES`
//! sets how many documents (default 60).

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::collections::BTreeMap;

use trident_e2e::servicing_support::Fixture;
use trident_e2e::{daemon, mini_os, trident_cli};

/// The subkinds between the markers of docs/host-configuration.md.
fn document_only_subkinds() -> Vec<String> {
    let doc = std::fs::read_to_string(
        trident_e2e::test_os::repo_root().join("docs/host-configuration.md"),
    )
    .unwrap();
    let begin = doc
        .find("<!-- document-only subkinds: begin -->")
        .expect("begin marker");
    let end = doc
        .find("<!-- document-only subkinds: end -->")
        .expect("end marker");
    let list: Vec<String> = doc[begin..end]
        .lines()
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| rest.split('`').next())
        .map(str::to_owned)
        .collect();
    assert!(list.len() >= 5, "{list:?}");
    list
}

/// Pieces values are made of: ordinary ones, and what breaks files,
/// names and command lines.
const PIECES: [&str; 24] = [
    "a", "node", "x1", "web-01", "svc_2", "Ops", "42", ".", "..", "/", "-", "$", " ", "\n", "#",
    "=", "\"", "'", "é", "😀", "\t", ":", "etc", "a.b",
];

struct Gen(fastrand::Rng);

impl Gen {
    fn word(&mut self, max_pieces: usize) -> String {
        let n = self.0.usize(0..=max_pieces);
        (0..n)
            .map(|_| PIECES[self.0.usize(..PIECES.len())])
            .collect()
    }

    /// Mostly plausible, sometimes hostile.
    fn name(&mut self) -> String {
        if self.0.u8(..4) == 0 {
            self.word(6)
        } else {
            ["operator", "svc-1", "db_admin", "web.app", "a"][self.0.usize(..5)].to_owned()
        }
    }

    fn path(&mut self) -> String {
        let parts = self.0.usize(0..4);
        let mut path = if self.0.u8(..6) == 0 {
            String::new()
        } else {
            "/".to_owned()
        };
        for i in 0..parts {
            if i > 0 {
                path.push('/');
            }
            path.push_str(&if self.0.bool() {
                self.name()
            } else {
                self.word(3)
            });
        }
        path
    }

    fn json(value: &str) -> String {
        serde_json::to_string(value).unwrap()
    }

    /// An `os:` section and a root-a label, from the generator.
    fn document(&mut self) -> (String, Option<String>) {
        let mut os = String::from("os:\n");
        if self.0.bool() {
            let host = if self.0.bool() {
                self.name()
            } else {
                self.word(8)
            };
            os += &format!("  hostname: {}\n", Self::json(&host));
        }
        if self.0.bool() {
            os += "  users:\n";
            for _ in 0..self.0.usize(1..3) {
                os += &format!("  - name: {}\n", Self::json(&self.name()));
                if self.0.bool() {
                    os += &format!("    secondaryGroups: [{}]\n", Self::json(&self.name()));
                }
                if self.0.bool() {
                    os += &format!("    homeDirectory: {}\n", Self::json(&self.path()));
                }
                if self.0.bool() {
                    let key = format!("ssh-ed25519 AAAA{} t@lab", self.word(2));
                    os += &format!("    sshPublicKeys: [{}]\n", Self::json(&key));
                }
            }
        }
        if self.0.bool() {
            os += "  additionalFiles:\n";
            for _ in 0..self.0.usize(1..3) {
                let mode = ["0644", "750", "4755", "9999", "x", "07777", "0600"][self.0.usize(..7)];
                os += &format!(
                    "  - {{ destination: {}, content: {}, permissions: {} }}\n",
                    Self::json(&self.path()),
                    Self::json(&self.word(3)),
                    Self::json(mode)
                );
            }
        }
        if self.0.bool() {
            let args: Vec<String> = (0..self.0.usize(1..3))
                .map(|_| Self::json(&format!("{}={}", self.name(), self.word(2))))
                .collect();
            os += &format!(
                "  kernelCommandLine:\n    extraCommandLine: [{}]\n",
                args.join(", ")
            );
        }
        if self.0.bool() {
            os += &format!(
                "  modules:\n  - name: {}\n    loadMode: always\n    options: {{ {}: {} }}\n",
                Self::json(&self.name()),
                Self::json(&self.name()),
                Self::json(&self.word(2))
            );
        }
        let label = (self.0.u8(..3) == 0).then(|| {
            let mut label = self.word(10);
            if self.0.bool() {
                label = "😀".repeat(self.0.usize(15..20));
            }
            label
        });
        (os, label)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_document_validate_accepts_is_never_refused_later_for_a_reason_in_the_document() {
    if !mini_os::running_as_root() {
        eprintln!("SKIP: installs need root (loop devices, mount)");
        return;
    }
    let document_only = document_only_subkinds();
    let seed = std::env::var("VALIDATION_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    let cases: usize = std::env::var("VALIDATION_PROPERTY_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    eprintln!("VALIDATION_PROPERTY_SEED={seed} ({cases} documents)");
    let mut generate = Gen(fastrand::Rng::with_seed(seed));

    let f = Fixture::new();
    let v1 = mini_os::build(f.dir.path(), "v1");
    let base = f.config(&v1, "");
    let d = daemon().await;
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    for case in 0..cases {
        let (os, label) = generate.document();
        let mut document = format!("{base}{os}");
        if let Some(label) = &label {
            document = document.replacen(
                "{ id: root-a, type: root, size: 48M }",
                &format!(
                    "{{ id: root-a, type: root, size: 48M, label: {} }}",
                    Gen::json(label)
                ),
                1,
            );
        }
        let file = f.dir.path().join(format!("case-{case}.yaml"));
        std::fs::write(&file, &document).unwrap();
        let validate = trident_cli(d.socket_path(), &["validate", file.to_str().unwrap()]);
        if !validate.status.success() {
            let text = String::from_utf8_lossy(&validate.stderr).into_owned()
                + &String::from_utf8_lossy(&validate.stdout);
            assert!(
                text.contains("invalid-input"),
                "seed {seed} case {case}: validate failed other than as invalid input:\n{text}\n{document}"
            );
            *outcomes.entry("refused by validate".into()).or_default() += 1;
            continue;
        }
        let install = trident_cli(
            d.socket_path(),
            &["--output", "json", "install", file.to_str().unwrap()],
        );
        if install.status.success() {
            *outcomes.entry("installed".into()).or_default() += 1;
            continue;
        }
        let error = trident_cli(d.socket_path(), &["--output", "json", "get", "last-error"]);
        let error: serde_json::Value =
            serde_json::from_slice(&error.stdout).unwrap_or(serde_json::Value::Null);
        // `get last-error` names the subkind under `error` (upstream's shape).
        let subkind = error["error"].as_str().unwrap_or("unknown").to_owned();
        assert!(
            !document_only.contains(&subkind),
            "seed {seed} case {case}: validate accepted the document, then the install refused \
             it as {subkind}:\n{error:#}\n{document}"
        );
        // The mini OS has every tool these keys need (useradd, groupadd, a
        // boot entry, ...): a failure there is the document's too.
        panic!(
            "seed {seed} case {case}: validate accepted the document, then the install failed \
             as {subkind} with an image that takes every generated key:\n{error:#}\n{document}"
        );
    }
    eprintln!("VALIDATION_PROPERTY_SEED={seed}: {outcomes:?}");
    assert!(
        outcomes.get("installed").copied().unwrap_or(0) > 0,
        "no generated document installed (seed {seed}): the generator is too hostile"
    );
}
