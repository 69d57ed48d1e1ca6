//! Upstream's `storage.verity` rules through [`super::parse`]: each broken
//! rule is an invalid Host Configuration naming the key; a document that
//! keeps them is accepted (the daemon applies it).

use super::parse;
use crate::error::Subkind;

const VERITY: &str = include_str!("../../tests/fixtures/host-config/verity.yaml");

/// The fixture with `from` replaced by `to` (which must occur).
fn with(from: &str, to: &str) -> String {
    assert!(VERITY.contains(from), "the fixture has no {from:?}");
    VERITY.replacen(from, to, 1)
}

fn refused_at(yaml: &str, key: &str, says: &str) {
    let err = parse(yaml).expect_err("expected an invalid configuration");
    assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration, "{err:?}");
    assert!(
        err.message()
            .contains(&format!("Host Configuration key '{key}'")),
        "{}",
        err.message()
    );
    assert!(err.message().contains(says), "{}", err.message());
}

#[test]
fn a_configuration_keeping_upstreams_verity_rules_is_accepted() {
    let hc = parse(VERITY).unwrap_or_else(|e| panic!("{}", e.message()));
    assert_eq!(hc.storage.verity.len(), 1);
    assert_eq!(hc.storage.verity[0].name, "root");
}

#[test]
fn a_writable_verity_filesystem_is_refused_at_its_mount_options() {
    refused_at(
        &with(
            "mountPoint: { path: /, options: ro }",
            "mountPoint: { path: /, options: defaults }",
        ),
        "storage.filesystems[6].mountPoint.options",
        "read-only",
    );
    // "ro" is an option of its own, not a substring.
    refused_at(
        &with(
            "mountPoint: { path: /, options: ro }",
            "mountPoint: { path: /, options: 'errors=remount-ro' }",
        ),
        "storage.filesystems[6].mountPoint.options",
        "read-only",
    );
}

#[test]
fn a_second_verity_device_is_refused() {
    let yaml = with(
        "    corruptionOption: io-error\n",
        "    corruptionOption: io-error\n  - { id: v2, name: usr, dataDeviceId: usr-data, hashDeviceId: usr-hash }\n",
    )
    .replacen(
        "    - { id: state,",
        "    - { id: usr-data, type: usr, size: 1G }\n    - { id: usr-hash, type: usr-verity, size: 64M }\n    - { id: state,",
        1,
    );
    refused_at(&yaml, "storage.verity", "at most one");
}

#[test]
fn a_verity_root_not_named_root_is_refused_at_its_name() {
    refused_at(
        &with("    name: root\n", "    name: sysroot\n"),
        "storage.verity[0].name",
        "must be 'root'",
    );
}

#[test]
fn a_verity_root_without_a_separate_boot_is_refused() {
    refused_at(
        &with(
            "  - deviceId: xboot\n    mountPoint: { path: /boot, options: defaults }\n",
            "",
        ),
        "storage.filesystems",
        "separate /boot",
    );
}

#[test]
fn a_verity_root_without_the_etc_overlay_filesystem_is_refused() {
    refused_at(
        &with(
            "path: /var/lib/trident-overlay,",
            "path: /var/lib/elsewhere,",
        ),
        "storage.filesystems",
        "/var/lib/trident-overlay",
    );
}

#[test]
fn a_read_only_etc_overlay_filesystem_is_refused_at_its_options() {
    refused_at(
        &with(
            "mountPoint: { path: /var/lib/trident-overlay, options: defaults }",
            "mountPoint: { path: /var/lib/trident-overlay, options: 'defaults,ro' }",
        ),
        "storage.filesystems[3].mountPoint.options",
        "writable /etc overlay",
    );
}

#[test]
fn with_ab_update_the_etc_overlay_must_be_on_a_volume_pair() {
    let pairs = "    - { id: home-b, type: home, size: 1G, uuid: null, label: null }\n    - { id: overlay-b, type: linux-generic, size: 128M, uuid: null, label: null }\n  abUpdate:\n    volumePairs:\n    - { id: homes, volumeAId: home-part, volumeBId: home-b }\n";
    let base = with(
        "    - { id: home-part, type: home, size: 1G, uuid: null, label: null }\n",
        &format!(
            "    - {{ id: home-part, type: home, size: 1G, uuid: null, label: null }}\n{pairs}"
        ),
    )
    .replacen("  - deviceId: home-part\n", "  - deviceId: homes\n", 1);
    refused_at(&base, "storage.filesystems[3].deviceId", "A/B volume pair");

    // On a pair of its own, the rules hold.
    let paired = base
        .replacen(
            "    - { id: homes,",
            "    - { id: ov, volumeAId: overlay, volumeBId: overlay-b }\n    - { id: homes,",
            1,
        )
        .replacen("  - deviceId: overlay\n", "  - deviceId: ov\n", 1);
    if let Err(e) = parse(&paired) {
        panic!("{}", e.message());
    }
}

/// The Host Status keeps the configuration as serialized, and the commit
/// and A/B updates build the installed storage graph from it: a verity
/// root's filesystem names the verity device, which must survive.
#[test]
fn the_verity_section_survives_the_host_status_round_trip() {
    let hc = parse(VERITY).unwrap();
    let again =
        parse(&crate::config::to_yaml(&hc).unwrap()).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(again.storage.verity, hc.storage.verity);
    assert!(!again.storage.verity.is_empty());
    crate::config::storage_graph::StorageGraph::build(&again).unwrap_or_else(|e| panic!("{e}"));
}
