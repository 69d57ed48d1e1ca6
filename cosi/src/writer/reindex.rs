//! `mkcosi index`: any COSI (ours, upstream's, Image Customizer's) made an
//! indexed one ([`crate::chunk_index`]). Every region is read through the
//! verifying reader, re-compressed as independent frames of one
//! uncompressed size, and packed after `metadata.json` and the new index.
//! The metadata is the input's own document with only what changed
//! rewritten (each image's `compressedSize` and `sha384`, `compression`
//! when the frames need a larger window, the new `chunkIndex`), so fields
//! this crate does not model survive. Entries other than the marker, the
//! metadata and the regions are not carried over.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::framed::{Framed, compress_framed};
use super::pack::{append_member, io_err};
use super::{WriterError, images::work_dir};
use crate::chunk_index::{
    ChunkIndex, ChunkIndexRef, INDEX_ENTRY, INDEX_VERSION, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE,
    RegionChunks,
};
use crate::hash::ExpectedHash;
use crate::metadata::Metadata;
use crate::source::{CosiSource, MARKER_ENTRY, METADATA_ENTRY, SourceOptions};

/// How to index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexOptions {
    /// Uncompressed bytes per chunk (a multiple of 4 KiB, at most 64 MiB).
    pub chunk_size: u64,
    pub zstd_level: i32,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            chunk_size: crate::chunk_index::DEFAULT_CHUNK_SIZE,
            zstd_level: super::DEFAULT_ZSTD_LEVEL,
        }
    }
}

/// One region of the indexed COSI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexedRegion {
    pub path: String,
    pub uncompressed_size: u64,
    pub compressed_size: u64,
    pub sha384: String,
    pub chunks: usize,
}

/// What [`index_cosi`] wrote: the new metadata's SHA-384 is what the Host
/// Configuration's `image.sha384` must pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IndexOutput {
    pub path: PathBuf,
    pub metadata_sha384: String,
    pub chunk_size: u64,
    pub index_sha384: String,
    pub regions: Vec<IndexedRegion>,
}

/// A writer that only counts, to learn where each member's data will sit.
#[derive(Debug, Default)]
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes `input` (a COSI file) as the indexed COSI `out`.
pub fn index_cosi(
    input: &Path,
    out: &Path,
    options: &IndexOptions,
) -> Result<IndexOutput, WriterError> {
    let size = options.chunk_size;
    if !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&size) || !size.is_multiple_of(MIN_CHUNK_SIZE) {
        return Err(WriterError::Spec(format!(
            "chunk size {size} is not a multiple of {MIN_CHUNK_SIZE} between {MIN_CHUNK_SIZE} \
             and {MAX_CHUNK_SIZE}"
        )));
    }
    let absolute = std::fs::canonicalize(input).map_err(io_err(input))?;
    let name = absolute.to_string_lossy().into_owned();
    let mut source = CosiSource::open(&name, &ExpectedHash::Ignored, &SourceOptions::default())?;
    let mut document: Value = serde_json::from_slice(source.metadata_json())
        .map_err(|e| WriterError::Spec(format!("{}: {METADATA_ENTRY}: {e}", input.display())))?;
    let tmpdir = work_dir(out)?;

    let mut regions: Vec<(String, Framed, PathBuf)> = Vec::new();
    while let Some(mut region) = source.next_region()? {
        let path = region.info().image.path.clone();
        let tmp = tmpdir.path().join(format!("region-{}", regions.len()));
        // Reading to the end verifies the input region's hash and sizes.
        let framed = compress_framed(&mut region, &tmp, options.zstd_level, size)?;
        regions.push((path, framed, tmp));
    }

    let offsets = data_offsets(&regions)?;
    let index = ChunkIndex {
        version: INDEX_VERSION,
        chunk_size: size,
        regions: regions
            .iter()
            .zip(&offsets)
            .map(|((path, framed, _), offset)| RegionChunks {
                path: path.clone(),
                data_offset: *offset,
                chunks: framed.chunks.clone(),
            })
            .collect(),
    };
    let index_json = serde_json::to_vec(&index).map_err(|e| WriterError::Spec(e.to_string()))?;
    let index_sha384 = crate::hash::sha384_hex(&index_json);
    for (path, framed, _) in &regions {
        rewrite_image_files(&mut document, path, framed);
    }
    raise_window_log(&mut document, size);
    document["chunkIndex"] = serde_json::to_value(ChunkIndexRef {
        path: INDEX_ENTRY.to_owned(),
        size: index_json.len() as u64,
        sha384: index_sha384.clone(),
    })
    .map_err(|e| WriterError::Spec(e.to_string()))?;
    let json =
        serde_json::to_vec_pretty(&document).map_err(|e| WriterError::Spec(e.to_string()))?;
    // What a reader will check, checked before the file is written.
    let metadata = Metadata::from_json(&json).map_err(|e| WriterError::Spec(e.to_string()))?;
    metadata
        .validate()
        .map_err(|e| WriterError::Spec(e.to_string()))?;
    ChunkIndex::parse(&index_json, &metadata).map_err(|e| WriterError::Spec(e.to_string()))?;

    let members: Vec<Member> = regions
        .iter()
        .map(|(path, framed, tmp)| Member {
            path: path.clone(),
            size: framed.compressed_size,
            file: tmp.clone(),
            at: 0,
        })
        .collect();
    write_indexed(out, &json, &index_json, &members)?;
    Ok(IndexOutput {
        path: out.to_owned(),
        metadata_sha384: crate::hash::sha384_hex(&json),
        chunk_size: size,
        index_sha384,
        regions: regions
            .iter()
            .map(|(path, framed, _)| IndexedRegion {
                path: path.clone(),
                uncompressed_size: framed.uncompressed_size,
                compressed_size: framed.compressed_size,
                sha384: framed.sha384.clone(),
                chunks: framed.chunks.len(),
            })
            .collect(),
    })
}

/// Each region member's data offset from the start of the members that
/// follow the index: the same headers [`write_indexed`] writes, counted.
fn data_offsets(regions: &[(String, Framed, PathBuf)]) -> Result<Vec<u64>, WriterError> {
    let mut tar = tar::Builder::new(Counter::default());
    let mut offsets = Vec::with_capacity(regions.len());
    for (path, framed, tmp) in regions {
        let size = framed.compressed_size;
        append_member(&mut tar, path, size, &mut io::repeat(0).take(size)).map_err(io_err(tmp))?;
        offsets.push(tar.get_ref().0 - size.next_multiple_of(512));
    }
    Ok(offsets)
}

/// A region member to pack: `size` bytes of `file` from byte `at`.
struct Member {
    path: String,
    size: u64,
    file: PathBuf,
    at: u64,
}

fn write_indexed(
    out: &Path,
    json: &[u8],
    index: &[u8],
    members: &[Member],
) -> Result<(), WriterError> {
    let file = std::fs::File::create(out).map_err(io_err(out))?;
    let mut tar = tar::Builder::new(io::BufWriter::with_capacity(super::pack::CHUNK, file));
    let err = io_err(out);
    append_member(&mut tar, MARKER_ENTRY, 0, &mut io::empty()).map_err(&err)?;
    append_member(&mut tar, METADATA_ENTRY, json.len() as u64, &mut &json[..]).map_err(&err)?;
    append_member(&mut tar, INDEX_ENTRY, index.len() as u64, &mut &index[..]).map_err(&err)?;
    for m in members {
        let mut f = std::fs::File::open(&m.file).map_err(io_err(&m.file))?;
        io::Seek::seek(&mut f, io::SeekFrom::Start(m.at)).map_err(io_err(&m.file))?;
        append_member(&mut tar, &m.path, m.size, &mut f.take(m.size)).map_err(&err)?;
    }
    let mut inner = tar.into_inner().map_err(&err)?;
    inner.flush().map_err(&err)
}

/// For tests of what readers refuse: writes the indexed COSI `input` as
/// `out` with its chunk index changed by `edit` (the regions' bytes as
/// they were). With `repin`, `metadata.json` pins the edited index (its
/// size and SHA-384 updated: a consistent image whose index lies); without,
/// the original pin stays (a tampered index). Returns the new metadata's
/// SHA-384.
pub fn edit_chunk_index(
    input: &Path,
    out: &Path,
    edit: impl FnOnce(&mut ChunkIndex),
    repin: bool,
) -> Result<String, WriterError> {
    let absolute = std::fs::canonicalize(input).map_err(io_err(input))?;
    let name = absolute.to_string_lossy().into_owned();
    let source = CosiSource::open(&name, &ExpectedHash::Ignored, &SourceOptions::default())?;
    let mut index = source
        .chunk_index()
        .cloned()
        .ok_or_else(|| WriterError::Spec(format!("{} has no chunk index", input.display())))?;
    let mut members = Vec::new();
    for region in &source.disk().gpt_regions {
        let at = source
            .region_data_offset(&region.image.path)
            .ok_or_else(|| WriterError::Spec(format!("{} is not indexed", region.image.path)))?;
        members.push(Member {
            path: region.image.path.clone(),
            size: region.image.compressed_size,
            file: absolute.clone(),
            at,
        });
    }
    edit(&mut index);
    let index_json = serde_json::to_vec(&index).map_err(|e| WriterError::Spec(e.to_string()))?;
    let json = if repin {
        let mut document: Value = serde_json::from_slice(source.metadata_json())
            .map_err(|e| WriterError::Spec(e.to_string()))?;
        document["chunkIndex"]["size"] = Value::from(index_json.len() as u64);
        document["chunkIndex"]["sha384"] = Value::from(crate::hash::sha384_hex(&index_json));
        serde_json::to_vec_pretty(&document).map_err(|e| WriterError::Spec(e.to_string()))?
    } else {
        source.metadata_json().to_vec()
    };
    write_indexed(out, &json, &index_json, &members)?;
    Ok(crate::hash::sha384_hex(&json))
}

/// Every ImageFile object of the document whose `path` is `path`
/// (`images[].image`, `images[].verity.image`, `disk.gptRegions[].image`)
/// gets the framed region's compressed size and hash.
fn rewrite_image_files(document: &mut Value, path: &str, framed: &Framed) {
    let rewrite = |file: Option<&mut Value>| {
        if let Some(file) = file.filter(|f| f.get("path").and_then(Value::as_str) == Some(path)) {
            file["compressedSize"] = Value::from(framed.compressed_size);
            file["sha384"] = Value::from(framed.sha384.clone());
        }
    };
    if let Some(images) = document.get_mut("images").and_then(Value::as_array_mut) {
        for fs in images {
            rewrite(fs.get_mut("image"));
            rewrite(fs.get_mut("verity").and_then(|v| v.get_mut("image")));
        }
    }
    if let Some(regions) = document
        .get_mut("disk")
        .and_then(|d| d.get_mut("gptRegions"))
        .and_then(Value::as_array_mut)
    {
        for region in regions {
            rewrite(region.get_mut("image"));
        }
    }
}

/// `compression.maxWindowLog` at least the window a frame of `chunk_size`
/// bytes can use (zstd sizes a frame's window to its known content).
fn raise_window_log(document: &mut Value, chunk_size: u64) {
    let needed = u64::from(chunk_size.next_power_of_two().trailing_zeros()).max(10);
    let current = document
        .get("compression")
        .and_then(|c| c.get("maxWindowLog"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if current < needed || document.get("compression").is_none() {
        document["compression"]["maxWindowLog"] = Value::from(needed.max(current));
    }
}
