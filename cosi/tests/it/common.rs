//! Shared helpers for the cosi integration tests.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::{Path, PathBuf};

use trident_cosi::writer::{self, Corruption, FixtureOutput, FixtureSpec};

pub const DISK: u64 = 12 << 20;
/// Small ESP keeps fixtures quick in debug builds.
pub const ESP: u64 = 2 << 20;
/// Byte the targets are pre-filled with, to see what was written.
pub const FILL: u8 = 0xEE;

#[derive(Debug)]
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub cosi: FixtureOutput,
    pub expected_disk: PathBuf,
}

pub fn spec(seed: u64) -> FixtureSpec {
    FixtureSpec {
        esp_size: ESP,
        ..FixtureSpec::new(DISK, seed)
    }
}

pub fn fixture(spec: &FixtureSpec) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let expected_disk = dir.path().join("expected.img");
    let mut intact = spec.clone();
    intact.corruption = None;
    writer::write_disk_image(&intact, &expected_disk).unwrap();
    let cosi = writer::write_cosi(spec, &dir.path().join("image.cosi")).unwrap();
    Fixture {
        dir,
        cosi,
        expected_disk,
    }
}

pub fn corrupt(c: Corruption) -> Fixture {
    let mut s = spec(3);
    s.corruption = Some(c);
    fixture(&s)
}

/// A disk-image target of `size` bytes filled with [`FILL`].
pub fn target(dir: &Path, size: u64) -> PathBuf {
    let p = dir.join("target.img");
    fs::write(&p, vec![FILL; size as usize]).unwrap();
    p
}

pub fn untouched(path: &Path) -> bool {
    fs::read(path).unwrap().iter().all(|&b| b == FILL)
}

pub fn url(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Every region and the backup GPT of `target` equal the fixture's plain
/// disk image (gaps between partitions are not written by design).
pub fn assert_same_disk(f: &Fixture, target: &Path) {
    let got = fs::read(target).unwrap();
    let expected = fs::read(&f.expected_disk).unwrap();
    assert_eq!(got.len(), expected.len());
    let gpt = trident_cosi::gpt::Gpt::parse_primary(&expected, f.cosi.lba_size).unwrap();
    let (backup_at, _) = gpt.backup_bytes();
    let mut ranges: Vec<_> = f
        .cosi
        .regions
        .iter()
        .map(|r| {
            (
                r.path.clone(),
                r.offset as usize,
                (r.offset + r.uncompressed_size) as usize,
            )
        })
        .collect();
    ranges.push(("backup-gpt".into(), backup_at as usize, expected.len()));
    for (name, start, end) in ranges {
        let first = got[start..end]
            .iter()
            .zip(&expected[start..end])
            .position(|(a, b)| a != b);
        assert!(
            first.is_none(),
            "{name}: first difference at byte {:?}",
            first.map(|i| start + i)
        );
    }
}
