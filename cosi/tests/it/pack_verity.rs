//! mkcosi's pack mode with `verity`: a real ext4 root gets its hash tree
//! from `veritysetup format`, packed as the next partition and named in
//! `images[].verity` (COSI 1.2's shape, as upstream's
//! verity-uki-systemd-boot vector has it). What streams out of the COSI is
//! checked by `veritysetup verify` (userspace, no kernel module): the tree
//! matches the data and the root hash, and a flipped data byte fails it.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use trident_cosi::gpt::Gpt;
use trident_cosi::writer::verity::PART_TYPE_ROOT_VERITY_X86_64;
use trident_cosi::writer::{self, ImagesSpec};
use trident_cosi::{
    CosiSource, ExpectedHash, NoProgress, RegionKind, SourceOptions, stream_to_target,
};
use uuid::Uuid;

use crate::common::*;

const ROOT_UUID: &str = "6a1f2c3e-0000-4000-8000-00000000feed";

fn ext4(dir: &Path) -> PathBuf {
    let p = dir.join("root.img");
    fs::write(&p, vec![0u8; 8 << 20]).unwrap();
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-U", ROOT_UUID, "-E", "root_owner=0:0"])
        .arg(&p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfs.ext4");
    p
}

fn spec(dir: &Path) -> ImagesSpec {
    let esp = dir.join("esp.img");
    fs::write(&esp, vec![0x5a; 1 << 20]).unwrap();
    let mut spec = ImagesSpec::esp_and_root(
        esp,
        ext4(dir),
        ROOT_UUID,
        "ID=debian\nIMAGE_VERSION=verity\n",
    );
    spec.partitions[1].verity = true;
    spec
}

fn verify(data: &Path, hash: &Path, roothash: &str) -> bool {
    Command::new("veritysetup")
        .arg("verify")
        .arg(data)
        .arg(hash)
        .arg(roothash)
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn a_verity_root_streams_with_a_hash_tree_that_veritysetup_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let out = writer::pack_images(&spec, &dir.path().join("os.cosi")).unwrap();
    // The tree's salt and UUID derive from the image: packing is repeatable.
    let again = writer::pack_images(&spec, &dir.path().join("again.cosi")).unwrap();
    assert_eq!(out.metadata_sha384, again.metadata_sha384);

    let hash = ExpectedHash::parse(&out.metadata_sha384).unwrap();
    let mut src = CosiSource::open(&url(&out.path), &hash, &SourceOptions::default()).unwrap();
    let meta = src.metadata().clone();
    let root = meta.filesystem_by_mount_point("/").unwrap();
    let verity = root.verity.as_ref().expect("the root names its hash tree");
    assert_eq!(verity.roothash.len(), 64);
    assert!(verity.roothash.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(
        meta.filesystem_by_mount_point("/boot/efi")
            .unwrap()
            .verity
            .is_none()
    );
    // The tree is a partition region of its own, not a filesystem.
    assert_eq!(meta.images.len(), 2);
    assert_eq!(
        meta.verity_hash_of(&verity.image.path).unwrap().mount_point,
        "/"
    );

    // The reader tags the tree's region with the filesystem it protects.
    let mut tagged = Vec::new();
    while let Some(region) = src.next_region().unwrap() {
        let info = region.info().clone();
        if let (RegionKind::Partition { number }, Some(mp)) = (info.kind, &info.verity_of) {
            tagged.push((number, mp.clone(), info.mount_point.clone()));
        }
        region.skip().unwrap();
    }
    assert_eq!(tagged, vec![(3, "/".to_owned(), None)]);

    // Streamed onto a disk, partitions 2 and 3 verify against the root hash.
    let mut src = CosiSource::open(&url(&out.path), &hash, &SourceOptions::default()).unwrap();
    let t = target(dir.path(), out.disk_size);
    stream_to_target(&mut src, &t, &mut NoProgress).unwrap();
    let disk = fs::read(&t).unwrap();
    let gpt = Gpt::parse_primary(&disk[..64 * 1024], 512).unwrap();
    let hash_entry = &gpt.partitions()[2];
    assert_eq!(
        hash_entry.type_guid,
        Uuid::parse_str(PART_TYPE_ROOT_VERITY_X86_64).unwrap()
    );
    assert_eq!(hash_entry.name, "root-hash");
    let extract = |n: usize, name: &str| {
        let e = &gpt.partitions()[n];
        let at = e.start_offset(512) as usize;
        let p = dir.path().join(name);
        fs::write(&p, &disk[at..at + e.size_bytes(512) as usize]).unwrap();
        p
    };
    let data = extract(1, "data.part");
    let tree = extract(2, "hash.part");
    assert!(
        verify(&data, &tree, &verity.roothash),
        "the packed tree verifies"
    );

    // One byte of the data changed: the same tree and root hash refuse it.
    let mut bytes = fs::read(&data).unwrap();
    bytes[4 << 20] ^= 0xff;
    fs::write(&data, bytes).unwrap();
    assert!(
        !verify(&data, &tree, &verity.roothash),
        "a flipped byte fails"
    );
}

#[test]
fn verity_on_a_filesystem_other_than_root_or_usr_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path());
    spec.partitions[0].verity = true;
    let out = dir.path().join("os.cosi");
    let err = writer::pack_images(&spec, &out).unwrap_err();
    assert!(err.to_string().contains("\"/boot/efi\""), "{err}");
    assert!(!out.exists());
}
