//! The verity kernel arguments (upstream's osmodifier's, corruption
//! options mapped as it maps them) and the root hash of a real UKI: a PE
//! image linked with binutils, its `.cmdline` added with objcopy as
//! build-image.sh (and ukify) add it.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::path::Path;
use std::process::Command;

use trident_host::Subkind;
use trident_host::config::VerityCorruptionOption;

use super::pe;
use super::verity::{VerityRoot, check_uki_root_hash, is_verity_arg, kernel_args};

const HASH: &str = "646c82fa4c3f97e6cddc3996315c7f04b2beb721fb24fa38835136492a84eb19";

#[test]
fn the_kernel_args_name_the_root_hash_both_devices_and_the_corruption_option() {
    let mut root = VerityRoot {
        root_hash: HASH.to_owned(),
        data: "PARTUUID=aaaa".to_owned(),
        hash: "PARTUUID=bbbb".to_owned(),
        corruption: VerityCorruptionOption::IoError,
    };
    assert_eq!(
        kernel_args(&root),
        [
            "rd.systemd.verity=1".to_owned(),
            format!("roothash={HASH}"),
            "systemd.verity_root_data=PARTUUID=aaaa".to_owned(),
            "systemd.verity_root_hash=PARTUUID=bbbb".to_owned(),
            "systemd.verity_root_options=".to_owned(),
        ]
    );
    for (option, arg) in [
        (VerityCorruptionOption::Ignore, "ignore-corruption"),
        (VerityCorruptionOption::Panic, "panic-on-corruption"),
        (VerityCorruptionOption::Restart, "restart-on-corruption"),
    ] {
        root.corruption = option;
        assert_eq!(
            kernel_args(&root)[4],
            format!("systemd.verity_root_options={arg}")
        );
    }
    assert!(kernel_args(&root).iter().all(|a| is_verity_arg(a)));
    assert!(!is_verity_arg("root=/dev/mapper/root"));
}

/// A PE image (binutils: as, ld, objcopy) with `cmdline` as its
/// `.cmdline` section, or none.
fn uki(dir: &Path, cmdline: Option<&str>) -> Vec<u8> {
    let run = |cmd: &mut Command| assert!(cmd.status().unwrap().success(), "{cmd:?}");
    std::fs::write(dir.join("stub.s"), ".text\n.globl _start\n_start: ret\n").unwrap();
    run(Command::new("as")
        .arg("-o")
        .arg(dir.join("stub.o"))
        .arg(dir.join("stub.s")));
    run(Command::new("ld")
        .arg("-o")
        .arg(dir.join("stub.elf"))
        .arg(dir.join("stub.o")));
    run(Command::new("objcopy")
        .arg("--target=efi-app-x86_64")
        .arg(dir.join("stub.elf"))
        .arg(dir.join("stub.efi")));
    let Some(cmdline) = cmdline else {
        return std::fs::read(dir.join("stub.efi")).unwrap();
    };
    std::fs::write(dir.join("cmdline"), cmdline).unwrap();
    run(Command::new("objcopy")
        .arg(format!(
            "--add-section=.cmdline={}",
            dir.join("cmdline").display()
        ))
        .args(["--change-section-vma", ".cmdline=0x30000"])
        .arg(dir.join("stub.efi"))
        .arg(dir.join("uki.efi")));
    std::fs::read(dir.join("uki.efi")).unwrap()
}

#[test]
fn a_uki_is_accepted_only_with_the_metadatas_root_hash_in_its_cmdline() {
    let dir = tempfile::tempdir().unwrap();
    let good = uki(
        dir.path(),
        Some(&format!(
            "root=/dev/mapper/root ro roothash={HASH} console=ttyS0"
        )),
    );
    assert_eq!(
        pe::section(&good, ".cmdline").unwrap(),
        format!("root=/dev/mapper/root ro roothash={HASH} console=ttyS0").as_bytes()
    );
    check_uki_root_hash(&good, HASH).unwrap();
    check_uki_root_hash(&good, &HASH.to_ascii_uppercase()).unwrap();

    let other = HASH.replace("646c", "0000");
    let err = check_uki_root_hash(&good, &other).unwrap_err();
    assert_eq!(err.subkind(), Subkind::InvalidImage);
    assert!(
        err.message().contains(&format!("roothash={HASH}")),
        "{}",
        err.message()
    );

    let none = uki(dir.path(), Some("root=/dev/mapper/root ro"));
    let err = check_uki_root_hash(&none, HASH).unwrap_err();
    assert!(err.message().contains("no roothash="), "{}", err.message());

    let bare = uki(dir.path(), None);
    assert!(pe::section(&bare, ".text").is_some());
    let err = check_uki_root_hash(&bare, HASH).unwrap_err();
    assert!(err.message().contains("no .cmdline"), "{}", err.message());
}

#[test]
fn what_is_not_pe_has_no_sections() {
    assert!(pe::section(b"", ".cmdline").is_none());
    assert!(pe::section(b"MZ", ".cmdline").is_none());
    let mut truncated = vec![0u8; 0x40];
    truncated[..2].copy_from_slice(b"MZ");
    truncated[0x3c] = 0xff;
    assert!(pe::section(&truncated, ".cmdline").is_none());
}
