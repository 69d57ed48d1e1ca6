//! The `trident-rcp` agent never prints private key material: a key pasted
//! into its configuration file (where the key's path belongs, or under a
//! mistyped key), passed as `--key` content, readable by others, damaged,
//! or swapped with the certificate is refused, and the error the agent
//! logs (stderr, which the journal and `trident diagnose --journal` keep)
//! names at most the file, never a line of the key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use trident_e2e::bin_path;
use trident_e2e::rcp_support::{ORCHESTRATOR, Pki};
use trident_rcp::pki::LeafSpec;

/// The base64 lines of the key file (what must never be printed).
fn key_body(key_pem: &str) -> Vec<String> {
    key_pem
        .lines()
        .filter(|l| !l.starts_with("-----") && l.len() >= 16)
        .map(str::to_owned)
        .collect()
}

/// Runs the agent with `args` after the common ones; its stderr. It must
/// refuse to start.
fn agent_refuses(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(bin_path("trident-rcp"))
        .args(["--connect", "127.0.0.1:9", "--server-name", ORCHESTRATOR])
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run trident-rcp");
    assert!(!out.status.success(), "the agent started: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_no_key(case: &str, stderr: &str, body: &[String]) {
    for line in body {
        assert!(
            !stderr.contains(line.as_str()),
            "{case}: key material in the agent's error:\n{stderr}"
        );
    }
}

#[test]
fn private_key_material_never_appears_in_the_agents_errors() {
    let pki = Pki::new();
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    let key_pem = std::fs::read_to_string(&files.key).unwrap();
    let body = key_body(&key_pem);
    assert!(!body.is_empty(), "the test key has a body");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rcp.yaml");
    let indented: String = key_pem.lines().map(|l| format!("  {l}\n")).collect();
    let common = format!(
        "ca: {}\ncert: {}\n",
        files.ca.display(),
        files.cert.display()
    );
    let flag = |s: &str| std::ffi::OsString::from(s);
    let config_flag = [flag("--config"), config.clone().into_os_string()];

    let mut cases: Vec<(&str, Vec<std::ffi::OsString>, Option<&Path>)> = Vec::new();
    // 1. The key pasted into the file where its path belongs.
    std::fs::write(&config, format!("{common}key: |\n{indented}")).unwrap();
    let pasted = agent_refuses(
        &config_flag
            .iter()
            .map(|s| s.as_os_str())
            .collect::<Vec<_>>(),
    );
    assert_no_key("key pasted as `key:`", &pasted, &body);
    assert!(pasted.contains("key"), "{pasted}");
    // 2. The key under a mistyped key (the parser quotes the file).
    std::fs::write(
        &config,
        format!("{common}key: {}\nkee: |\n{indented}", files.key.display()),
    )
    .unwrap();
    let mistyped = agent_refuses(
        &config_flag
            .iter()
            .map(|s| s.as_os_str())
            .collect::<Vec<_>>(),
    );
    assert_no_key("key under a mistyped key", &mistyped, &body);
    assert!(
        mistyped.contains("line"),
        "the error locates it: {mistyped}"
    );

    let tls = |key: &Path| {
        vec![
            flag("--config"),
            flag("/dev/null"),
            flag("--ca"),
            files.ca.clone().into_os_string(),
            flag("--cert"),
            files.cert.clone().into_os_string(),
            flag("--key"),
            key.as_os_str().to_owned(),
        ]
    };
    // 3. The key's content given as --key.
    cases.push(("--key with PEM content", tls(Path::new(&key_pem)), None));
    // 4. A key readable by others.
    let open_key = dir.path().join("open.key");
    std::fs::write(&open_key, &key_pem).unwrap();
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    cases.push(("a key readable by others", tls(&open_key), Some(&open_key)));
    // 5. A damaged key (a character base64 does not know, mid-body).
    let damaged_key = dir.path().join("damaged.key");
    let damaged = key_pem.replacen(&body[0], &format!("{}*{}", &body[0][..8], &body[0][9..]), 1);
    std::fs::write(&damaged_key, damaged).unwrap();
    std::fs::set_permissions(&damaged_key, std::fs::Permissions::from_mode(0o600)).unwrap();
    cases.push(("a damaged key", tls(&damaged_key), Some(&damaged_key)));
    // 6. The certificate and the key swapped.
    let mut swapped = tls(&files.cert);
    swapped[5] = files.key.clone().into_os_string();
    cases.push(("certificate and key swapped", swapped, None));

    for (case, args, named) in &cases {
        let stderr = agent_refuses(&args.iter().map(|s| s.as_os_str()).collect::<Vec<_>>());
        assert_no_key(case, &stderr, &body);
        if let Some(path) = named {
            assert!(
                stderr.contains(&path.display().to_string()),
                "{case}: the error names the file: {stderr}"
            );
        }
    }
}
