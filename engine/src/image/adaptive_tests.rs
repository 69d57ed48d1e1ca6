//! The adaptive writer on files: a region written into a fresh file (as
//! the image's ESP copy is) from an indexed COSI with no local source: its
//! all-zero chunks are settled as zeros (left as holes, never fetched),
//! the rest fetched, and the file read back equals the region; a region
//! whose bytes in its destination were changed after the write fails the
//! read-back naming region and chunk.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use trident_cosi::writer::{self, ImagesSpec, IndexOptions};
use trident_cosi::{ExpectedHash, SourceOptions};

use super::adaptive::{self, Indexed};
use super::adaptive_region::{Dest, Job, verify_region};
use crate::interrupt::Interrupt;

const CHUNK: u64 = 64 << 10;

/// An indexed COSI whose ESP (2 MiB) is zeros but for its first and last
/// 100 KiB; its path.
fn indexed_image(dir: &Path) -> (PathBuf, Vec<u8>) {
    let mut esp = vec![0u8; 2 << 20];
    let tail = esp.len() - (100 << 10);
    for (i, b) in esp.iter_mut().enumerate() {
        if i < 100 << 10 || i >= tail {
            *b = (i % 251) as u8 + 1;
        }
    }
    let mut root = vec![0u8; 4 << 20];
    writer::fill_content(7, 2, 0, &mut root);
    fs::write(dir.join("esp.img"), &esp).unwrap();
    fs::write(dir.join("root.img"), &root).unwrap();
    let spec = ImagesSpec::esp_and_root(
        dir.join("esp.img"),
        dir.join("root.img"),
        "2b4d3f5e-0000-4000-8000-00000000ad01",
        "ID=test\n",
    );
    let plain = dir.join("plain.cosi");
    writer::pack_images(&spec, &plain).unwrap();
    let indexed = dir.join("indexed.cosi");
    let options = IndexOptions {
        chunk_size: CHUNK,
        zstd_level: 1,
    };
    writer::index_cosi(&plain, &indexed, &options).unwrap();
    (indexed, esp)
}

fn open(path: &Path) -> Indexed {
    let url = format!("file://{}", path.display());
    adaptive::open_indexed(&url, &ExpectedHash::Ignored, &SourceOptions::default())
        .unwrap()
        .unwrap()
}

/// The ESP region as a job into the fresh file `out`.
fn esp_job(image: &Indexed, out: &Path) -> Job {
    let info = image
        .source
        .region_infos()
        .into_iter()
        .find(|r| r.mount_point.as_deref() == Some("/boot/efi"))
        .unwrap();
    let size = info.image.uncompressed_size;
    fs::File::create(out).unwrap().set_len(size).unwrap();
    Job {
        dest: Dest {
            id: "esp-copy".to_owned(),
            path: out.to_owned(),
            offset: 0,
            size,
            in_place: false,
        },
        locals: Vec::new(),
        info,
    }
}

#[test]
fn zero_chunks_are_never_fetched_and_the_rest_is_written_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let (cosi, esp) = indexed_image(dir.path());
    let image = open(&cosi);
    let out = dir.path().join("esp-copy.img");
    let job = esp_job(&image, &out);
    let tally =
        adaptive::write_jobs(&image, std::slice::from_ref(&job), &Interrupt::default()).unwrap();
    // 2 MiB in 64 KiB chunks: 2 + 2 hold data (100 KiB at each end), 28 are zeros.
    assert_eq!(tally.fetched, 4 * CHUNK);
    assert_eq!(tally.zeros, 28 * CHUNK);
    assert_eq!(tally.in_place + tally.copied, 0);
    assert!(tally.frame_bytes > 0 && tally.frame_bytes < 4 * CHUNK);
    assert_eq!(fs::read(&out).unwrap(), esp);
}

#[test]
fn a_destination_changed_after_the_write_fails_the_read_back_naming_region_and_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let (cosi, _) = indexed_image(dir.path());
    let image = open(&cosi);
    let out = dir.path().join("esp-copy.img");
    let job = esp_job(&image, &out);
    adaptive::write_jobs(&image, std::slice::from_ref(&job), &Interrupt::default()).unwrap();
    let file = fs::OpenOptions::new().write(true).open(&out).unwrap();
    file.write_all_at(&[0x5a], 3 * CHUNK + 10).unwrap();
    let index = image.source.chunk_index().unwrap();
    let err = verify_region(&job, index, &Interrupt::default()).unwrap_err();
    assert_eq!(err.subkind(), trident_host::Subkind::ImageHashMismatch);
    let text = err.message().to_owned();
    assert!(text.contains("partition-1"), "{text}");
    assert!(text.contains("chunk 3 "), "{text}");
    assert!(text.contains("as written to esp-copy"), "{text}");
}
