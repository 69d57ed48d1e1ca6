//! Each rule of the graph with a small document that breaks it (the error
//! kind and the key path asserted), and upstream's own validation cases
//! (`storage_graph/validation_tests.rs`) lifted as documents.

#![allow(clippy::unwrap_used)]

use super::{DeviceKind, GraphError, StorageGraph};
use crate::config::parse::parse_syntax;

/// A disk of eight partitions (`p1`..`p8`; p7 swap, p8 esp) and `rest`
/// appended under `storage:`.
fn doc(types: &[(&str, &str)], rest: &str) -> String {
    let mut parts: Vec<(String, String, String)> = (1..=8)
        .map(|i| {
            let ty = match i {
                7 => "swap",
                8 => "esp",
                _ => "linux-generic",
            };
            (format!("p{i}"), ty.to_owned(), "1M".to_owned())
        })
        .collect();
    for (id, ty) in types {
        let part = parts.iter_mut().find(|p| p.0 == *id).unwrap();
        match ty.strip_prefix("size=") {
            Some(size) => part.2 = size.to_owned(),
            None => part.1 = (*ty).to_owned(),
        }
    }
    let parts: String = parts
        .iter()
        .map(|(id, ty, size)| format!("    - {{ id: {id}, type: {ty}, size: {size} }}\n"))
        .collect();
    format!(
        "storage:\n  disks:\n  - id: disk\n    device: /dev/sda\n    partitions:\n{parts}    adoptedPartitions:\n    - {{ id: adopted, matchLabel: old }}\n{rest}"
    )
}

fn build(yaml: &str) -> Result<StorageGraph, GraphError> {
    let hc = parse_syntax(yaml).unwrap_or_else(|e| panic!("{}\n{yaml}", e.report()));
    StorageGraph::build(&hc)
}

fn err(types: &[(&str, &str)], rest: &str) -> GraphError {
    let yaml = doc(types, rest);
    match build(&yaml) {
        Ok(_) => panic!("expected a graph error for:\n{yaml}"),
        Err(e) => e,
    }
}

macro_rules! assert_err {
    ($err:expr, $pattern:pat, $key:expr) => {{
        let e = $err;
        assert!(matches!(e, $pattern), "{e:?}");
        assert_eq!(e.key(), $key, "{e}");
    }};
}

#[test]
fn a_sound_stack_builds_with_its_edges() {
    let yaml = doc(
        &[("p3", "size=2M"), ("p4", "size=2M")],
        "  raid:\n    software:\n    - { id: md, name: md0, level: raid1, devices: [p1, p2] }\n  abUpdate:\n    volumePairs:\n    - { id: root, volumeAId: p3, volumeBId: p4 }\n  encryption:\n    pcrs: [7]\n    volumes:\n    - { id: enc, deviceName: luks-data, deviceId: md }\n  filesystems:\n  - { deviceId: root, mountPoint: / }\n  - { deviceId: enc, mountPoint: /data, source: new, type: ext4 }\n  - { deviceId: p8, mountPoint: /boot/efi }\n  swap: [p7]\n",
    );
    let graph = build(&yaml).unwrap();
    assert_eq!(graph.nodes().len(), 1 + 8 + 1 + 1 + 1 + 1 + 3 + 1);
    assert_eq!(
        graph.device("md").unwrap().device_kind(),
        Some(DeviceKind::RaidArray)
    );
    let (a, b) = graph.ab_pair("root").unwrap();
    assert_eq!((a.label(), b.label()), ("p3", "p4"));
    let enc = graph.device("enc").unwrap();
    let under: Vec<&str> = graph.targets(enc).iter().map(|(_, n)| n.label()).collect();
    assert_eq!(under, ["md"]);
    assert_eq!(graph.referrer_of("md").unwrap().label(), "enc");
    assert_eq!(
        graph.referrer_of("enc").unwrap().key,
        "storage.filesystems[1]"
    );
    assert!(graph.referrer_of("p5").is_none());
}

#[test]
fn ids_are_unique_and_not_empty() {
    let e = err(
        &[],
        "  abUpdate:\n    volumePairs:\n    - { id: p1, volumeAId: p2, volumeBId: p3 }\n",
    );
    assert_err!(
        e,
        GraphError::DuplicateId { .. },
        "storage.abUpdate.volumePairs[0].id"
    );
    let e = err(
        &[],
        "  raid:\n    software:\n    - { id: '', name: md0, level: raid1, devices: [p1, p2] }\n",
    );
    assert_err!(e, GraphError::EmptyId { .. }, "storage.raid.software[0].id");
}

#[test]
fn every_reference_resolves() {
    let e = err(
        &[],
        "  raid:\n    software:\n    - { id: md, name: md0, level: raid1, devices: [p1, nope] }\n",
    );
    assert_err!(
        e,
        GraphError::UnknownReference { .. },
        "storage.raid.software[0].devices[1]"
    );
}

#[test]
fn a_cycle_is_named() {
    let e = err(
        &[],
        "  abUpdate:\n    volumePairs:\n    - { id: pair, volumeAId: enc, volumeBId: p2 }\n  encryption:\n    pcrs: [7]\n    volumes:\n    - { id: enc, deviceName: luks, deviceId: pair }\n",
    );
    let GraphError::Cycle { cycle, .. } = &e else {
        panic!("{e:?}")
    };
    assert!(
        cycle == "enc -> pair -> enc" || cycle == "pair -> enc -> pair",
        "{cycle}"
    );
}

#[test]
fn each_referrer_takes_its_number_of_devices() {
    let e = err(
        &[],
        "  raid:\n    software:\n    - { id: md, name: md0, level: raid1, devices: [p1] }\n",
    );
    assert_err!(
        e,
        GraphError::TargetCount { found: 1, .. },
        "storage.raid.software[0].devices"
    );
    let e = err(&[], "  filesystems:\n  - { mountPoint: / }\n");
    assert_err!(
        e,
        GraphError::TargetCount { found: 0, .. },
        "storage.filesystems[0].deviceId"
    );
    let e = err(
        &[],
        "  verity:\n  - { id: v, name: v, dataDeviceId: p1, hashDeviceId: '' }\n",
    );
    assert_err!(
        e,
        GraphError::UnknownReference { .. },
        "storage.verity[0].hashDeviceId"
    );
    let e = err(
        &[],
        "  raid:\n    software:\n    - { id: md, name: md0, level: raid1, devices: [p1, p1] }\n",
    );
    assert_err!(
        e,
        GraphError::DuplicateTarget { .. },
        "storage.raid.software[0].devices[1]"
    );
}

#[test]
fn each_referrer_sits_on_compatible_kinds() {
    for (rest, key) in [
        (
            "  raid:\n    software:\n    - { id: md, name: md0, level: raid1, devices: [p1, p2] }\n    - { id: md2, name: md2, level: raid1, devices: [md, p3] }\n",
            "storage.raid.software[1].devices[0]",
        ),
        (
            "  filesystems:\n  - { deviceId: disk, mountPoint: / }\n",
            "storage.filesystems[0].deviceId",
        ),
        (
            "  filesystems:\n  - { deviceId: adopted, mountPoint: / }\n",
            "storage.filesystems[0].deviceId",
        ),
        (
            "  verity:\n  - { id: v, name: v, dataDeviceId: p1, hashDeviceId: p2 }\n  swap: [v]\n",
            "storage.swap[0].deviceId",
        ),
    ] {
        assert_err!(err(&[], rest), GraphError::IncompatibleKind { .. }, key);
    }
}

#[test]
fn a_device_is_used_once() {
    let e = err(
        &[],
        "  filesystems:\n  - { deviceId: p1, mountPoint: / }\n  - { deviceId: p1, mountPoint: /srv, source: new, type: ext4 }\n",
    );
    assert_err!(
        e,
        GraphError::SharedDevice { .. },
        "storage.filesystems[1].deviceId"
    );
}

#[test]
fn the_devices_of_a_pair_are_of_one_kind() {
    let e = err(
        &[("p3", "size=2M")],
        "  raid:\n    software:\n    - { id: md, name: md0, level: raid1, devices: [p1, p2] }\n  abUpdate:\n    volumePairs:\n    - { id: pair, volumeAId: md, volumeBId: p3 }\n",
    );
    assert_err!(
        e,
        GraphError::MixedKinds { .. },
        "storage.abUpdate.volumePairs[0].volumeBId"
    );
}

#[test]
fn arrays_and_pairs_have_one_fixed_size_and_type() {
    let pair = "  abUpdate:\n    volumePairs:\n    - { id: pair, volumeAId: p1, volumeBId: p2 }\n";
    let key = "storage.abUpdate.volumePairs[0].volumeBId";
    assert_err!(
        err(&[("p2", "size=2M")], pair),
        GraphError::SizeMismatch { .. },
        key
    );
    assert_err!(
        err(&[("p2", "root")], pair),
        GraphError::TypeMismatch { .. },
        key
    );
    let e = err(&[("p1", "size=grow"), ("p2", "size=grow")], pair);
    assert_err!(
        e,
        GraphError::SizeNotFixed { .. },
        "storage.abUpdate.volumePairs[0].volumeAId"
    );
    // Through arrays: the partitions under both arrays of a pair.
    let e = err(
        &[("p4", "size=2M")],
        "  raid:\n    software:\n    - { id: m1, name: m1, level: raid1, devices: [p1, p2] }\n    - { id: m2, name: m2, level: raid1, devices: [p3, p4] }\n  abUpdate:\n    volumePairs:\n    - { id: pair, volumeAId: m1, volumeBId: m2 }\n",
    );
    assert_err!(
        e,
        GraphError::SizeMismatch { .. },
        "storage.raid.software[1].devices[1]"
    );
}

#[test]
fn partition_types_fit_their_referrer() {
    let e = err(&[], "  swap: [p1]\n");
    assert_err!(
        e,
        GraphError::PartitionTypeNotAllowed { .. },
        "storage.swap[0].deviceId"
    );
    let e = err(
        &[("p1", "root")],
        "  encryption:\n    pcrs: [7]\n    volumes:\n    - { id: enc, deviceName: luks, deviceId: p1 }\n",
    );
    assert_err!(
        e,
        GraphError::PartitionTypeNotAllowed { .. },
        "storage.encryption.volumes[0].deviceId"
    );
    let e = err(
        &[],
        "  filesystems:\n  - { deviceId: p8, mountPoint: /srv, source: new, type: vfat }\n",
    );
    assert_err!(
        e,
        GraphError::PartitionTypeNotAllowed { .. },
        "storage.filesystems[0].deviceId"
    );
}

#[test]
fn verity_data_and_hash_are_of_like_kinds() {
    let verity = "  verity:\n  - { id: v, name: v, dataDeviceId: p1, hashDeviceId: p2 }\n";
    build(&doc(&[("p1", "root"), ("p2", "root-verity")], verity)).unwrap();
    let e = err(&[("p1", "root"), ("p2", "usr-verity")], verity);
    assert_err!(
        e,
        GraphError::VerityHashType { .. },
        "storage.verity[0].hashDeviceId"
    );
    let e = err(&[("p1", "home"), ("p2", "root-verity")], verity);
    assert_err!(
        e,
        GraphError::PartitionTypeNotAllowed { .. },
        "storage.verity[0].dataDeviceId"
    );
    let e = err(
        &[("p1", "root"), ("p2", "root-verity"), ("p3", "size=2M")],
        "  raid:\n    software:\n    - { id: md, name: md, level: raid1, devices: [p3, p4] }\n  verity:\n  - { id: v, name: v, dataDeviceId: p1, hashDeviceId: md }\n",
    );
    assert_err!(
        e,
        GraphError::MixedKinds { .. },
        "storage.verity[0].hashDeviceId"
    );
}

#[test]
fn names_the_kernel_sees_are_unique() {
    let e = err(
        &[],
        "  raid:\n    software:\n    - { id: a, name: md0, level: raid1, devices: [p1, p2] }\n    - { id: b, name: md0, level: raid1, devices: [p3, p4] }\n",
    );
    assert_err!(
        e,
        GraphError::DuplicateField { .. },
        "storage.raid.software[1].name"
    );
}

#[test]
fn an_adopted_partition_matches_one_way() {
    let yaml = doc(&[], "").replace("{ id: adopted, matchLabel: old }", "{ id: adopted }");
    let e = build(&yaml).unwrap_err();
    assert_err!(
        e,
        GraphError::AdoptedPartitionMatch { .. },
        "storage.disks[0].adoptedPartitions[0]"
    );
}

#[test]
fn an_esp_on_raid_is_a_mirror() {
    let e = err(
        &[("p1", "esp"), ("p2", "esp")],
        "  raid:\n    software:\n    - { id: md, name: md, level: raid0, devices: [p1, p2] }\n  filesystems:\n  - { deviceId: md, mountPoint: /boot/efi }\n",
    );
    assert_err!(
        e,
        GraphError::EspRaidLevel { .. },
        "storage.filesystems[0].deviceId"
    );
}

/// Upstream's `test_basic_graph`: a disk of six partitions, a RAID1 array,
/// an A/B pair, an encrypted volume and a root filesystem.
#[test]
fn upstream_basic_graph_builds() {
    let yaml = doc(
        &[],
        "  raid:\n    software:\n    - { id: raid_array, name: md0, level: raid1, devices: [p1, p2] }\n  abUpdate:\n    volumePairs:\n    - { id: ab_volume_pair, volumeAId: p3, volumeBId: p4 }\n  encryption:\n    pcrs: [7]\n    volumes:\n    - { id: encrypted_volume, deviceName: encrypted_volume, deviceId: p5 }\n  filesystems:\n  - { deviceId: p6, mountPoint: / }\n",
    );
    let graph = build(&yaml).unwrap();
    assert_eq!(graph.nodes().len(), 1 + 8 + 1 + 1 + 1 + 1 + 1);
}

/// Upstream's `test_duplicate_node`, `test_invalid_references`,
/// `test_sharing` and `test_raid_level_esp` as documents.
#[test]
fn upstream_validation_cases_fail_as_upstream_says() {
    let e = err(
        &[],
        "  raid:\n    software:\n    - { id: disk, name: md0, level: raid1, devices: [p1, p2] }\n",
    );
    assert!(matches!(e, GraphError::DuplicateId { .. }), "{e:?}");
    let e = err(
        &[],
        "  abUpdate:\n    volumePairs:\n    - { id: ab, volumeAId: p1, volumeBId: p9 }\n",
    );
    assert!(matches!(e, GraphError::UnknownReference { .. }), "{e:?}");
    let e = err(
        &[],
        "  raid:\n    software:\n    - { id: md, name: md0, level: raid1, devices: [p1, p2] }\n  abUpdate:\n    volumePairs:\n    - { id: ab, volumeAId: p1, volumeBId: p3 }\n",
    );
    assert!(matches!(e, GraphError::SharedDevice { .. }), "{e:?}");
    let e = err(
        &[("p1", "esp"), ("p2", "esp")],
        "  raid:\n    software:\n    - { id: md, name: md0, level: raid5, devices: [p1, p2] }\n  filesystems:\n  - { deviceId: md, mountPoint: /boot/efi }\n",
    );
    assert!(matches!(e, GraphError::EspRaidLevel { .. }), "{e:?}");
}

/// What `trident validate` reports: a graph violation is an
/// invalid-host-configuration error naming the key and its line; with an
/// unsupported feature as well, the refusal names the violation too.
#[test]
fn parse_reports_graph_errors_with_their_line_before_unsupported_features() {
    use crate::Category;
    use crate::config::parse;
    use crate::error::Subkind;
    let good = "image: { url: file:///i.cosi, sha384: ignored }\nstorage:\n  disks:\n  - id: d\n    device: /dev/sda\n    partitions:\n    - { id: esp, type: esp, size: 64M }\n    - { id: r1, type: root, size: 1G }\n    - { id: r2, type: root, size: 1G }\n  filesystems:\n  - { deviceId: esp, mountPoint: /boot/efi }\n  - { deviceId: r1, mountPoint: / }\n";
    parse(good).unwrap();
    let shared = good.replace(
        "{ deviceId: esp, mountPoint: /boot/efi }",
        "{ deviceId: r1, mountPoint: /boot/efi }",
    );
    let e = parse(&shared).unwrap_err();
    assert_eq!(e.subkind(), Subkind::InvalidHostConfiguration);
    assert!(
        e.message().starts_with("Host Configuration key 'storage.filesystems[1].deviceId' (line 12, column 7): 'r1' is already used at 'storage.filesystems[0].deviceId'"),
        "{}",
        e.message()
    );
    // Clearing the TPM stays unsupported (encryption itself is applied).
    let encrypted = format!(
        "{shared}  encryption:\n    volumes: []\n    pcrs: [7]\n    clearTpmOnInstall: true\n"
    );
    let e = parse(&encrypted).unwrap_err();
    assert_eq!(e.category(), Category::UnsupportedConfiguration);
    assert!(
        e.message()
            .contains("'storage.encryption.clearTpmOnInstall'"),
        "{}",
        e.message()
    );
    assert!(
        e.message()
            .contains("the storage is invalid: Host Configuration key 'storage."),
        "{}",
        e.message()
    );
}
