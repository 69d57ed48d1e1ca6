use super::*;
use crate::error::{Subkind, TridentError};

const ROW: &str = r"spec:
  storage:
    disks:
    - id: os
      device: /dev/sda
      partitions:
      - id: esp
        type: esp
        size: 512M
      - id: root-a
        type: root
        size: 4G
      - id: root-b
        type: root
        size: 4G
    abUpdate:
      volumePairs:
      - id: root
        volumeAId: root-a
        volumeBId: root-b
    filesystems:
    - deviceId: esp
      mountPoint: /boot/efi
    - deviceId: root
      mountPoint: /
  internalParams:
    injectedHostStatus: true
servicingState: provisioned
partitionPaths:
  esp: /dev/disk/by-partuuid/11111111-1111-1111-1111-111111111111
abActiveVolume: volume-a
diskUuids:
  os: 22222222-2222-2222-2222-222222222222
installIndex: 3
tridentVersion: 0.27.0
";

#[test]
fn upstreams_fields_are_read_into_ours() {
    let decoded = decode(ROW).unwrap();
    let s = &decoded.status;
    assert_eq!(s.servicing_state, ServicingState::Provisioned);
    assert_eq!(s.ab_active_volume, Some(AbVolume::VolumeA));
    assert_eq!(s.install_index, 3);
    assert_eq!(s.trident_version, "0.27.0");
    assert_eq!(s.disk_uuids["os"], "22222222-2222-2222-2222-222222222222");
    assert!(s.partition_paths["esp"].starts_with("/dev/disk/by-partuuid/"));
    assert_eq!(
        s.spec.as_ref().unwrap().storage.disks[0].partitions.len(),
        3
    );
    assert!(s.spec_old.is_none() && s.last_error.is_none() && !s.is_management_os);
    assert!(decoded.kept.is_empty(), "{:?}", decoded.kept);
}

#[test]
fn an_unchanged_configuration_is_written_back_as_upstream_wrote_it() {
    let decoded = decode(ROW).unwrap();
    let mut next = decoded.status.clone();
    next.servicing_state = ServicingState::AbUpdateStaged;
    next.spec_old = next.spec.clone();
    let text = encode(&next, Some(&decoded.document), "0.27.0+tridentd.0.1.0").unwrap();
    let written = decode(&text).unwrap();
    // internalParams is not in our model, but the configuration is the
    // same: both keep upstream's text.
    assert_eq!(written.document["spec"], decoded.document["spec"]);
    assert_eq!(written.document["specOld"], decoded.document["spec"]);
    assert_eq!(written.document["servicingState"], "ab-update-staged");
    assert_eq!(written.trident_version, "0.27.0+tridentd.0.1.0");
    assert_eq!(written.document["installIndex"], 3);
}

#[test]
fn what_a_newer_upstream_adds_is_kept_with_a_note_and_written_back() {
    let newer = format!("{ROW}futureField:\n  nested: [1, 2]\n")
        .replace(
            "  internalParams:",
            "  futureSection:\n    on: true\n  internalParams:",
        )
        .replace(
            "      - id: esp\n",
            "      - id: esp\n        futureKey: x\n",
        );
    let decoded = decode(&newer).unwrap();
    assert_eq!(
        decoded.kept,
        [
            "`spec.futureSection`",
            "`spec.storage.disks[0].partitions[0].futureKey`",
            "`futureField`"
        ],
        "{:?}",
        decoded.kept
    );
    let mut next = decoded.status.clone();
    next.servicing_state = ServicingState::AbUpdateStaged;
    let text = encode(&next, Some(&decoded.document), "0.27.0+tridentd").unwrap();
    let written = decode(&text).unwrap();
    assert_eq!(
        written.document["futureField"],
        decoded.document["futureField"]
    );
    assert_eq!(written.document["spec"], decoded.document["spec"]);
    assert_eq!(written.kept, decoded.kept);
}

#[test]
fn a_new_configuration_is_ours_and_a_new_last_error_upstreams_shape() {
    let decoded = decode(ROW).unwrap();
    let mut next = decoded.status.clone();
    next.spec_old = next.spec.clone();
    next.spec.as_mut().unwrap().storage.disks[0].device = "/dev/sdb".into();
    next.last_error = Some(TridentError::new(Subkind::DatastoreQuery, "broken").record());
    let text = encode(&next, Some(&decoded.document), "0.27.0+tridentd").unwrap();
    let written = decode(&text).unwrap();
    assert_eq!(
        written.document["spec"]["storage"]["disks"][0]["device"],
        "/dev/sdb"
    );
    assert!(written.document["spec"].get("internalParams").is_none());
    assert_eq!(written.document["specOld"], decoded.document["spec"]);
    let error = &written.document["lastError"];
    for key in ["message", "error", "category", "location", "cause"] {
        assert!(error.get(key).is_some(), "{key}: {text}");
    }
    assert_eq!(written.status.last_error, next.last_error);
}

#[test]
fn upstreams_last_error_with_yaml_tags_is_read_and_kept() {
    let row = ROW.replace(
        "servicingState: provisioned\n",
        "servicingState: provisioned\nlastError:\n  message: Failed to write\n  error: !datastore\n    inner: write-to-datastore\n  category: servicing\n  location: crates/trident/src/datastore.rs:158\n  cause: null\n",
    );
    let decoded = decode(&row).unwrap();
    let error = decoded.status.last_error.as_ref().unwrap();
    assert_eq!(error.message, "Failed to write");
    assert_eq!(error.category, crate::error::Category::Servicing);
    let text = encode(&decoded.status, Some(&decoded.document), "0.27.0+tridentd").unwrap();
    assert_eq!(
        decode(&text).unwrap().document["lastError"],
        decoded.document["lastError"]
    );
}

#[test]
fn a_row_that_is_not_yaml_or_not_a_host_status_is_named_as_such() {
    for (text, expect) in [
        ("spec: [unclosed", "not valid YAML"),
        ("- a\n- list\n", "not a Host Status: a YAML sequence"),
        (
            "serdeyaml: but-not-host-status\n",
            "missing field `servicingState`",
        ),
        (
            "spec: {}\nservicingState: exploded\ninstallIndex: 0\n",
            "field `servicingState`",
        ),
        (
            "spec: {}\nservicingState: provisioned\n",
            "missing field `installIndex`",
        ),
        (
            "spec: {storage: {disks: 3}}\nservicingState: provisioned\ninstallIndex: 0\n",
            "field `spec.storage.disks`",
        ),
    ] {
        let error = decode(text).unwrap_err().to_string();
        assert!(error.contains(expect), "{text:?}: {error}");
    }
}

#[test]
fn every_state_and_the_defaults_round_trip() {
    for state in [
        ServicingState::NotProvisioned,
        ServicingState::CleanInstallStaged,
        ServicingState::CleanInstallFinalized,
        ServicingState::AbUpdateStaged,
        ServicingState::AbUpdateFinalized,
        ServicingState::AbUpdateHealthCheckFailed,
        ServicingState::ManualRollbackAbStaged,
        ServicingState::ManualRollbackAbFinalized,
        ServicingState::RuntimeUpdateStaged,
        ServicingState::ManualRollbackRuntimeStaged,
        ServicingState::Provisioned,
    ] {
        let status = HostStatus {
            servicing_state: state,
            ..HostStatus::default()
        };
        let text = encode(&status, None, "0.27.0+tridentd").unwrap();
        assert!(text.contains("spec: {}"), "{text}");
        let back = decode(&text).unwrap().status;
        assert_eq!(back.servicing_state, state);
        assert!(back.spec.is_none());
        // Left out when empty, as upstream does.
        for absent in [
            "specOld",
            "lastError",
            "partitionPaths",
            "abActiveVolume",
            "diskUuids",
            "isManagementOs",
        ] {
            assert!(!text.contains(absent), "{absent}: {text}");
        }
    }
}

#[test]
fn the_stamp_is_semver_with_our_version_as_build() {
    assert_eq!(stamp("0.1.0"), "0.27.0+tridentd.0.1.0");
    assert_eq!(stamp("0.2.0-rc.1"), "0.27.0+tridentd.0.2.0-rc.1");
    assert_eq!(stamp(""), "0.27.0+tridentd");
    assert!(crate::datastore::rollback_chain::version_allows_rollback(
        &stamp("0.1.0")
    ));
}
