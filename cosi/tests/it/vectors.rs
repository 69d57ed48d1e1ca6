//! Our COSI metadata vectors (tests/vectors/README.md): every valid one is
//! accepted, every invalid one refused as invalid metadata naming the field
//! it breaks. Upstream's own vectors (tests/vectors/upstream/, verbatim):
//! accepted and refused as upstream says. `COSI_EXTRA_VECTORS=DIR` also
//! checks `DIR/valid/*.json` and `DIR/invalid/*.json` (any other vector set
//! laid out the same way).

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::{Path, PathBuf};

use trident_cosi::metadata::{BootloaderType, Metadata, MetadataError, OsArch};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/v1.2")
}

fn check(bytes: &[u8]) -> Result<Metadata, MetadataError> {
    let m = Metadata::from_json(bytes)?;
    m.validate()?;
    Ok(m)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(vector, the field its error names)`.
const INVALID: [(&str, &str); 23] = [
    ("no-primary-gpt-region", "disk.gptRegions[0]"),
    ("lba-size-2048", "disk.lbaSize"),
    ("part-type-not-uuid", "images[1].partType"),
    ("image-path-outside-images", "images[0].image.path"),
    ("os-arch-missing", "osArch"),
    ("os-packages-missing", "osPackages"),
    ("os-package-without-arch", "osPackages[1].arch"),
    (
        "partition-region-without-number",
        "disk.gptRegions[2].number",
    ),
    ("sha384-too-short", "images[1].image.sha384"),
    ("systemd-boot-without-config", "bootloader.systemdBoot"),
    ("bootloader-type-unknown", "bootloader.type"),
    ("version-1-0", "version"),
    ("bootloader-missing", "bootloader"),
    ("compression-missing", "compression"),
    ("systemd-boot-no-entries", "bootloader.systemdBoot.entries"),
    (
        "systemd-boot-entry-unknown-type",
        "bootloader.systemdBoot.entries[0].type",
    ),
    ("grub-with-systemd-boot-config", "bootloader.systemdBoot"),
    ("two-primary-gpt-regions", "disk.gptRegions[3]"),
    ("fs-uuid-empty", "images[0].fsUuid"),
    ("id-not-uuid", "id"),
    ("disk-type-mbr", "disk.type"),
    ("verity-roothash-not-hex", "images[1].verity.roothash"),
    (
        "verity-image-is-root-filesystem",
        "images[1].verity.image.path",
    ),
];

#[test]
fn every_invalid_vector_is_refused_naming_its_field() {
    let listed = std::fs::read_dir(dir().join("invalid")).unwrap().count();
    assert_eq!(listed, INVALID.len(), "a vector without an expectation");
    for (name, field) in INVALID {
        let path = dir().join("invalid").join(format!("{name}.json"));
        match check(&read(&path)) {
            Err(MetadataError::Invalid { location, reason }) => {
                assert_eq!(location, field, "{name}: {reason}");
            }
            other => panic!("{name}: expected invalid metadata at {field}, got {other:?}"),
        }
    }
}

#[test]
fn valid_vectors_are_accepted_with_typed_os_and_boot_data() {
    let grub = check(&read(&dir().join("valid/grub-two-partitions.json"))).unwrap();
    assert_eq!(grub.os_arch, OsArch::X86_64);
    assert_eq!(grub.bootloader.bootloader_type, BootloaderType::Grub);
    assert_eq!(grub.os_packages.len(), 3);
    assert_eq!(grub.os_packages[2].arch, "noarch");

    let sd = check(&read(&dir().join("valid/systemd-boot-uki-verity.json"))).unwrap();
    assert_eq!(sd.os_arch, OsArch::X86_64, "AMD64 is an alias");
    let entries = &sd.bootloader.systemd_boot.as_ref().unwrap().entries;
    assert_eq!(entries[0].path, "/boot/efi/EFI/Linux/edge-6.6.58.efi");
    assert_eq!(entries[0].kernel, "6.6.58-2.ex7");
    // Upper-case hashes are read as lower case, the form the reader compares.
    let hash = &sd.images[0].image.sha384;
    assert_eq!(*hash, hash.to_ascii_lowercase());
    assert!(sd.images[1].verity.is_some());
}

/// Every vector of a set laid out as `DIR/valid/*.json`, `DIR/invalid/*.json`
/// is accepted or refused as its directory says; returns how many.
fn assert_set_agrees(set: &Path) -> usize {
    let mut disagree = Vec::new();
    let mut total = 0;
    for (kind, want_ok) in [("valid", true), ("invalid", false)] {
        let mut entries: Vec<_> = std::fs::read_dir(set.join(kind))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            total += 1;
            let got = check(&read(&path));
            if got.is_ok() != want_ok {
                disagree.push(format!("{kind} {}: {got:?}", path.display()));
            }
        }
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    total
}

#[test]
fn upstreams_own_vectors_are_accepted_and_refused_as_upstream_says() {
    let upstream = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/upstream/v1.2");
    assert_eq!(assert_set_agrees(&upstream), 14, "2 valid and 12 invalid");
    // Every field of the valid ones is read as written.
    let grub = check(&read(&upstream.join("valid/grub-simple.json"))).unwrap();
    assert_eq!(grub.bootloader.bootloader_type, BootloaderType::Grub);
    assert!(grub.bootloader.systemd_boot.is_none());
    assert_eq!(grub.images[0].fs_uuid, "C3D4-250D");
    let uki = check(&read(&upstream.join("valid/verity-uki-systemd-boot.json"))).unwrap();
    let entry = &uki.bootloader.systemd_boot.as_ref().unwrap().entries[0];
    assert_eq!(entry.path, "/boot/efi/EFI/Linux/azurelinux-uki.efi");
    assert_eq!(entry.kernel, "6.6.78.1-3.azl3");
    assert_eq!(
        entry.cmdline,
        "root=/dev/disk/by-partuuid/88d2fa9b-7a32-450a-a9f8-aa9c3de79298 ro"
    );
    let verity = uki.images[1].verity.as_ref().unwrap();
    assert_eq!(
        verity.roothash,
        "646c82fa4c3f97e6cddc3996315c7f04b2beb721fb24fa38835136492a84eb19"
    );
}

#[test]
fn extra_vector_sets_agree_when_given() {
    let Some(extra) = std::env::var_os("COSI_EXTRA_VECTORS") else {
        return;
    };
    println!("{} vectors agree", assert_set_agrees(Path::new(&extra)));
}
