//! Upstream's Host Configuration samples (our fixtures mirroring them)
//! each build the block-device graph they describe: its devices, their
//! kinds, what sits on what, the A/B pairs.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::PathBuf;

use trident_host::config::HostConfiguration;
use trident_host::config::storage_graph::{DeviceKind, ReferrerKind, Role, StorageGraph};

/// The sample's graph (parsed without the unsupported-feature refusals,
/// which `fixtures.rs` covers).
fn graph(name: &str) -> StorageGraph {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/host-config")
        .join(format!("{name}.yaml"));
    let yaml = std::fs::read_to_string(&path).unwrap();
    let hc: HostConfiguration = serde_saphyr::from_str(&yaml).unwrap();
    StorageGraph::build(&hc).unwrap_or_else(|e| panic!("{name}: {e} at {}", e.key()))
}

/// `id`'s kind and the ids it sits on, in order.
fn stack(graph: &StorageGraph, id: &str) -> (DeviceKind, Vec<String>) {
    let node = graph
        .device(id)
        .unwrap_or_else(|| panic!("no device '{id}'"));
    let under = graph
        .targets(node)
        .iter()
        .map(|(_, n)| n.label().to_owned())
        .collect();
    (node.device_kind().unwrap(), under)
}

fn count(graph: &StorageGraph, kind: DeviceKind) -> usize {
    graph
        .nodes()
        .iter()
        .filter(|n| n.device_kind() == Some(kind))
        .count()
}

/// The device the filesystem at `mount_point` sits on, and its referrer kind.
fn filesystem_on(graph: &StorageGraph, mount_point: &str) -> (String, ReferrerKind) {
    let fs = graph
        .filesystems()
        .find(|n| matches!(&n.data, trident_host::config::storage_graph::NodeData::Filesystem { mount_point: m, .. } if m == mount_point))
        .unwrap_or_else(|| panic!("no filesystem at {mount_point}"));
    let (_, device) = graph.targets(fs)[0];
    (device.label().to_owned(), fs.referrer_kind().unwrap())
}

#[test]
fn raid_puts_root_on_a_mirror_of_two_disks() {
    let g = graph("raid");
    assert_eq!(count(&g, DeviceKind::Disk), 2);
    assert_eq!(count(&g, DeviceKind::Partition), 6);
    assert_eq!(
        stack(&g, "md-root"),
        (
            DeviceKind::RaidArray,
            vec!["d1-root".into(), "d2-root".into()]
        )
    );
    assert_eq!(
        filesystem_on(&g, "/"),
        ("md-root".into(), ReferrerKind::FilesystemImage)
    );
    assert_eq!(
        filesystem_on(&g, "/boot/efi"),
        ("d1-esp".into(), ReferrerKind::FilesystemEsp)
    );
    assert_eq!(
        g.referrer_of("d2-swap").unwrap().referrer_kind(),
        Some(ReferrerKind::Swap)
    );
    assert!(g.referrer_of("d2-esp").is_none());
}

#[test]
fn raid_mirrored_mirrors_the_esp_root_and_agent() {
    let g = graph("raid-mirrored");
    assert_eq!(count(&g, DeviceKind::RaidArray), 3);
    assert_eq!(
        stack(&g, "esp"),
        (
            DeviceKind::RaidArray,
            vec!["m1-esp".into(), "m2-esp".into()]
        )
    );
    assert_eq!(
        filesystem_on(&g, "/boot/efi"),
        ("esp".into(), ReferrerKind::FilesystemEsp)
    );
    assert_eq!(
        filesystem_on(&g, "/var/lib/trident"),
        ("agent".into(), ReferrerKind::FilesystemNew)
    );
}

#[test]
fn encryption_puts_srv_on_a_luks_volume() {
    let g = graph("encryption");
    assert_eq!(
        stack(&g, "srv-crypt"),
        (DeviceKind::EncryptedVolume, vec!["secret".into()])
    );
    assert_eq!(
        filesystem_on(&g, "/srv"),
        ("srv-crypt".into(), ReferrerKind::FilesystemNew)
    );
    assert_eq!(stack(&g, "spare"), (DeviceKind::Disk, vec![]));
}

#[test]
fn verity_puts_root_on_data_and_hash_partitions() {
    let g = graph("verity");
    assert_eq!(
        stack(&g, "vroot"),
        (
            DeviceKind::VerityDevice,
            vec!["vroot-data".into(), "vroot-hash".into()]
        )
    );
    let roles: Vec<Role> = g
        .device("vroot")
        .unwrap()
        .references
        .iter()
        .map(|r| r.role)
        .collect();
    assert_eq!(roles, [Role::VerityData, Role::VerityHash]);
    assert_eq!(
        filesystem_on(&g, "/"),
        ("vroot".into(), ReferrerKind::FilesystemImage)
    );
    assert_eq!(g.filesystems().count(), 7);
}

#[test]
fn advanced_stacks_verity_on_ab_pairs_of_mirrors() {
    let g = graph("advanced");
    assert_eq!(count(&g, DeviceKind::RaidArray), 5);
    assert_eq!(count(&g, DeviceKind::AbVolume), 3);
    assert_eq!(
        stack(&g, "root"),
        (
            DeviceKind::VerityDevice,
            vec!["root-data".into(), "root-hash".into()]
        )
    );
    let (a, b) = g.ab_pair("root-data").unwrap();
    assert_eq!((a.label(), b.label()), ("root-a", "root-b"));
    assert_eq!(
        stack(&g, "root-a"),
        (
            DeviceKind::RaidArray,
            vec!["root-a-l".into(), "root-a-r".into()]
        )
    );
    assert_eq!(
        stack(&g, "home"),
        (DeviceKind::EncryptedVolume, vec!["home-md".into()])
    );
    assert_eq!(
        filesystem_on(&g, "/"),
        ("root".into(), ReferrerKind::FilesystemImage)
    );
}

#[test]
fn base_has_a_pair_a_luks_volume_and_a_mirror() {
    let g = graph("base");
    let (a, b) = g.ab_pair("sys").unwrap();
    assert_eq!((a.label(), b.label()), ("sys-a", "sys-b"));
    assert_eq!(
        filesystem_on(&g, "/"),
        ("sys".into(), ReferrerKind::FilesystemImage)
    );
    assert_eq!(
        stack(&g, "data"),
        (DeviceKind::EncryptedVolume, vec!["crypt-data".into()])
    );
    assert_eq!(
        stack(&g, "scratch"),
        (
            DeviceKind::RaidArray,
            vec!["mirror-0".into(), "mirror-1".into()]
        )
    );
}

#[test]
fn simple_and_basic_are_two_partitions() {
    for (name, esp, root) in [
        ("simple", "esp-part", "root-part"),
        ("basic", "efi", "sysroot"),
    ] {
        let g = graph(name);
        assert_eq!(g.nodes().len(), 1 + 2 + 2, "{name}");
        assert_eq!(
            filesystem_on(&g, "/boot/efi"),
            (esp.into(), ReferrerKind::FilesystemEsp)
        );
        assert_eq!(
            filesystem_on(&g, "/"),
            (root.into(), ReferrerKind::FilesystemImage)
        );
        assert_eq!(
            g.device(root).unwrap().device_kind(),
            Some(DeviceKind::Partition)
        );
    }
}
