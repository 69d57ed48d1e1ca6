//! `trident-e2e-pki`, the throw-away PKI tool of the VM demo: `--help` is
//! its usage (not a directory named `--help`), and an unknown option is
//! refused with the usage, writing nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn pki_tool(args: &[&str], cwd: &std::path::Path) -> std::process::Output {
    Command::new(trident_e2e::bin_path("trident-e2e-pki"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run trident-e2e-pki")
}

#[test]
fn help_prints_the_usage_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for flag in ["--help", "-h"] {
        let out = pki_tool(&[flag], dir.path());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{flag}: {:?} {stderr}", out.status);
        assert!(
            stdout.contains("usage: trident-e2e-pki DIR HOST..."),
            "{flag}: {stdout}"
        );
        assert!(!stderr.contains("No such file"), "{flag}: {stderr}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

#[test]
fn an_unknown_option_is_refused_with_the_usage_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = pki_tool(&["--frobnicate", "host-1"], dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown option --frobnicate"), "{stderr}");
    assert!(stderr.contains("usage: trident-e2e-pki"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn writes_the_ca_the_orchestrator_and_each_host() {
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path().join("pki");
    let out = pki_tool(&[pki.to_str().unwrap(), "host-1"], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in [
        "ca.pem",
        "orchestrator.pem",
        "orchestrator.key",
        "host-1.pem",
        "host-1.key",
    ] {
        assert!(pki.join(file).is_file(), "{file} missing");
    }
}
