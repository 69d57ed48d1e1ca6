//! Indexed COSIs (`mkcosi index`, `trident_cosi::chunk_index`): the same
//! bytes as the plain image through the full-stream reader and through the
//! real `zstd -d`; every frame decodes alone to its chunk; and the index
//! is refused, before any region is read, when its hash is not the one
//! the metadata pins or when it does not cover a region.

#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::path::Path;
use std::process::Command;

use trident_cosi::chunk_index::{ChunkIndex, sha256_hex};
use trident_cosi::writer::{self, IndexOptions};
use trident_cosi::{CosiError, CosiSource, ExpectedHash, RangeReader, SourceOptions};

use crate::common::*;

const CHUNK: u64 = 256 << 10;

fn open(path: &Path) -> Result<CosiSource, CosiError> {
    CosiSource::open(
        &url(path),
        &ExpectedHash::Ignored,
        &SourceOptions::default(),
    )
}

/// Every region's uncompressed bytes, in order, through the full-stream
/// reader (which checks each region's SHA-384 and sizes).
fn regions(path: &Path) -> Vec<Vec<u8>> {
    let mut source = open(path).unwrap();
    let mut out = Vec::new();
    while let Some(mut region) = source.next_region().unwrap() {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut region, &mut bytes).unwrap();
        out.push(bytes);
    }
    out
}

/// The fixture and its indexed copy (`indexed.cosi` in its dir).
fn indexed() -> (Fixture, std::path::PathBuf, writer::IndexOutput) {
    let f = fixture(&spec(38));
    let out = f.dir.path().join("indexed.cosi");
    let options = IndexOptions {
        chunk_size: CHUNK,
        zstd_level: 3,
    };
    let done = writer::index_cosi(&f.cosi.path, &out, &options).unwrap();
    (f, out, done)
}

#[test]
fn an_indexed_cosi_holds_the_same_bytes_and_pins_its_index_from_the_metadata() {
    let (f, out, done) = indexed();
    assert_eq!(regions(&out), regions(&f.cosi.path));
    let source = open(&out).unwrap();
    assert_eq!(source.metadata_sha384(), done.metadata_sha384);
    let pinned = source.metadata().chunk_index.clone().unwrap();
    assert_eq!(pinned.path, "chunk-index.json");
    assert_eq!(pinned.sha384, done.index_sha384);
    let index = source.chunk_index().unwrap();
    assert_eq!(index.chunk_size, CHUNK);
    assert_eq!(index.regions.len(), f.cosi.regions.len());
    // The hash the Host Configuration pins is the one printed.
    let expected = ExpectedHash::parse(&done.metadata_sha384).unwrap();
    CosiSource::open(&url(&out), &expected, &SourceOptions::default()).unwrap();
    // Indexing an indexed COSI again gives the same regions.
    let again = f.dir.path().join("again.cosi");
    writer::index_cosi(&out, &again, &IndexOptions::default()).unwrap();
    assert_eq!(regions(&again), regions(&f.cosi.path));
}

#[test]
fn every_frame_fetched_by_range_decodes_alone_to_its_chunk() {
    let (_f, out, _) = indexed();
    let source = open(&out).unwrap();
    let index = source.chunk_index().unwrap().clone();
    let ranges = RangeReader::open(&url(&out), &SourceOptions::default()).unwrap();
    let plain = regions(&out);
    for (info, bytes) in source.region_infos().iter().zip(&plain) {
        let path = &info.image.path;
        let base = source.region_data_offset(path).unwrap();
        let chunks = &index.region(path).unwrap().chunks;
        assert_eq!(
            chunks.len() as u64,
            info.image.uncompressed_size.div_ceil(CHUNK)
        );
        for (i, chunk) in chunks.iter().enumerate() {
            let mut frame = vec![0u8; chunk.size as usize];
            ranges
                .read_exact_at(base + chunk.offset, &mut frame)
                .unwrap();
            let (start, len) = index.chunk_span(i, info.image.uncompressed_size);
            let mut data = vec![0u8; len as usize];
            index
                .decode_chunk(
                    &info.name(),
                    path,
                    info.image.uncompressed_size,
                    i,
                    &frame,
                    &mut data,
                    source.max_window_log(),
                )
                .unwrap();
            assert_eq!(data, bytes[start as usize..(start + len) as usize]);
            assert_eq!(chunk.sha256, sha256_hex(&data));
        }
    }
}

#[test]
fn the_concatenated_frames_decompress_with_the_real_zstd() {
    let (f, out, _) = indexed();
    let source = open(&out).unwrap();
    let file = fs::read(&out).unwrap();
    let plain = regions(&f.cosi.path);
    for (info, want) in source.region_infos().iter().zip(&plain) {
        let at = source.region_data_offset(&info.image.path).unwrap() as usize;
        let member = &file[at..at + info.image.compressed_size as usize];
        let zst = f.dir.path().join("member.zst");
        fs::write(&zst, member).unwrap();
        let run = Command::new("zstd")
            .args(["-d", "-c", "-q"])
            .arg(&zst)
            .output()
            .expect("zstd (the zstd package) runs");
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(
            run.stdout == *want,
            "{} differs after zstd -d",
            info.image.path
        );
    }
}

#[test]
fn a_tampered_index_is_refused_before_any_region_is_read() {
    let (f, out, _) = indexed();
    let bad = f.dir.path().join("tampered.cosi");
    // Same length, one hash digit changed, the metadata's pin kept.
    writer::edit_chunk_index(&out, &bad, flip_first_hash_digit, false).unwrap();
    let err = open(&bad).unwrap_err();
    assert_eq!(err.subkind(), "chunk-index-hash-mismatch", "{err}");
}

fn flip_first_hash_digit(index: &mut ChunkIndex) {
    let hash = &mut index.regions[1].chunks[0].sha256;
    let first = if hash.starts_with('0') { "1" } else { "0" };
    hash.replace_range(0..1, first);
}

#[test]
fn an_index_that_does_not_cover_a_region_is_refused_naming_it() {
    let (f, out, _) = indexed();
    let bad = f.dir.path().join("short.cosi");
    writer::edit_chunk_index(
        &out,
        &bad,
        |index| {
            index.regions[2].chunks.pop();
        },
        true,
    )
    .unwrap();
    let err = open(&bad).unwrap_err();
    assert_eq!(err.subkind(), "invalid-chunk-index", "{err}");
    assert!(err.to_string().contains("regions[2].chunks"), "{err}");
    assert!(err.to_string().contains("does not cover"), "{err}");

    let bad = f.dir.path().join("fewer-regions.cosi");
    writer::edit_chunk_index(
        &out,
        &bad,
        |index| {
            index.regions.pop();
        },
        true,
    )
    .unwrap();
    let err = open(&bad).unwrap_err();
    assert_eq!(err.subkind(), "invalid-chunk-index", "{err}");
    assert!(err.to_string().contains("cover every region"), "{err}");
}

#[test]
fn a_chunk_whose_content_is_not_its_hash_is_an_error_naming_region_and_chunk() {
    let (f, out, _) = indexed();
    let lying = f.dir.path().join("lying.cosi");
    // A consistent image (the metadata pins the edited index) whose index
    // lies about one chunk of the root.
    writer::edit_chunk_index(&out, &lying, flip_first_hash_digit, true).unwrap();
    let source = open(&lying).unwrap();
    let index = source.chunk_index().unwrap();
    let info = &source.region_infos()[1];
    let plain = regions(&lying);
    let (_, len) = index.chunk_span(0, info.image.uncompressed_size);
    let err = index
        .verify_chunk(
            &info.name(),
            &info.image.path,
            info.image.uncompressed_size,
            0,
            &plain[1][..len as usize],
            "read from the active volume",
        )
        .unwrap_err();
    assert_eq!(err.subkind(), "chunk-hash-mismatch");
    let text = err.to_string();
    assert!(text.contains("partition-1"), "{text}");
    assert!(text.contains("chunk 0"), "{text}");
}

#[test]
fn every_chunk_with_data_carries_an_anchor_that_is_one_of_its_blocks() {
    let (_f, out, _) = indexed();
    let source = open(&out).unwrap();
    let index = source.chunk_index().unwrap();
    let plain = regions(&out);
    let mut anchored = 0;
    for (info, bytes) in source.region_infos().iter().zip(&plain) {
        let chunks = &index.region(&info.image.path).unwrap().chunks;
        for (i, chunk) in chunks.iter().enumerate() {
            let (start, len) = index.chunk_span(i, info.image.uncompressed_size);
            let data = &bytes[start as usize..(start + len) as usize];
            let Some(anchor) = &chunk.anchor else {
                assert!(
                    data.iter().all(|b| *b == 0),
                    "chunk {i} has data, no anchor"
                );
                continue;
            };
            let at = anchor.offset as usize;
            assert_eq!(anchor.sha256, sha256_hex(&data[at..at + 4096]));
            anchored += 1;
        }
    }
    assert!(anchored > 0);
}

#[test]
fn an_index_written_before_anchors_still_reads() {
    let (f, out, _) = indexed();
    let old = f.dir.path().join("no-anchors.cosi");
    writer::edit_chunk_index(
        &out,
        &old,
        |index| {
            for region in &mut index.regions {
                for chunk in &mut region.chunks {
                    chunk.anchor = None;
                }
            }
        },
        true,
    )
    .unwrap();
    let bytes = fs::read(&old).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("\"anchor\""));
    let source = open(&old).unwrap();
    let index = source.chunk_index().unwrap();
    assert!(
        index
            .regions
            .iter()
            .flat_map(|r| &r.chunks)
            .all(|c| c.anchor.is_none())
    );
    assert_eq!(regions(&old), regions(&f.cosi.path));
}

#[test]
fn an_anchor_that_is_not_a_whole_block_of_its_chunk_is_refused_naming_it() {
    let (f, out, _) = indexed();
    let bad = f.dir.path().join("bad-anchor.cosi");
    writer::edit_chunk_index(
        &out,
        &bad,
        |index| {
            let chunk = index.regions[1]
                .chunks
                .iter_mut()
                .find(|c| c.anchor.is_some());
            if let Some(anchor) = chunk.and_then(|c| c.anchor.as_mut()) {
                anchor.offset = CHUNK - 2048;
            }
        },
        true,
    )
    .unwrap();
    let err = open(&bad).unwrap_err();
    assert_eq!(err.subkind(), "invalid-chunk-index", "{err}");
    assert!(err.to_string().contains("anchor.offset"), "{err}");
}
