//! The adaptive writer on files: a region written into a fresh file (as
//! the image's ESP copy is) from an indexed COSI with no local source: its
//! all-zero chunks are settled as zeros (left as holes, never fetched),
//! the rest fetched, and the file read back equals the region; a region
//! whose bytes in its destination were changed after the write fails the
//! read-back naming region and chunk. The root written from a local copy
//! of it that moved by whole 4 KiB blocks: found through the anchors, a
//! window whose anchor matches but whose chunk does not is fetched
//! instead, and an index without anchors matches aligned chunks only.
#![allow(clippy::unwrap_used)] // tests fail loudly on purpose

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use trident_cosi::writer::{self, ImagesSpec, IndexOptions};
use trident_cosi::{ExpectedHash, SourceOptions};

use super::adaptive::{self, Indexed, verify_region};
use super::adaptive_region::{Dest, Job, Local, Tally};
use crate::interrupt::Interrupt;

const CHUNK: u64 = 64 << 10;

/// An indexed COSI whose ESP (2 MiB) is zeros but for its first and last
/// 100 KiB; its path.
fn indexed_image(dir: &Path) -> (PathBuf, Vec<u8>) {
    let (indexed, esp, _) = indexed_image_and_root(dir);
    (indexed, esp)
}

/// [`indexed_image`], and the root's bytes (4 MiB).
fn indexed_image_and_root(dir: &Path) -> (PathBuf, Vec<u8>, Vec<u8>) {
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
    (indexed, esp, root)
}

fn open(path: &Path) -> Indexed {
    let url = format!("file://{}", path.display());
    adaptive::open_indexed(&url, &ExpectedHash::Ignored, &SourceOptions::default())
        .unwrap()
        .unwrap()
}

/// The region mounted at `mount` as the job `id` into the fresh file
/// `out`, copying chunks from `locals`.
fn region_job(image: &Indexed, mount: &str, id: &str, out: &Path, locals: Vec<Local>) -> Job {
    let info = image
        .source
        .region_infos()
        .into_iter()
        .find(|r| r.mount_point.as_deref() == Some(mount))
        .unwrap();
    let size = info.image.uncompressed_size;
    fs::File::create(out).unwrap().set_len(size).unwrap();
    Job {
        dest: Dest {
            id: id.to_owned(),
            path: out.to_owned(),
            offset: 0,
            size,
            in_place: false,
        },
        locals,
        info,
    }
}

/// The ESP region as a job into the fresh file `out`.
fn esp_job(image: &Indexed, out: &Path) -> Job {
    region_job(image, "/boot/efi", "esp-copy", out, Vec::new())
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

/// The root region as a job into the fresh file `out`, with the file
/// `local` as its local source of chunks.
fn root_job(image: &Indexed, out: &Path, local: &Path) -> Job {
    let locals = vec![Local {
        label: "root-a (the active volume)".to_owned(),
        path: local.to_owned(),
        offset: 0,
        size: fs::metadata(local).unwrap().len(),
    }];
    region_job(image, "/", "root-b", out, locals)
}

/// The root written from `local` (the root's bytes behind `shift` other
/// bytes, then `edit`ed): the tally; the result is checked to be the root.
fn write_root_from_shifted(
    cosi: &Path,
    root: &[u8],
    shift: usize,
    edit: impl FnOnce(&mut Vec<u8>),
) -> Tally {
    let dir = cosi.parent().unwrap();
    let mut local = vec![0u8; shift];
    writer::fill_content(99, 5, 0, &mut local);
    local.extend_from_slice(root);
    edit(&mut local);
    let local_path = dir.join("root-a.img");
    fs::write(&local_path, &local).unwrap();
    let image = open(cosi);
    let out = dir.join("root-b.img");
    let job = root_job(&image, &out, &local_path);
    let tally =
        adaptive::write_jobs(&image, std::slice::from_ref(&job), &Interrupt::default()).unwrap();
    assert_eq!(fs::read(&out).unwrap(), root);
    assert_eq!(tally.reused() + tally.fetched, root.len() as u64);
    tally
}

/// Shifts that are whole 4 KiB blocks but not whole chunks.
const SHIFT: usize = 3 * 4096;

#[test]
fn content_moved_by_whole_blocks_is_copied_from_the_local_volume() {
    let dir = tempfile::tempdir().unwrap();
    let (cosi, _, root) = indexed_image_and_root(dir.path());
    for shift in [SHIFT, 4096, 17 * 4096] {
        let tally = write_root_from_shifted(&cosi, &root, shift, |_| {});
        assert_eq!(tally.fetched, 0, "shift {shift}: {tally:?}");
        assert_eq!(
            tally.copied + tally.zeros,
            root.len() as u64,
            "shift {shift}"
        );
        assert!(tally.copied > 0);
    }
}

#[test]
fn an_anchor_match_whose_whole_chunk_differs_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let (cosi, _, root) = indexed_image_and_root(dir.path());
    let image = open(&cosi);
    let index = image.source.chunk_index().unwrap();
    let info = image
        .source
        .region_infos()
        .into_iter()
        .find(|r| r.mount_point.as_deref() == Some("/"))
        .unwrap();
    let chunks = &index.region(&info.image.path).unwrap().chunks;
    // A chunk with an anchor: one byte of its local copy changed outside
    // the anchor's block, so the anchor matches and the chunk does not.
    let (j, anchor) = chunks
        .iter()
        .enumerate()
        .find_map(|(j, c)| c.anchor.clone().map(|a| (j, a)))
        .unwrap();
    let outside = if anchor.offset == 0 { CHUNK - 1 } else { 0 };
    let at = SHIFT + j * CHUNK as usize + outside as usize;
    let tally = write_root_from_shifted(&cosi, &root, SHIFT, |local| local[at] ^= 0xff);
    assert_eq!(tally.fetched, CHUNK, "{tally:?}");
    assert!(tally.copied > 0);
}

#[test]
fn an_index_without_anchors_still_matches_chunks_where_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let (indexed, _, root) = indexed_image_and_root(dir.path());
    let cosi = dir.path().join("no-anchors.cosi");
    let strip = |index: &mut trident_cosi::chunk_index::ChunkIndex| {
        for region in &mut index.regions {
            for chunk in &mut region.chunks {
                chunk.anchor = None;
            }
        }
    };
    writer::edit_chunk_index(&indexed, &cosi, strip, true).unwrap();
    let in_place = write_root_from_shifted(&cosi, &root, 0, |_| {});
    assert_eq!(in_place.fetched, 0, "{in_place:?}");
    // Moved: nothing found but zeros, as before anchors; still correct.
    let moved = write_root_from_shifted(&cosi, &root, SHIFT, |_| {});
    assert_eq!(moved.copied, 0, "{moved:?}");
    assert_eq!(moved.fetched + moved.zeros, root.len() as u64);
}
