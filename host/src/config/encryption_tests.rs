//! `storage.encryption`: upstream's rules, each refusal naming its key.

use super::*;
use crate::error::{Category, Subkind};

/// A valid configuration with an encrypted /srv; `encryption` replaces
/// its `storage.encryption` body.
fn with_encryption(encryption: &str) -> String {
    format!(
        r#"image:
  url: file:///srv/images/os.cosi
  sha384: ignored
storage:
  disks:
  - id: os
    device: /tmp/disk.img
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 64M }}
    - {{ id: root, type: root, size: 2G }}
    - {{ id: secret, type: linux-generic, size: 256M }}
  encryption:
{encryption}
  filesystems:
  - {{ deviceId: esp, mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: / }}
  - {{ deviceId: srv, source: new, type: ext4, mountPoint: /srv }}
"#
    )
}

const VOLUMES: &str = "    volumes:\n    - { id: srv, deviceName: srv, deviceId: secret }\n";

fn refusal(encryption: &str) -> crate::error::TridentError {
    match parse(&with_encryption(encryption)) {
        Ok(_) => panic!("accepted:\n{encryption}"),
        Err(e) => e,
    }
}

#[test]
fn pcrs_are_taken_by_number_name_or_upstream_variant() {
    for pcrs in [
        "[7]",
        "[secure-boot-policy]",
        "[Pcr7]",
        "[7, secure-boot-policy]",
    ] {
        let hc = parse(&with_encryption(&format!("{VOLUMES}    pcrs: {pcrs}")))
            .unwrap_or_else(|e| panic!("{pcrs}: {}", e.report()));
        let encryption = hc.storage.encryption.unwrap();
        assert_eq!(encryption.pcr_numbers(), [7], "{pcrs}");
        assert_eq!(encryption.tpm2_pcrs_arg(), "7", "{pcrs}");
    }
}

#[test]
fn every_pcr_name_maps_to_its_number() {
    for (number, name) in PCR_NAMES {
        assert_eq!(Pcr::Name(name.to_owned()).number(), Some(number), "{name}");
    }
    assert_eq!(Pcr::Name("kernel-boot".into()).number(), Some(11));
    assert_eq!(Pcr::Name("boot-loader-code".into()).number(), Some(4));
    assert_eq!(Pcr::Number(24).number(), None);
    assert_eq!(Pcr::Name("Pcr24".into()).number(), None);
}

#[test]
fn a_pcr_upstream_does_not_seal_to_is_invalid_input_naming_its_index() {
    let err = refusal(&format!("{VOLUMES}    pcrs: [7, 0]"));
    assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration);
    assert!(
        err.message().contains(
            "'storage.encryption.pcrs[1]': PCR 0 is not supported: only PCRs 4, 7 and 11"
        ),
        "{}",
        err.message()
    );
    let err = refusal(&format!("{VOLUMES}    pcrs: [firmware-magic]"));
    assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration);
    assert!(
        err.message()
            .contains("'storage.encryption.pcrs[0]': 'firmware-magic' is not a PCR"),
        "{}",
        err.message()
    );
}

#[test]
fn pcrs_4_and_11_need_pcrlock_and_are_unsupported_naming_the_key() {
    for (pcrs, key, number) in [
        ("[boot-loader-code]", "pcrs[0]", 4),
        ("[7, kernel-boot]", "pcrs[1]", 11),
    ] {
        let err = refusal(&format!("{VOLUMES}    pcrs: {pcrs}"));
        assert_eq!(err.category(), Category::UnsupportedConfiguration, "{pcrs}");
        assert!(
            err.message().contains(&format!(
                "'storage.encryption.{key}': sealing to PCR {number}"
            )),
            "{}",
            err.message()
        );
    }
}

#[test]
fn volumes_and_pcrs_are_required() {
    let yaml = with_encryption("    volumes: []\n    pcrs: [7]").replace(
        "  - { deviceId: srv, source: new, type: ext4, mountPoint: /srv }\n",
        "",
    );
    let err = match parse(&yaml) {
        Ok(_) => panic!("no volumes accepted"),
        Err(e) => e,
    };
    assert!(
        err.message()
            .contains("'storage.encryption.volumes': at least one encrypted volume"),
        "{}",
        err.message()
    );
    let err = refusal(&format!("{VOLUMES}    pcrs: []"));
    assert!(
        err.message()
            .contains("'storage.encryption.pcrs': at least one PCR"),
        "{}",
        err.message()
    );
}

#[test]
fn the_recovery_key_url_is_a_file_url_with_an_absolute_path() {
    let ok = parse(&with_encryption(&format!(
        "{VOLUMES}    pcrs: [7]\n    recoveryKeyUrl: file:///root/recovery.key"
    )))
    .unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(
        ok.storage.encryption.unwrap().recovery_key_path(),
        Some("/root/recovery.key")
    );
    for (url, says) in [
        (
            "https://keys.example.test/k",
            "has scheme 'https': only file:// URLs",
        ),
        ("file://relative/key", "must name an absolute path"),
    ] {
        let err = refusal(&format!(
            "{VOLUMES}    pcrs: [7]\n    recoveryKeyUrl: {url}"
        ));
        assert_eq!(err.subkind(), Subkind::InvalidHostConfiguration, "{url}");
        assert!(
            err.message().contains(&format!(
                "'storage.encryption.recoveryKeyUrl': '{url}' {says}"
            )),
            "{}",
            err.message()
        );
    }
}

#[test]
fn clearing_the_tpm_is_unsupported_naming_the_key() {
    let err = refusal(&format!(
        "{VOLUMES}    pcrs: [7]\n    clearTpmOnInstall: true"
    ));
    assert_eq!(err.category(), Category::UnsupportedConfiguration);
    assert!(
        err.message()
            .contains("'storage.encryption.clearTpmOnInstall'"),
        "{}",
        err.message()
    );
    // false is upstream's default: nothing to refuse.
    parse(&with_encryption(&format!(
        "{VOLUMES}    pcrs: [7]\n    clearTpmOnInstall: false"
    )))
    .unwrap_or_else(|e| panic!("{}", e.report()));
}

#[test]
fn the_graph_refuses_encrypting_a_root_partition() {
    let yaml = with_encryption(&format!("{VOLUMES}    pcrs: [7]"))
        .replace("deviceId: secret }", "deviceId: root }")
        .replace(
            "{ deviceId: root, mountPoint: / }",
            "{ deviceId: secret, mountPoint: / }",
        );
    let err = match parse(&yaml) {
        Ok(_) => panic!("an encrypted root partition was accepted"),
        Err(e) => e,
    };
    assert_eq!(err.category(), Category::InvalidInput);
    assert!(
        err.message().contains("storage.encryption.volumes[0]"),
        "{}",
        err.message()
    );
}

/// The Host Status keeps the configuration as serialized: the commit and
/// A/B updates build the installed storage (encrypted volumes included)
/// from it.
#[test]
fn the_encryption_section_survives_the_host_status_round_trip() {
    let hc = parse(&with_encryption(&format!(
        "{VOLUMES}    pcrs: [secure-boot-policy]\n    recoveryKeyUrl: file:///root/recovery.key"
    )))
    .unwrap();
    let again = parse(&to_yaml(&hc).unwrap()).unwrap_or_else(|e| panic!("{}", e.report()));
    assert_eq!(again.storage.encryption, hc.storage.encryption);
    assert!(again.storage.encryption.is_some());
}
