//! A chunk's bytes against the index: the error names the region, the
//! chunk, its span and where the bytes came from.

use super::{ChunkIndex, decompress_frame, sha256_hex};
use crate::error::{ChunkMismatch, CosiError};

impl ChunkIndex {
    /// Checks chunk `i` of the region `region` (its name, e.g.
    /// "partition-2") at `path` of `uncompressed` bytes: `data` must be the
    /// chunk's bytes by the index's SHA-256. `source_desc` says where the
    /// bytes came from, for the error.
    pub fn verify_chunk(
        &self,
        region: &str,
        path: &str,
        uncompressed: u64,
        i: usize,
        data: &[u8],
        source_desc: &str,
    ) -> Result<(), CosiError> {
        let (offset, len) = self.chunk_span(i, uncompressed);
        let expected = self
            .region(path)
            .and_then(|r| r.chunks.get(i))
            .map(|c| c.sha256.as_str())
            .unwrap_or_default();
        let actual = sha256_hex(data);
        if data.len() as u64 != len || actual != expected {
            return Err(CosiError::ChunkHashMismatch(Box::new(ChunkMismatch {
                region: region.to_owned(),
                path: path.to_owned(),
                chunk: i,
                offset,
                end: offset + len,
                source_desc: source_desc.to_owned(),
                expected: expected.to_owned(),
                actual,
            })));
        }
        Ok(())
    }

    /// Decompresses chunk `i`'s `frame` into `out` (the chunk's length)
    /// and checks it ([`ChunkIndex::verify_chunk`]).
    #[allow(clippy::too_many_arguments)] // one chunk's whole identity
    pub fn decode_chunk(
        &self,
        region: &str,
        path: &str,
        uncompressed: u64,
        i: usize,
        frame: &[u8],
        out: &mut [u8],
        max_window_log: u32,
    ) -> Result<(), CosiError> {
        decompress_frame(frame, out, max_window_log).map_err(|reason| CosiError::ChunkFrame {
            region: region.to_owned(),
            path: path.to_owned(),
            chunk: i,
            reason,
        })?;
        self.verify_chunk(region, path, uncompressed, i, out, "fetched from the image")
    }
}
