use super::*;
use crate::error::{Category, Subkind};

const HASH: &str = "ignored";

fn good() -> String {
    format!(
        r#"image:
  url: file:///srv/images/os-v2.cosi
  sha384: {HASH}
storage:
  disks:
  - id: os
    device: /tmp/disk.img
    partitionTableType: gpt
    partitions:
    - {{ id: esp,    type: esp,  size: 64M }}
    - {{ id: root-a, type: root, size: 2G }}
    - {{ id: root-b, type: root, size: 2G }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp,  mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
scripts:
  preServicing:
  - name: hello
    runOn: [all]
    content: echo hi
health:
  checks:
  - {{ name: ok, runOn: [ab-update], content: "true", timeoutSeconds: 5 }}
trident:
  datastorePath: /tmp/ds.sqlite
"#
    )
}

/// Validation hands back the configuration with the graph it built; a
/// configuration that fails validation gets none.
#[test]
fn a_validated_config_carries_its_storage_graph() {
    let checked = parse_validated(&good()).unwrap();
    assert_eq!(checked.config().storage.disks[0].id, "os");
    let graph = checked.graph();
    let (a, b) = graph
        .ab_pair("root")
        .expect("the volume pair is in the graph");
    assert_eq!((a.label(), b.label()), ("root-a", "root-b"));
    assert!(graph.device("esp").is_some());
    let again = validated(checked.into_config()).unwrap();
    assert!(again.graph().device("root-b").is_some());
    let mut broken = parse(&good()).unwrap();
    broken.storage.filesystems[1].device_id = "nowhere".into();
    assert!(validated(broken).is_err());
}

fn err_of(yaml: &str) -> crate::error::TridentError {
    match parse(yaml) {
        Ok(_) => panic!("expected an error for:\n{yaml}"),
        Err(e) => e,
    }
}

#[test]
fn the_reference_example_parses() {
    let hc = parse(&good()).unwrap();
    assert_eq!(hc.storage.disks[0].partitions.len(), 3);
    assert_eq!(
        hc.storage.disks[0].partitions[0].size,
        PartitionSize::Bytes(64 << 20)
    );
    assert_eq!(hc.volume_pairs()[0].volume_b_id, "root-b");
    assert_eq!(hc.storage.filesystems[1].mount_point.path(), "/");
    assert_eq!(hc.datastore_path(), Some("/tmp/ds.sqlite"));
    // And it survives a round trip through YAML.
    let again = parse(&to_yaml(&hc).unwrap()).unwrap();
    assert_eq!(again.volume_pairs()[0].id, "root");
}

#[test]
fn unknown_key_is_invalid_input_naming_the_key_path_and_line() {
    let yaml = good().replace("size: 64M", "sise: 64M");
    let err = err_of(&yaml);
    assert_eq!(err.subkind(), Subkind::UnknownKey);
    assert_eq!(err.category(), Category::InvalidInput);
    assert!(
        err.message()
            .contains("storage.disks[0].partitions[0].sise"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("line 10"), "{}", err.message());
}

#[test]
fn unknown_top_level_key_is_named() {
    let err = err_of(&format!("{}bogus: 1\n", good()));
    assert_eq!(err.subkind(), Subkind::UnknownKey);
    assert!(err.message().contains("'bogus'"), "{}", err.message());
}

#[test]
fn bad_size_names_the_key_and_the_value() {
    let err = err_of(&good().replace("size: 64M", "size: 64Q"));
    assert_eq!(err.subkind(), Subkind::ParseHostConfiguration);
    assert!(
        err.message()
            .contains("storage.disks[0].partitions[0].size"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("unknown unit 'Q'"),
        "{}",
        err.message()
    );
}

#[test]
fn unsupported_features_are_unsupported_configuration_naming_the_key() {
    for (snippet, key) in [
        (
            "managementOs:\n  users: [{name: a}]\n",
            "managementOs.users",
        ),
        ("internalParams: {}\n", "internalParams"),
    ] {
        let err = err_of(&format!("{}{snippet}", good()));
        assert_eq!(err.category(), Category::UnsupportedConfiguration, "{key}");
        assert!(
            err.message().contains(&format!("'{key}' (line ")),
            "{}",
            err.message()
        );
    }
}

/// The OS configuration applied inside the new root parses and validates.
#[test]
fn applied_os_keys_are_accepted() {
    let os = "os:\n  netplan: {version: 2}\n  users: [{name: a, sshMode: key-only}]\n  \
              selinux: {mode: enforcing}\n  hostname: edge-1\n  \
              additionalFiles: [{destination: /etc/x, content: y, permissions: '0600'}]\n  \
              modules: [{name: m, loadMode: always}]\n  services: {enable: [a.service]}\n  \
              uefiFallback: optimistic\n";
    let hc = parse(&format!("{}{os}", good())).unwrap();
    assert_eq!(hc.os.hostname.as_deref(), Some("edge-1"));
    assert_eq!(hc.os.users[0].ssh_mode, SshMode::KeyOnly);
}

#[test]
fn upstream_defaults_are_accepted_as_not_configured() {
    let extra =
        "os:\n  selinux: {mode: null}\n  users: []\n  sysexts: []\n  uefiFallback: conservative\n";
    let yaml =
        format!("{}{extra}", good()).replace("size: 64M }", "size: 64M, uuid: null, label: null }");
    parse(&yaml).unwrap();
}

#[test]
fn unsupported_error_says_what_to_use_instead_and_names_nested_paths() {
    let yaml = good().replace(
        "{ deviceId: root, mountPoint: / }",
        "{ deviceId: root, mountPoint: /, overrideEspMount: block }",
    );
    let err = err_of(&yaml);
    assert_eq!(err.category(), Category::UnsupportedConfiguration);
    assert!(
        err.message()
            .contains("'storage.filesystems[1].overrideEspMount' (line 18, column "),
        "{}",
        err.message()
    );
    assert!(err.message().contains("instead:"), "{}", err.message());

    let yaml = good().replace(
        "{ deviceId: root, mountPoint: / }",
        "{ deviceId: root, mountPoint: /, source: new, type: tmpfs }",
    );
    let err = err_of(&yaml);
    assert!(
        err.message().contains("'storage.filesystems[1].type'"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("ext4, xfs or vfat"),
        "{}",
        err.message()
    );
}

/// Upstream's `advanced` sample's second ESP: a filesystem from the image
/// with no mount point is accepted (nothing is written to it); a new one,
/// which would be made and never mounted, is refused naming it.
#[test]
fn a_filesystem_without_a_mount_point_is_accepted_unless_it_is_new() {
    let yaml = good()
        .replace(
            "{ id: root-b, type: root, size: 2G }\n",
            "{ id: root-b, type: root, size: 2G }\n    - { id: esp2, type: esp, size: 64M }\n",
        )
        .replace(
            "  - { deviceId: root, mountPoint: / }\n",
            "  - { deviceId: root, mountPoint: / }\n  - deviceId: esp2\n",
        );
    let hc = parse(&yaml).unwrap_or_else(|e| panic!("{}\n{yaml}", e.report()));
    assert!(hc.storage.filesystems[2].mount_point.is_none());
    let err = err_of(&yaml.replace(
        "  - deviceId: esp2\n",
        "  - { deviceId: esp2, source: new, type: vfat }\n",
    ));
    assert_eq!(err.category(), Category::UnsupportedConfiguration);
    assert!(
        err.message().contains("'storage.filesystems[2]' (line 20"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("not mounted"), "{}", err.message());
}

#[test]
fn new_filesystems_and_swap_are_accepted_and_checked() {
    let yaml = good()
        .replace("{ id: root-b, type: root, size: 2G }\n", "{ id: root-b, type: root, size: 2G }\n    - { id: data, size: 1G }\n    - { id: sw, type: swap, size: 1G }\n")
        .replace(
            "  - { deviceId: root, mountPoint: / }\n",
            "  - { deviceId: root, mountPoint: / }\n  - { deviceId: data, source: new, type: xfs, mountPoint: { path: /srv, options: noatime } }\n  swap: [sw]\n",
        );
    let hc = parse(&yaml).unwrap_or_else(|e| panic!("{}\n{yaml}", e.report()));
    assert_eq!(hc.storage.swap[0].device_id, "sw");
    assert_eq!(
        hc.storage.filesystems[2].mount_point.options(),
        Some("noatime")
    );
    for (from, to, key) in [
        ("swap: [sw]", "swap: [nope]", "storage.swap[0].deviceId"),
        ("swap: [sw]", "swap: [data]", "storage.swap[0].deviceId"),
        ("swap: [sw]", "swap: [sw, sw]", "storage.swap[1].deviceId"),
        (
            "source: new, type: xfs,",
            "source: new,",
            "storage.filesystems[2].type",
        ),
    ] {
        let err = err_of(&yaml.replace(from, to));
        assert_eq!(
            err.subkind(),
            Subkind::InvalidHostConfiguration,
            "{}",
            err.message()
        );
        assert!(
            err.message().contains(&format!("'{key}'")),
            "{}",
            err.message()
        );
    }
}

#[test]
fn keys_upstream_does_not_know_stay_unknown() {
    for (snippet, key) in [
        ("trident:\n  tracestream: x\n", "trident.tracestream"),
        ("os:\n  uki: {}\n", "os.uki"),
        (
            "os:\n  users: [{name: a, shell: /bin/sh}]\n",
            "os.users[0].shell",
        ),
    ] {
        let yaml = format!("{}{snippet}", good())
            .replace("trident:\n  datastorePath: /tmp/ds.sqlite\n", "");
        let err = err_of(&yaml);
        assert_eq!(
            err.subkind(),
            Subkind::UnknownKey,
            "{key}: {}",
            err.message()
        );
        assert!(err.message().contains(key), "{}", err.message());
    }
}

#[test]
fn tagged_health_checks_from_upstream_schema_are_folded() {
    let yaml = good().replace(
        "  - { name: ok, runOn: [ab-update], content: \"true\", timeoutSeconds: 5 }",
        "  - Script: { name: ok, runOn: [ab-update], content: \"true\" }",
    );
    let hc = parse(&yaml).unwrap();
    assert_eq!(hc.health.checks[0].name, "ok");
    assert_eq!(hc.health.checks[0].content.as_deref(), Some("true"));

    let yaml = good().replace(
        "  - { name: ok, runOn: [ab-update], content: \"true\", timeoutSeconds: 5 }",
        "  - SystemdCheck: { name: net, systemdServices: [systemd-networkd] }",
    );
    let hc = parse(&yaml).unwrap();
    assert_eq!(
        hc.health.checks[0].systemd_services.as_deref(),
        Some(&["systemd-networkd".to_owned()][..])
    );
}

#[test]
fn a_systemd_check_names_units_and_runs_nothing() {
    let check = "  - { name: ok, runOn: [ab-update], content: \"true\", timeoutSeconds: 5 }";
    for (bad, key) in [
        (
            "  - { name: net, systemdServices: [] }",
            "health.checks[0].systemdServices",
        ),
        (
            "  - { name: net, systemdServices: [\"-x\"] }",
            "health.checks[0].systemdServices[0]",
        ),
        (
            "  - { name: net, systemdServices: [a], content: \"true\" }",
            "health.checks[0]",
        ),
    ] {
        let err = err_of(&good().replace(check, bad));
        assert_eq!(
            err.subkind(),
            Subkind::InvalidHostConfiguration,
            "{}",
            err.message()
        );
        assert!(
            err.message().contains(&format!("'{key}'")),
            "{}",
            err.message()
        );
    }
}

#[test]
fn partition_types_include_verity_and_raw_guids() {
    let yaml = good().replace(
        "{ id: esp,    type: esp,",
        "{ id: esp,    type: 21686148-6449-6e6f-744e-656564454649,",
    );
    let hc = parse(&yaml).unwrap();
    assert_eq!(
        hc.storage.disks[0].partitions[0]
            .partition_type
            .gpt_type_guid(),
        "21686148-6449-6e6f-744e-656564454649"
    );
    let err = err_of(&good().replace("type: esp,", "type: boot,"));
    assert_eq!(err.subkind(), Subkind::ParseHostConfiguration);
    assert!(
        err.message().contains("unknown partition type 'boot'"),
        "{}",
        err.message()
    );
}

#[test]
fn sizes_and_pairs_must_fit() {
    let err = err_of(&good().replace("size: 64M", "size: 1000"));
    assert!(
        err.message()
            .contains("storage.disks[0].partitions[0].size")
            && err.message().contains("multiple of 4096"),
        "{}",
        err.message()
    );
    let err = err_of(&good().replace("{ id: root-b, type: root,", "{ id: root-b, type: home,"));
    assert!(
        err.message()
            .contains("storage.abUpdate.volumePairs[0].volumeBId")
            && err.message().contains("same type"),
        "{}",
        err.message()
    );
    let err = err_of(&good().replace("volumeBId: root-b", "volumeBId: root-a"));
    assert!(
        err.message().contains("two partitions"),
        "{}",
        err.message()
    );
}

#[test]
fn broken_references_name_the_referencing_key() {
    let err = err_of(&good().replace("volumeBId: root-b", "volumeBId: root-x"));
    assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration);
    assert!(
        err.message()
            .contains("storage.abUpdate.volumePairs[0].volumeBId"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("root-x"));

    let err = err_of(&good().replace("deviceId: esp", "deviceId: efi"));
    assert!(
        err.message().contains("storage.filesystems[0].deviceId"),
        "{}",
        err.message()
    );

    let err = err_of(&good().replace("deviceId: root,", "deviceId: root-a,"));
    assert!(
        err.message().contains("use the pair id"),
        "{}",
        err.message()
    );
}

#[test]
fn duplicate_ids_and_missing_root_are_rejected() {
    let err = err_of(&good().replace("id: root-b,", "id: root-a,"));
    assert!(
        err.message().contains("storage.disks[0].partitions[2].id"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("already used"), "{}", err.message());

    let err = err_of(&good().replace("mountPoint: / }", "mountPoint: /srv }"));
    assert!(
        err.message().contains("root filesystem"),
        "{}",
        err.message()
    );
}

#[test]
fn image_url_and_hash_are_checked() {
    let err = err_of(&good().replace("file:///srv/images/os-v2.cosi", "ftp://x/os.cosi"));
    assert_eq!(err.subkind(), Subkind::InvalidImageUrl);
    assert!(err.message().contains("image.url"));

    let err = err_of(&good().replace("sha384: ignored", "sha384: abc"));
    assert_eq!(err.subkind(), Subkind::InvalidImageHash);
    assert!(err.message().contains("image.sha384"));

    let hex = "a".repeat(96);
    assert!(parse(&good().replace("sha384: ignored", &format!("sha384: {hex}"))).is_ok());
    // Upstream accepts upper-case hex; it is normalised to lower case.
    let upper = "A".repeat(96);
    let hc = parse(&good().replace("sha384: ignored", &format!("sha384: {upper}"))).unwrap();
    assert_eq!(hc.image.unwrap().sha384, hex);
}

#[test]
fn scripts_need_exactly_one_of_content_or_path() {
    let err = err_of(&good().replace("    content: echo hi\n", ""));
    assert!(
        err.message().contains("scripts.preServicing[0]"),
        "{}",
        err.message()
    );
    let err = err_of(&good().replace("timeoutSeconds: 5", "timeoutSeconds: 0"));
    assert!(
        err.message().contains("health.checks[0].timeoutSeconds"),
        "{}",
        err.message()
    );
}

#[test]
fn wrong_value_type_reports_line_and_column() {
    let err = err_of(&good().replace(
        "partitions:\n    - { id: esp,    type: esp,  size: 64M }",
        "partitions: 3\n    - { id: esp,    type: esp,  size: 64M }",
    ));
    assert!(
        err.message().contains("storage.disks[0].partitions") || err.message().contains("line"),
        "{}",
        err.message()
    );
}

#[test]
fn unknown_key_inside_a_mount_point_is_named() {
    let err = err_of(&good().replace("options: umask=0077", "option: umask=0077"));
    assert_eq!(err.subkind(), Subkind::UnknownKey);
    assert!(
        err.message()
            .contains("storage.filesystems[0].mountPoint.option"),
        "{}",
        err.message()
    );
}

#[test]
fn partition_uuid_and_label_are_checked_against_gpt_limits() {
    let guid = "8c9e1a52-1f3b-4a7e-9d55-0e6b2f1c3a77";
    let ok = good().replace(
        "size: 64M }",
        &format!("size: 64M, uuid: {guid}, label: EFI }}"),
    );
    let hc = parse(&ok).unwrap();
    assert_eq!(
        hc.storage.disks[0].partitions[0].label.as_deref(),
        Some("EFI")
    );
    for (from, to, key) in [
        (
            "size: 64M }",
            "size: 64M, uuid: nope }".to_owned(),
            "partitions[0].uuid",
        ),
        (
            "size: 64M }",
            format!("size: 64M, label: {} }}", "x".repeat(37)),
            "partitions[0].label",
        ),
        (
            "{ id: root-b, type: root, size: 2G }",
            format!("{{ id: root-b, type: root, size: 2G, uuid: {guid} }}"),
            "partitions[2].uuid",
        ),
    ] {
        let yaml = ok.replace(from, &to);
        let yaml = if key.ends_with("[2].uuid") {
            yaml
        } else {
            good().replace(from, &to)
        };
        let err = err_of(&yaml);
        assert_eq!(
            err.subkind(),
            Subkind::InvalidHostConfiguration,
            "{}",
            err.message()
        );
        assert!(
            err.message().contains(&format!("'storage.disks[0].{key}'")),
            "{}",
            err.message()
        );
    }
}

#[test]
fn extra_kernel_arguments_are_single_words() {
    let ok = format!(
        "{}os:\n  kernelCommandLine: {{extraCommandLine: [quiet, console=ttyS0]}}\n",
        good()
    );
    assert_eq!(
        parse(&ok)
            .unwrap()
            .os
            .kernel_command_line
            .extra_command_line
            .len(),
        2
    );
    let err = err_of(&ok.replace("quiet", "'a b'"));
    assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration);
    assert!(
        err.message()
            .contains("'os.kernelCommandLine.extraCommandLine[0]'"),
        "{}",
        err.message()
    );
}

/// Extensions: a fetchable URL, the image's hash, a path in the kind's
/// directories, no image twice; each error names the key.
#[test]
fn extensions_are_checked_naming_the_key() {
    let hash = "ab".repeat(48);
    let ok = format!(
        "os:\n  sysexts:\n  - {{url: 'https://x/a.raw', sha384: {hash}}}\n  \
         - {{url: 'oci://r/x:1', sha384: {}, path: /etc/extensions/b.raw}}\n  \
         confexts:\n  - {{url: 'file:///c.raw', sha384: {hash}, path: /usr/local/lib/confexts/c.raw}}\n",
        "CD".repeat(48)
    );
    let hc = parse(&format!("{}{ok}", good())).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(hc.os.sysexts.len(), 2);
    let cases = [
        (
            format!("  sysexts: [{{url: 'ftp://x/a.raw', sha384: {hash}}}]\n"),
            "os.sysexts[0].url",
        ),
        (
            "  sysexts: [{url: 'http://x/a.raw', sha384: ignored}]\n".to_owned(),
            "os.sysexts[0].sha384",
        ),
        (
            format!(
                "  confexts: [{{url: 'http://x/a', sha384: {hash}}}, {{url: 'http://y/a', sha384: {hash}}}]\n"
            ),
            "os.confexts[1].sha384",
        ),
        (
            format!(
                "  sysexts: [{{url: 'http://x/a', sha384: {hash}, path: /var/lib/confexts/a.raw}}]\n"
            ),
            "os.sysexts[0].path",
        ),
        (
            format!(
                "  confexts: [{{url: 'http://x/a', sha384: {hash}, path: /var/lib/confexts/a.img}}]\n"
            ),
            "os.confexts[0].path",
        ),
    ];
    for (snippet, key) in cases {
        let err = err_of(&format!("{}os:\n{snippet}", good()));
        assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration, "{key}");
        assert!(
            err.message().contains(&format!("'{key}'")),
            "{key}: {}",
            err.message()
        );
    }
}

/// Two disks, an A/B pair of RAID arrays (`level`, members `members` of
/// four root partitions `r1a r1b r2a r2b`) and a mirrored ESP.
fn raid_doc(level: &str, members_a: &str, members_b: &str) -> String {
    format!(
        r#"image: {{ url: "file:///img.cosi", sha384: ignored }}
storage:
  disks:
  - id: d1
    device: /dev/vda
    partitions:
    - {{ id: esp1, type: esp, size: 64M }}
    - {{ id: r1a, type: root, size: 1G }}
    - {{ id: r1b, type: root, size: 1G }}
    - {{ id: r1c, type: root, size: 1G }}
  - id: d2
    device: /dev/vdb
    partitions:
    - {{ id: esp2, type: esp, size: 64M }}
    - {{ id: r2a, type: root, size: 1G }}
    - {{ id: r2b, type: root, size: 1G }}
    - {{ id: r2c, type: root, size: 1G }}
  raid:
    software:
    - {{ id: esp, name: esp, level: raid1, devices: [esp1, esp2] }}
    - {{ id: root-a, name: root-a, level: {level}, devices: [{members_a}] }}
    - {{ id: root-b, name: root-b, level: {level}, devices: [{members_b}] }}
    syncTimeout: 120
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, mountPoint: /boot/efi }}
  - {{ deviceId: root, mountPoint: / }}
"#
    )
}

#[test]
fn an_ab_pair_of_mirrors_on_two_disks_is_valid_without_warnings() {
    let yaml = raid_doc("raid1", "r1a, r2a", "r1b, r2b");
    let hc = parse(&yaml).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(hc.storage.raid.sync_timeout, Some(120));
    assert!(
        warnings(&hc, &yaml).is_empty(),
        "{:?}",
        warnings(&hc, &yaml)
    );
}

#[test]
fn every_raid_level_is_accepted_with_enough_members() {
    for (level, a, b) in [
        ("raid0", "r1a, r2a", "r1b, r2b"),
        ("raid5", "r1a, r2a, r1c", "r1b, r2b, r2c"),
        ("raid10", "r1a, r2a", "r1b, r2b"),
    ] {
        parse(&raid_doc(level, a, b)).unwrap_or_else(|e| panic!("{level}: {}", e.report()));
    }
}

#[test]
fn a_raid6_array_of_three_members_is_refused_naming_its_devices() {
    let err = err_of(&raid_doc("raid6", "r1a, r2a, r1c", "r1b, r2b, r2c"));
    assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration);
    assert!(
        err.message()
            .contains("'storage.raid.software[1].devices': a raid6 array needs at least 4 devices, 'root-a' has 3"),
        "{}",
        err.message()
    );
}

#[test]
fn a_mirror_with_two_members_on_one_disk_is_valid_with_a_warning() {
    let yaml = raid_doc("raid1", "r1a, r1c", "r1b, r2b");
    let hc = parse(&yaml).unwrap_or_else(|e| panic!("{}", e.report()));
    let found = warnings(&hc, &yaml);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("Host Configuration key 'storage.raid.software[1].devices' (line "),
        "{found:?}"
    );
    assert!(
        found[0].contains("members 'r1a' and 'r1c' of raid1 array 'root-a' are both on disk 'd1'"),
        "{found:?}"
    );
    // A stripe has no redundancy to lose: no warning.
    let yaml = raid_doc("raid0", "r1a, r1c", "r1b, r2b");
    assert!(warnings(&parse(&yaml).unwrap(), &yaml).is_empty());
}

/// The Host Status keeps the configuration as `spec` (YAML): RAID arrays
/// and swap survive the round trip, or an installed host could neither
/// resolve its arrays nor rebuild them.
#[test]
fn raid_and_swap_survive_the_round_trip_through_the_host_status() {
    let yaml = raid_doc("raid1", "r1a, r2a", "r1b, r2b")
        .replace(
            "  filesystems:\n",
            "  swap:\n  - { deviceId: r1c }\n  filesystems:\n",
        )
        .replace(
            "    - { id: r1c, type: root, size: 1G }",
            "    - { id: r1c, type: swap, size: 1G }",
        );
    let hc = parse(&yaml).unwrap_or_else(|e| panic!("{}", e.report()));
    let again = parse(&to_yaml(&hc).unwrap()).unwrap();
    assert_eq!(again.storage.raid, hc.storage.raid);
    assert_eq!(again.storage.raid.software.len(), 3);
    assert_eq!(again.storage.raid.sync_timeout, Some(120));
    assert_eq!(again.storage.swap.len(), 1);
    assert_eq!(again.storage.swap[0].device_id, "r1c");
}
