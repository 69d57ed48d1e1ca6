//! `trident start-network`: the real CLI binary applies the configuration's
//! netplan to this system with `netplan apply`, as upstream's provisioning
//! network does. This machine has no netplan, and applying one would
//! change its network, so what is checked is everything up to that: the
//! section it picks (`managementOs.netplan` over `os.netplan`), nothing to
//! do without one, a structured error and nothing written when netplan is
//! not installed, a bad document named by its key.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use trident_e2e::{bin_path, stderr};

const IMAGE: &str = "image: { url: 'file:///i.cosi', sha384: ignored }\nstorage:\n  disks:\n  - { id: os, device: /dev/null, partitions: [{ id: root, type: root, size: 1G }] }\n  filesystems:\n  - { deviceId: root, mountPoint: / }\n";
const NETPLAN: &str = "os:\n  netplan:\n    version: 2\n    ethernets:\n      uplink: { match: { name: 'e*' }, dhcp4: true }\n";
const MOS_NETPLAN: &str = "managementOs:\n  netplan:\n    version: 2\n    ethernets:\n      install: { match: { name: 'e*' }, dhcp4: true }\n";
/// Where start-network writes (upstream's file name).
const WRITTEN: &str = "/etc/netplan/99-trident.yaml";

/// Runs `trident start-network CONFIG` with PATH set to an empty
/// directory (no netplan, whatever this machine has).
fn start_network(dir: &Path, config: &str) -> Output {
    let file = dir.join("config.yaml");
    std::fs::write(&file, config).unwrap();
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    Command::new(bin_path("trident"))
        .arg("start-network")
        .arg(&file)
        .env("PATH", &empty)
        .output()
        .unwrap()
}

#[test]
fn without_netplan_installed_start_network_fails_naming_the_section_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let existed = Path::new(WRITTEN).exists();
    for (config, key) in [
        (format!("{IMAGE}{NETPLAN}"), "'os.netplan'"),
        (
            format!("{IMAGE}{NETPLAN}{MOS_NETPLAN}"),
            "'managementOs.netplan'",
        ),
    ] {
        let out = start_network(dir.path(), &config);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let text = stderr(&out);
        assert!(text.contains("'netplan' is not installed"), "{text}");
        assert!(text.contains(key), "{key}: {text}");
        assert!(text.contains("nothing was written"), "{text}");
        assert_eq!(Path::new(WRITTEN).exists(), existed, "{WRITTEN} appeared");
    }
}

#[test]
fn start_network_without_a_netplan_section_does_nothing_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let out = start_network(dir.path(), IMAGE);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("has no netplan"), "{}", stderr(&out));
}

#[test]
fn start_network_refuses_a_bad_configuration_or_netplan_document() {
    let dir = tempfile::tempdir().unwrap();
    let bad_version = format!("{IMAGE}{}", NETPLAN.replace("version: 2", "version: 3"));
    let out = start_network(dir.path(), &bad_version);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("'os.netplan': netplan needs 'version: 2'"),
        "{}",
        stderr(&out)
    );
    let out = start_network(dir.path(), "image: [not a map]\n");
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(bin_path("trident"))
        .args(["start-network", "/nonexistent/config.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("failed to load"), "{}", stderr(&out));
}
