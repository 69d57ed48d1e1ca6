//! StreamDisk core over disk-image files: round trips and failure modes.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;

use trident_cosi::gpt::Gpt;
use trident_cosi::writer::Corruption;
use trident_cosi::{
    CosiError, CosiSource, ErrorClass, ExpectedHash, NoProgress, Progress, RegionInfo,
    SourceOptions, stream_to_target,
};

use crate::common::*;

fn open(f: &Fixture) -> CosiSource {
    let hash = ExpectedHash::parse(&f.cosi.metadata_sha384).unwrap();
    CosiSource::open(&url(&f.cosi.path), &hash, &SourceOptions::default()).unwrap()
}

fn stream(
    f: &Fixture,
    size: u64,
) -> (
    std::path::PathBuf,
    Result<trident_cosi::StreamReport, CosiError>,
) {
    let t = target(f.dir.path(), size);
    let mut src = match CosiSource::open(
        &url(&f.cosi.path),
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    ) {
        Ok(s) => s,
        Err(e) => return (t, Err(e)),
    };
    let r = stream_to_target(&mut src, &t, &mut NoProgress);
    (t, r)
}

#[test]
fn streamed_disk_equals_the_source_disk_image_byte_for_byte() {
    for lba in [512, 4096] {
        let mut s = spec(1);
        s.lba_size = lba;
        let f = fixture(&s);
        let t = target(f.dir.path(), DISK);
        let mut src = open(&f);
        let report = stream_to_target(&mut src, &t, &mut NoProgress).unwrap();
        assert_eq!(
            report.image_hash,
            format!("sha384:{}", f.cosi.metadata_sha384)
        );
        assert_eq!(report.regions.len(), 3);
        assert_same_disk(&f, &t);
        let got = fs::read(&t).unwrap();
        let gpt = Gpt::parse_primary(&got, lba).unwrap();
        gpt.check_backup(&got).unwrap();
    }
}

#[test]
fn larger_target_gets_valid_primary_and_backup_gpt_at_its_end() {
    let f = fixture(&spec(1));
    let size = DISK + (8 << 20);
    let t = target(f.dir.path(), size);
    stream_to_target(&mut open(&f), &t, &mut NoProgress).unwrap();
    let got = fs::read(&t).unwrap();
    let expected = fs::read(&f.expected_disk).unwrap();
    let gpt = Gpt::parse_primary(&got, 512).unwrap();
    assert_eq!(gpt.alternate_lba, size / 512 - 1);
    gpt.check_backup(&got).unwrap();
    for region in f.cosi.regions.iter().filter(|r| r.number.is_some()) {
        let range = region.offset as usize..(region.offset + region.uncompressed_size) as usize;
        assert!(
            got[range.clone()] == expected[range],
            "{} differs",
            region.path
        );
    }
}

#[derive(Debug, Default)]
struct Counting {
    started: Vec<(String, u64)>,
    bytes: u64,
    done: usize,
}

impl Progress for Counting {
    fn on_region_start(&mut self, region: &RegionInfo, total: u64) {
        self.started.push((region.name(), total));
    }
    fn on_bytes(&mut self, n: u64) {
        self.bytes += n;
    }
    fn on_region_done(&mut self, _: &RegionInfo) {
        self.done += 1;
    }
}

#[test]
fn progress_reports_every_region_and_every_byte() {
    let f = fixture(&spec(1));
    let t = target(f.dir.path(), DISK);
    let mut p = Counting::default();
    stream_to_target(&mut open(&f), &t, &mut p).unwrap();
    let total: u64 = f.cosi.regions.iter().map(|r| r.uncompressed_size).sum();
    assert_eq!(p.bytes, total);
    assert_eq!(p.done, 3);
    let names: Vec<_> = p.started.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["primary-gpt", "partition-1", "partition-2"]);
}

#[test]
fn wrong_metadata_hash_fails_at_open_and_writes_nothing() {
    let f = fixture(&spec(1));
    let t = target(f.dir.path(), DISK);
    let wrong = ExpectedHash::parse(&"ab".repeat(48)).unwrap();
    let err = CosiSource::open(&url(&f.cosi.path), &wrong, &SourceOptions::default()).unwrap_err();
    assert!(
        matches!(&err, CosiError::MetadataHashMismatch { actual, .. } if *actual == f.cosi.metadata_sha384)
    );
    assert_eq!(err.class(), ErrorClass::InvalidImage);
    assert!(untouched(&t));
}

#[test]
fn flipped_byte_in_a_partition_region_is_a_hash_mismatch_naming_the_region() {
    let f = corrupt(Corruption::FlipByte { region: 2 });
    let (_, r) = stream(&f, DISK);
    match r.unwrap_err() {
        CosiError::HashMismatch {
            path,
            expected,
            actual,
        } => {
            assert_eq!(path, "images/partition-2.raw.zst");
            assert_eq!(expected, f.cosi.regions[2].sha384);
            assert_ne!(actual, expected);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn flipped_byte_in_the_gpt_region_fails_before_anything_is_written() {
    let f = corrupt(Corruption::FlipByte { region: 0 });
    let (t, r) = stream(&f, DISK);
    assert!(
        matches!(r.unwrap_err(), CosiError::HashMismatch { path, .. } if path == "images/primary-gpt.raw.zst")
    );
    assert!(untouched(&t));
}

#[test]
fn truncated_archive_is_reported_as_truncated_region() {
    let f = corrupt(Corruption::Truncate { region: 2 });
    let (_, r) = stream(&f, DISK);
    match r.unwrap_err() {
        CosiError::Truncated {
            path,
            expected,
            actual,
        } => {
            assert_eq!(path, "images/partition-2.raw.zst");
            assert!(actual < expected);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn region_larger_than_its_partition_fails_before_anything_is_written() {
    let f = corrupt(Corruption::RegionLargerThanPartition { region: 1 });
    let (t, r) = stream(&f, DISK);
    let err = r.unwrap_err();
    assert!(
        matches!(err, CosiError::RegionTooLarge { number: 1, .. }),
        "{err}"
    );
    assert!(untouched(&t));
}

#[test]
fn target_smaller_than_the_image_disk_is_refused_untouched() {
    let f = fixture(&spec(1));
    let (t, r) = stream(&f, DISK - (1 << 20));
    let err = r.unwrap_err();
    assert!(
        matches!(err, CosiError::TargetTooSmall { needed: DISK, .. }),
        "{err}"
    );
    assert!(untouched(&t));
}

#[test]
fn update_image_with_another_seed_differs_and_overwrites_install_image() {
    let install = fixture(&spec(1));
    let update = fixture(&spec(2));
    assert_ne!(install.cosi.metadata_sha384, update.cosi.metadata_sha384);
    let t = target(install.dir.path(), DISK);
    stream_to_target(&mut open(&install), &t, &mut NoProgress).unwrap();
    stream_to_target(&mut open(&update), &t, &mut NoProgress).unwrap();
    assert_same_disk(&update, &t);
}

#[test]
fn skipped_regions_are_still_hash_checked() {
    let f = corrupt(Corruption::FlipByte { region: 1 });
    let mut src = CosiSource::open(
        &url(&f.cosi.path),
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    )
    .unwrap();
    let err = src.verify_remaining().unwrap_err();
    assert!(
        matches!(err, CosiError::HashMismatch { path, .. } if path == "images/partition-1.raw.zst")
    );
}
