//! mkcosi's pack mode: given filesystem images become a COSI whose streamed
//! disk holds each image at its partition, with the metadata describing them.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::Path;

use trident_cosi::gpt::Gpt;
use trident_cosi::metadata::{
    Bootloader, BootloaderType, PART_TYPE_ESP, PART_TYPE_ROOT_X86_64, SystemdBoot,
    SystemdBootEntry, SystemdBootEntryType,
};
use trident_cosi::writer::{self, ImagePartition, ImagesSpec};
use trident_cosi::{CosiSource, ExpectedHash, NoProgress, SourceOptions, stream_to_target};
use uuid::Uuid;

use crate::common::*;

fn image(dir: &Path, name: &str, len: usize, byte: u8) -> std::path::PathBuf {
    let p = dir.join(name);
    // Not a whole number of MiB: the partition rounds up, the region does not.
    fs::write(
        &p,
        (0..len).map(|i| byte ^ (i % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    p
}

fn spec(dir: &Path) -> ImagesSpec {
    ImagesSpec {
        partitions: vec![
            ImagePartition {
                image: image(dir, "esp.img", (1 << 20) + 4096, 0x11),
                name: "esp".to_owned(),
                part_type: Uuid::parse_str(PART_TYPE_ESP).unwrap(),
                fs_type: "vfat".to_owned(),
                fs_uuid: "ABCD-1234".to_owned(),
                mount_point: "/boot/efi".to_owned(),
                size: None,
                verity: false,
            },
            ImagePartition {
                image: image(dir, "root.img", 3 << 20, 0x22),
                name: "root".to_owned(),
                part_type: Uuid::parse_str(PART_TYPE_ROOT_X86_64).unwrap(),
                fs_type: "ext4".to_owned(),
                fs_uuid: "6a1f2c3e-0000-4000-8000-000000000001".to_owned(),
                mount_point: "/".to_owned(),
                size: Some(4 << 20),
                verity: false,
            },
        ],
        disk_size: None,
        lba_size: 512,
        zstd_level: 1,
        os_release: "ID=debian\nIMAGE_VERSION=v1\n".to_owned(),
        bootloader: Bootloader {
            bootloader_type: BootloaderType::SystemdBoot,
            systemd_boot: Some(SystemdBoot {
                entries: vec![SystemdBootEntry {
                    entry_type: SystemdBootEntryType::Config,
                    path: "/boot/efi/loader/entries/os.conf".to_owned(),
                    kernel: "6.1.0-test".to_owned(),
                    cmdline: "root=UUID=6a1f2c3e-0000-4000-8000-000000000001 rw".to_owned(),
                }],
            }),
        },
    }
}

#[test]
fn packed_images_stream_to_their_partitions_and_match_the_plain_disk_image() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let out = writer::pack_images(&spec, &dir.path().join("os.cosi")).unwrap();
    // 1 MiB lead + 2 MiB ESP (rounded up) + 4 MiB root + 1 MiB backup GPT.
    assert_eq!(out.disk_size, 8 << 20);
    let plain = dir.path().join("plain.img");
    writer::write_images_disk(&spec, &plain).unwrap();

    let hash = ExpectedHash::parse(&out.metadata_sha384).unwrap();
    let mut src = CosiSource::open(&url(&out.path), &hash, &SourceOptions::default()).unwrap();
    let meta = src.metadata().clone();
    assert_eq!(meta.os_release, spec.os_release);
    let root = meta.filesystem_by_mount_point("/").unwrap();
    assert_eq!(root.fs_type, "ext4");
    assert_eq!(root.fs_uuid, spec.partitions[1].fs_uuid);
    assert_eq!(root.part_type, PART_TYPE_ROOT_X86_64);
    let esp = meta.filesystem_by_mount_point("/boot/efi").unwrap();
    assert_eq!(esp.fs_uuid, "ABCD-1234");
    assert_eq!(meta.bootloader, spec.bootloader);

    // Zeros, like the plain image: the stream writes only GPT and images.
    let t = dir.path().join("target.img");
    fs::write(&t, vec![0u8; out.disk_size as usize]).unwrap();
    stream_to_target(&mut src, &t, &mut NoProgress).unwrap();
    let disk = fs::read(&t).unwrap();
    assert_eq!(disk, fs::read(&plain).unwrap());
    let gpt = Gpt::parse_primary(&disk[..64 * 1024], 512).unwrap();
    for (p, entry) in spec.partitions.iter().zip(gpt.partitions()) {
        let img = fs::read(&p.image).unwrap();
        let at = entry.start_offset(512) as usize;
        assert_eq!(
            &disk[at..at + img.len()],
            &img[..],
            "partition {}",
            entry.number
        );
        assert_eq!(entry.name, p.name);
    }
    assert_eq!(gpt.partitions()[1].size_bytes(512), 4 << 20);
}

#[test]
fn the_same_images_pack_to_the_same_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path());
    let a = writer::pack_images(&spec, &dir.path().join("a.cosi")).unwrap();
    let b = writer::pack_images(&spec, &dir.path().join("b.cosi")).unwrap();
    assert_eq!(a.metadata_sha384, b.metadata_sha384);
}

#[test]
fn a_partition_smaller_than_its_image_is_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = spec(dir.path());
    spec.partitions[1].size = Some(1 << 20);
    let out = dir.path().join("os.cosi");
    let err = writer::pack_images(&spec, &out).unwrap_err();
    assert!(err.to_string().contains("cannot hold"), "{err}");
    assert!(!out.exists());
}
