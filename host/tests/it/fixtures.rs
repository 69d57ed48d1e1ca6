//! Our fixtures mirroring upstream's eight Host Configuration samples (see
//! tests/fixtures/host-config/README.md): each parses and is valid.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::PathBuf;

use trident_host::config::parse;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/host-config")
        .join(format!("{name}.yaml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn basic_is_valid() {
    let hc = parse(&fixture("basic")).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(hc.storage.filesystems.len(), 2);
}

/// `verity`: the root on a verity device with upstream's rules kept
/// (a separate /boot, the /etc overlay's filesystem off the data device).
#[test]
fn verity_is_valid() {
    let hc = parse(&fixture("verity")).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(hc.storage.verity.len(), 1);
    assert_eq!(hc.storage.verity[0].name, "root");
}

/// `advanced`: verity over A/B pairs of mirrors, an encrypted array, and
/// the second ESP as a filesystem with no mount point (nothing written).
#[test]
fn advanced_is_valid() {
    let hc = parse(&fixture("advanced")).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(hc.storage.verity[0].name, "root");
    assert_eq!(
        hc.storage.encryption.unwrap().volumes[0].device_id,
        "home-md"
    );
    let unmounted: Vec<&str> = hc
        .storage
        .filesystems
        .iter()
        .filter(|f| f.mount_point.is_none())
        .map(|f| f.device_id.as_str())
        .collect();
    assert_eq!(unmounted, ["esp-r"]);
}

/// `encryption`: the LUKS2 volume under /srv, sealed to PCR 7 by name.
#[test]
fn encryption_is_valid() {
    let hc = parse(&fixture("encryption")).unwrap_or_else(|e| panic!("{}", e.report()));
    let encryption = hc.storage.encryption.unwrap();
    assert_eq!(encryption.volumes[0].device_name, "srv");
    assert_eq!(encryption.pcr_numbers(), [7]);
    assert_eq!(encryption.tpm2_pcrs_arg(), "7");
}

/// `simple`: users, netplan, an additional file and both kinds of health
/// check are applied, so upstream's second sample is valid as it stands.
#[test]
fn simple_is_valid() {
    let hc = parse(&fixture("simple")).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(hc.scripts.post_provision[0].arguments.len(), 3);
    assert_eq!(hc.os.users[0].name, "operator");
    assert!(hc.health.checks[1].systemd_services.is_some());
}

/// `raid` and `raid-mirrored`: software RAID is applied, so both of
/// upstream's RAID samples are valid as they stand, with every array, its
/// level, members and `syncTimeout` read.
#[test]
fn the_raid_samples_are_valid() {
    use trident_host::config::RaidLevel;
    let raid = parse(&fixture("raid")).unwrap_or_else(|e| panic!("{}", e.report()));
    let arrays = &raid.storage.raid.software;
    assert_eq!(arrays.len(), 1);
    assert_eq!(arrays[0].level, RaidLevel::Raid1);
    assert_eq!(arrays[0].devices.len(), 2);
    assert!(raid.storage.raid.sync_timeout.is_some());

    let mirrored = parse(&fixture("raid-mirrored")).unwrap_or_else(|e| panic!("{}", e.report()));
    let arrays = &mirrored.storage.raid.software;
    assert_eq!(arrays.len(), 3, "ESP, root and a data volume");
    assert!(arrays.iter().all(|a| a.level == RaidLevel::Raid1));
    let esp = &mirrored.storage.filesystems[0];
    assert_eq!(esp.mount_point.path(), "/boot/efi");
    assert!(
        arrays.iter().any(|a| a.id == esp.device_id),
        "the ESP is an array"
    );
    // Each mirror has one member per disk: no warning.
    assert_eq!(
        trident_host::config::warnings(&mirrored, &fixture("raid-mirrored")),
        Vec::<String>::new()
    );
}
