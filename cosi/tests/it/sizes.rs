//! Sizes in metadata.json that disagree with the archive are caught.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use trident_cosi::metadata::{ImageFile, Metadata};
use trident_cosi::{
    CosiError, CosiSource, ExpectedHash, NoProgress, SizeKind, SourceOptions, stream_to_target,
};

use crate::common::*;

/// Rewrites metadata.json of the fixture, changing the image record of
/// `path` everywhere it appears.
fn repack(f: &Fixture, path: &str, change: impl Fn(&mut ImageFile)) -> PathBuf {
    let bytes = fs::read(&f.cosi.path).unwrap();
    let mut archive = tar::Archive::new(&bytes[..]);
    let mut out = tar::Builder::new(Vec::new());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        if name == "metadata.json" {
            let mut m = Metadata::from_json(&data).unwrap();
            for fs in m.images.iter_mut().filter(|i| i.image.path == path) {
                change(&mut fs.image);
            }
            let disk = m.disk.as_mut().unwrap();
            for r in disk.gpt_regions.iter_mut().filter(|r| r.image.path == path) {
                change(&mut r.image);
            }
            data = serde_json::to_vec(&m).unwrap();
        }
        let mut h = entry.header().clone();
        h.set_size(data.len() as u64);
        out.append_data(&mut h, &name, &data[..]).unwrap();
    }
    let p = f.dir.path().join("repacked.cosi");
    fs::write(&p, out.into_inner().unwrap()).unwrap();
    p
}

fn stream(f: &Fixture, cosi: &Path) -> CosiError {
    let t = target(f.dir.path(), DISK);
    let mut src = CosiSource::open(
        &url(cosi),
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    )
    .unwrap();
    stream_to_target(&mut src, &t, &mut NoProgress).unwrap_err()
}

const ROOT: &str = "images/partition-2.raw.zst";

#[test]
fn more_uncompressed_bytes_than_declared_stop_at_the_declared_size() {
    let f = fixture(&spec(5));
    let cosi = repack(&f, ROOT, |i| i.uncompressed_size -= 4096);
    match stream(&f, &cosi) {
        CosiError::SizeMismatch {
            path,
            kind,
            expected,
            actual,
        } => {
            assert_eq!((path.as_str(), kind), (ROOT, SizeKind::Uncompressed));
            assert!(actual > expected);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn fewer_uncompressed_bytes_than_declared_fail_at_the_end_of_the_region() {
    let f = fixture(&spec(6));
    let cosi = repack(&f, ROOT, |i| i.uncompressed_size += 4096);
    // Read with the plain reader: stream_to_target would already refuse the
    // region as larger than its partition.
    let mut src = CosiSource::open(
        &url(&cosi),
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    )
    .unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let err = loop {
        let mut region = src.next_region().unwrap().unwrap();
        let result = loop {
            match region.read_chunk(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        };
        if let Err(e) = result {
            break e;
        }
    };
    match err {
        CosiError::SizeMismatch {
            path,
            kind,
            expected,
            actual,
        } => {
            assert_eq!((path.as_str(), kind), (ROOT, SizeKind::Uncompressed));
            assert_eq!(expected, actual + 4096);
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn compressed_size_different_from_the_tar_entry_is_a_size_mismatch() {
    let f = fixture(&spec(5));
    let cosi = repack(&f, ROOT, |i| i.compressed_size += 1);
    match stream(&f, &cosi) {
        CosiError::SizeMismatch { path, kind, .. } => {
            assert_eq!((path.as_str(), kind), (ROOT, SizeKind::Compressed));
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn wrong_sha384_in_metadata_is_a_hash_mismatch() {
    let f = fixture(&spec(5));
    let cosi = repack(&f, ROOT, |i| i.sha384 = "0".repeat(96));
    assert!(matches!(stream(&f, &cosi), CosiError::HashMismatch { path, .. } if path == ROOT));
}
