//! The files of a FAT ESP, read from the host with mtools (`mdir -/ -b`),
//! to check that servicing left exactly the files it should.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Every file (not directory) of the FAT filesystem at byte `offset` of
/// `image`, as `EFI/BOOT/BOOTX64.EFI`, upper-cased (FAT compares names
/// without case).
pub fn files(image: &Path, offset: u64) -> BTreeSet<String> {
    let out = Command::new("mdir")
        .args(["-/", "-b", "-i"])
        .arg(format!("{}@@{offset}", image.display()))
        .arg("::")
        .env("MTOOLS_SKIP_CHECK", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "mdir: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.ends_with('/'))
        .filter_map(|l| l.strip_prefix("::/"))
        .map(str::to_ascii_uppercase)
        .collect()
}
