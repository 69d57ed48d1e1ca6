//! The chunk index: an optional, additive part of a COSI file that lets an
//! A/B update fetch only the chunks of a region it has nowhere locally.
//!
//! An indexed COSI compresses every region as independent zstd frames of
//! one fixed uncompressed size (the last one shorter). Concatenated frames
//! are one valid zstd stream, so a reader that knows nothing of the index
//! (upstream's, ours in full-stream mode, `zstd -d`) reads the region
//! unchanged. The index, a JSON tar member placed right after
//! `metadata.json`, lists for every region each chunk's SHA-256 (of its
//! uncompressed bytes) and its frame's offset and length inside the
//! region's tar member. `metadata.json` names the member with its size and
//! SHA-384 ([`ChunkIndexRef`], the root field `chunkIndex`, which readers of
//! COSI 1.2 ignore as the spec requires), and the Host Configuration pins
//! `metadata.json`: every chunk, reused or fetched, is checked against a
//! chain rooted there.
//!
//! Where a region's member sits in the archive cannot be written into the
//! index as an absolute offset (the metadata, which comes first, holds the
//! index's hash, and its own length moves everything after it), so each
//! region carries `dataOffset`, its data's offset from the end of the
//! index member (the next 512-byte boundary after the index's data): the
//! region members follow the index, so that distance depends only on them.
//!
//! A chunk may also carry an [`Anchor`]: the SHA-256 of one 4 KiB block
//! inside it and that block's offset. It lets an update find the chunk's
//! content in a local volume where it moved by any multiple of 4 KiB (a
//! file system's block: a grown file shifts every file laid out after it),
//! by hashing each local block once instead of a chunk-sized window at
//! every offset. An anchor only names a candidate: the whole window there
//! must still hash to the chunk's `sha256` before it is used. The field is
//! additive (same `version`): an index without it still reads, and is
//! matched at chunk-size multiples only.

mod check;
mod frame;
mod validate;

use serde::{Deserialize, Serialize};

pub use frame::{decompress_frame, sha256_hex};

/// The member name `mkcosi` gives the index.
pub const INDEX_ENTRY: &str = "chunk-index.json";
/// The index format this reader knows.
pub const INDEX_VERSION: u32 = 1;
/// The smallest chunk size accepted (one 4 KiB block).
pub const MIN_CHUNK_SIZE: u64 = 4 << 10;
/// The largest chunk size accepted: a chunk is held in memory whole.
pub const MAX_CHUNK_SIZE: u64 = 64 << 20;
/// The chunk size `mkcosi` uses by default (see `docs/servicing.md`).
pub const DEFAULT_CHUNK_SIZE: u64 = 1 << 20;
/// The block an [`Anchor`] hashes: a file system's block, the unit data
/// moves by.
pub const ANCHOR_BLOCK: u64 = 4 << 10;
/// An index larger than this is refused rather than buffered.
pub const MAX_INDEX_BYTES: u64 = 64 << 20;

/// `metadata.json`'s root field `chunkIndex`: which tar member holds the
/// index, and its size and SHA-384.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkIndexRef {
    pub path: String,
    pub size: u64,
    pub sha384: String,
}

/// The index member's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChunkIndex {
    pub version: u32,
    /// Uncompressed bytes per chunk (the last chunk of a region is shorter).
    pub chunk_size: u64,
    /// One per region of `disk.gptRegions`, in the same order.
    pub regions: Vec<RegionChunks>,
}

/// The chunks of one region image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegionChunks {
    /// The region image's path (`images/...`), as in `metadata.json`.
    pub path: String,
    /// Offset of the region member's data from the end of the index
    /// member (see the module).
    pub data_offset: u64,
    pub chunks: Vec<Chunk>,
}

/// One chunk: its uncompressed content's SHA-256 and its zstd frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    pub sha256: String,
    /// The frame's offset inside the region member's data.
    pub offset: u64,
    /// The frame's compressed length.
    pub size: u64,
    /// Where to look for this chunk's content when it moved (absent in
    /// indexes written before anchors, and for chunks with no usable
    /// block, e.g. all zeros).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
}

/// One [`ANCHOR_BLOCK`] of a chunk: its offset in the chunk (a multiple of
/// the block) and the SHA-256 of its bytes. `mkcosi` picks a block that is
/// not all zeros and, where it can, whose content occurs nowhere earlier
/// in the region, so that few local blocks share it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchor {
    pub offset: u64,
    pub sha256: String,
}

impl ChunkIndex {
    /// The chunks of the region at `path`.
    pub fn region(&self, path: &str) -> Option<&RegionChunks> {
        self.regions.iter().find(|r| r.path == path)
    }

    /// Where chunk `i` of a region of `uncompressed` bytes lies in the
    /// uncompressed image: (offset, length).
    pub fn chunk_span(&self, i: usize, uncompressed: u64) -> (u64, u64) {
        let start = self.chunk_size.saturating_mul(i as u64);
        (
            start,
            self.chunk_size.min(uncompressed.saturating_sub(start)),
        )
    }
}

/// Why an index was refused, naming where in it (`regions[2].chunks[7]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("chunk index: {location}: {reason}")]
pub struct IndexError {
    pub location: String,
    pub reason: String,
}
