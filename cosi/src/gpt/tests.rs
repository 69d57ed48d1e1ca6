use std::os::unix::fs::FileExt;

use uuid::Uuid;

use super::*;
use crate::metadata::{PART_TYPE_ESP, PART_TYPE_LINUX_DATA};

fn specs() -> Vec<PartitionSpec> {
    vec![
        PartitionSpec {
            type_guid: Uuid::parse_str(PART_TYPE_ESP).unwrap(),
            unique_guid: Uuid::from_u128(1),
            name: "esp".into(),
            size: Some(8 << 20),
            attributes: 0,
        },
        PartitionSpec {
            type_guid: Uuid::parse_str(PART_TYPE_LINUX_DATA).unwrap(),
            unique_guid: Uuid::from_u128(2),
            name: "root-a".into(),
            size: None,
            attributes: 0,
        },
    ]
}

fn disk_with(gpt: &Gpt, size: u64) -> Vec<u8> {
    let mut disk = vec![0u8; size as usize];
    let primary = gpt.primary_bytes();
    disk[..primary.len()].copy_from_slice(&primary);
    let (off, backup) = gpt.backup_bytes();
    disk[off as usize..off as usize + backup.len()].copy_from_slice(&backup);
    disk
}

#[test]
fn built_gpt_round_trips_through_parse_for_both_lba_sizes() {
    for lba in [512u64, 4096] {
        let size = 64 << 20;
        let gpt = Gpt::build(size, lba, Uuid::from_u128(9), &specs()).unwrap();
        let parsed = Gpt::parse_primary(&gpt.primary_bytes(), lba).unwrap();
        assert_eq!(parsed, gpt);
        let esp = parsed.partition(1).unwrap();
        assert_eq!(esp.start_offset(lba), 1 << 20);
        assert_eq!(esp.size_bytes(lba), 8 << 20);
        assert_eq!(esp.name, "esp");
        let root = parsed.partition(2).unwrap();
        assert_eq!(root.start_offset(lba), 9 << 20);
        assert_eq!(root.last_lba, parsed.last_usable_lba);
        let disk = disk_with(&gpt, size);
        gpt.check_backup(&disk).unwrap();
    }
}

#[test]
fn primary_region_is_34_lbas_for_512_byte_sectors() {
    let gpt = Gpt::build(64 << 20, 512, Uuid::nil(), &specs()).unwrap();
    assert_eq!(gpt.primary_bytes().len(), 34 * 512);
}

#[test]
fn corrupt_header_or_entries_fail_crc_checks() {
    let gpt = Gpt::build(64 << 20, 512, Uuid::nil(), &specs()).unwrap();
    let mut bytes = gpt.primary_bytes();
    bytes[512 + 40] ^= 1;
    assert!(matches!(
        Gpt::parse_primary(&bytes, 512),
        Err(GptError::HeaderCrc { .. })
    ));
    let mut bytes = gpt.primary_bytes();
    bytes[1024 + 100] ^= 1;
    assert!(matches!(
        Gpt::parse_primary(&bytes, 512),
        Err(GptError::EntriesCrc { .. })
    ));
    let mut bytes = gpt.primary_bytes();
    bytes[510] = 0;
    assert!(matches!(
        Gpt::parse_primary(&bytes, 512),
        Err(GptError::Mbr(_))
    ));
}

#[test]
fn relocating_to_a_larger_disk_moves_backup_and_keeps_partitions() {
    let gpt = Gpt::build(32 << 20, 512, Uuid::nil(), &specs()).unwrap();
    let bigger = gpt.for_disk_size(48 << 20).unwrap();
    assert_eq!(bigger.partitions(), gpt.partitions());
    assert_eq!(bigger.alternate_lba, (48 << 20) / 512 - 1);
    let disk = disk_with(&bigger, 48 << 20);
    bigger.check_backup(&disk).unwrap();
    Gpt::parse_primary(&disk, 512).unwrap();
    assert!(matches!(
        gpt.for_disk_size(16 << 20),
        Err(GptError::DiskTooSmall { .. })
    ));
}

#[test]
fn partitions_that_do_not_fit_are_rejected() {
    let mut s = specs();
    s[0].size = Some(1 << 30);
    assert!(matches!(
        Gpt::build(64 << 20, 512, Uuid::nil(), &s),
        Err(GptError::DiskTooSmall { .. })
    ));
}

#[test]
fn read_and_verify_accepts_a_written_disk_and_rejects_a_stale_backup() {
    let size = 16u64 << 20;
    let gpt = Gpt::build(size, 512, Uuid::from_u128(3), &specs()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.img");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    file.set_len(size).unwrap();
    gpt.write_primary(&file).unwrap();
    gpt.write_backup(&file).unwrap();
    assert_eq!(Gpt::read_and_verify(&file, 512, size).unwrap(), gpt);
    file.write_all_at(&[1], size - 512 + 40).unwrap();
    assert!(Gpt::read_and_verify(&file, 512, size).is_err());
}

#[test]
fn a_layout_around_kept_partitions_keeps_them_and_fills_the_free_runs() {
    let lba = 512u64;
    let size = 64u64 << 20;
    // An old table: a 4 MiB partition at 20 MiB, entry 3.
    let kept = GptEntry {
        number: 3,
        type_guid: Uuid::parse_str(PART_TYPE_LINUX_DATA).unwrap(),
        unique_guid: Uuid::from_u128(7),
        first_lba: (20 << 20) / lba,
        last_lba: (24 << 20) / lba - 1,
        attributes: 1 << 60,
        name: "data".into(),
    };
    let mut parts = specs();
    // 8 MiB fits before the kept partition; 16 MiB does not fit in the
    // 11 MiB left there, so it goes after it; the rest takes the larger run.
    parts.insert(
        1,
        PartitionSpec {
            type_guid: Uuid::parse_str(PART_TYPE_LINUX_DATA).unwrap(),
            unique_guid: Uuid::from_u128(4),
            name: "big".into(),
            size: Some(16 << 20),
            attributes: 0,
        },
    );
    let (gpt, numbers) = Gpt::build_around(
        size,
        lba,
        Uuid::from_u128(9),
        std::slice::from_ref(&kept),
        &parts,
    )
    .unwrap();
    assert_eq!(numbers, vec![1, 2, 4]);
    assert_eq!(gpt.partition(3), Some(&kept));
    let esp = gpt.partition(1).unwrap();
    assert_eq!(esp.start_offset(lba), 1 << 20);
    let big = gpt.partition(2).unwrap();
    assert_eq!(big.start_offset(lba), 24 << 20);
    let rest = gpt.partition(4).unwrap();
    assert_eq!(rest.start_offset(lba), 40 << 20);
    assert_eq!(rest.last_lba, gpt.last_usable_lba);
    let parsed = Gpt::parse_primary(&gpt.primary_bytes(), lba).unwrap();
    assert_eq!(parsed, gpt);
}

#[test]
fn kept_partitions_that_leave_no_room_are_rejected() {
    let kept = GptEntry {
        number: 1,
        type_guid: Uuid::parse_str(PART_TYPE_LINUX_DATA).unwrap(),
        unique_guid: Uuid::from_u128(7),
        first_lba: 2048,
        last_lba: (60 << 20) / 512,
        attributes: 0,
        name: "data".into(),
    };
    assert!(matches!(
        Gpt::build_around(64 << 20, 512, Uuid::nil(), &[kept], &specs()),
        Err(GptError::DiskTooSmall { .. })
    ));
}
