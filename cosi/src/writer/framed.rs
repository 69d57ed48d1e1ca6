//! Compressing a region as independent zstd frames of one uncompressed
//! size, for an indexed COSI ([`crate::chunk_index`]): each frame is
//! decompressible alone (fetched by a range request), and all of them
//! together are one ordinary zstd stream.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256, Sha384};

use super::WriterError;
use super::pack::{CHUNK, io_err};
use crate::chunk_index::{ANCHOR_BLOCK, Anchor, Chunk, sha256_hex};

/// A region compressed frame by frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Framed {
    pub(super) compressed_size: u64,
    /// SHA-384 of all the frames (the region's `sha384` in the metadata).
    pub(super) sha384: String,
    pub(super) uncompressed_size: u64,
    pub(super) chunks: Vec<Chunk>,
}

/// Fills `buf` from `data` as far as it goes; the bytes read (less than
/// `buf.len()` only at the end of `data`).
fn read_full(data: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match data.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The anchor of `chunk` ([`Anchor`]): its first whole block that is not
/// all zeros and whose content is in no earlier block of the region
/// (`seen`, the first 8 bytes of every earlier block's SHA-256, which this
/// extends), else its first block that is not all zeros (a common block
/// only costs the update some windows hashed in vain), else none.
fn pick_anchor(chunk: &[u8], seen: &mut HashSet<[u8; 8]>) -> Option<Anchor> {
    let mut fallback = None;
    let mut unique = None;
    for (k, block) in chunk.chunks_exact(ANCHOR_BLOCK as usize).enumerate() {
        if block.iter().all(|b| *b == 0) {
            continue;
        }
        let digest = Sha256::digest(block);
        let mut key = [0u8; 8];
        key.copy_from_slice(&digest[..8]);
        let offset = k as u64 * ANCHOR_BLOCK;
        let anchor = || Anchor {
            offset,
            sha256: hex::encode(digest),
        };
        if seen.insert(key) && unique.is_none() {
            unique = Some(anchor());
        }
        if fallback.is_none() {
            fallback = Some(anchor());
        }
    }
    unique.or(fallback)
}

/// Compresses `data` into `tmp` as one zstd frame (with its checksum) per
/// `chunk_size` bytes. An empty region is one empty frame and no chunk.
pub(super) fn compress_framed(
    mut data: impl Read,
    tmp: &Path,
    level: i32,
    chunk_size: u64,
) -> Result<Framed, WriterError> {
    let err = io_err(tmp);
    let chunk_len = usize::try_from(chunk_size)
        .map_err(|_| WriterError::Spec(format!("chunk size {chunk_size} is too large")))?;
    let mut out = BufWriter::with_capacity(CHUNK, File::create(tmp).map_err(&err)?);
    let mut compressor = zstd::bulk::Compressor::new(level).map_err(&err)?;
    compressor.include_checksum(true).map_err(&err)?;
    let mut hasher = Sha384::new();
    let mut buf = vec![0u8; chunk_len];
    let (mut compressed, mut uncompressed) = (0u64, 0u64);
    let mut chunks = Vec::new();
    let mut seen = HashSet::new();
    loop {
        let n = read_full(&mut data, &mut buf).map_err(&err)?;
        if n == 0 && uncompressed > 0 {
            break;
        }
        let frame = compressor.compress(&buf[..n]).map_err(&err)?;
        out.write_all(&frame).map_err(&err)?;
        hasher.update(&frame);
        if n > 0 {
            chunks.push(Chunk {
                sha256: sha256_hex(&buf[..n]),
                offset: compressed,
                size: frame.len() as u64,
                anchor: pick_anchor(&buf[..n], &mut seen),
            });
        }
        compressed += frame.len() as u64;
        uncompressed += n as u64;
        if n < chunk_len {
            break;
        }
    }
    out.flush().map_err(&err)?;
    Ok(Framed {
        compressed_size: compressed,
        sha384: hex::encode(hasher.finalize()),
        uncompressed_size: uncompressed,
        chunks,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn frames_are_one_zstd_stream_and_each_decompresses_alone() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("r");
        let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let framed = compress_framed(&data[..], &tmp, 3, 16 << 10).unwrap();
        assert_eq!(framed.uncompressed_size, data.len() as u64);
        assert_eq!(framed.chunks.len(), 3);
        let bytes = std::fs::read(&tmp).unwrap();
        assert_eq!(bytes.len() as u64, framed.compressed_size);
        assert_eq!(zstd::decode_all(&bytes[..]).unwrap(), data);
        for (i, c) in framed.chunks.iter().enumerate() {
            let want = &data[i * (16 << 10)..((i + 1) * (16 << 10)).min(data.len())];
            let frame = &bytes[c.offset as usize..(c.offset + c.size) as usize];
            let mut out = vec![0u8; want.len()];
            crate::chunk_index::decompress_frame(frame, &mut out, 27).unwrap();
            assert_eq!(out, want);
            assert_eq!(c.sha256, sha256_hex(want));
        }
    }

    #[test]
    fn an_anchor_is_a_nonzero_block_seen_nowhere_earlier_in_the_region() {
        let block = ANCHOR_BLOCK as usize;
        let mut data = vec![0u8; 8 * block];
        // Chunk 0: a zero block, then A. Chunk 1: A again, then B.
        data[block..2 * block].fill(0xa1);
        data[4 * block..5 * block].fill(0xa1);
        data[5 * block..6 * block].fill(0xb2);
        let dir = tempfile::tempdir().unwrap();
        let framed =
            compress_framed(&data[..], &dir.path().join("r"), 3, 4 * ANCHOR_BLOCK).unwrap();
        let a0 = framed.chunks[0].anchor.clone().unwrap();
        assert_eq!(a0.offset, ANCHOR_BLOCK);
        assert_eq!(a0.sha256, sha256_hex(&data[block..2 * block]));
        let a1 = framed.chunks[1].anchor.clone().unwrap();
        assert_eq!(
            a1.offset, ANCHOR_BLOCK,
            "A was seen in chunk 0: B is the anchor"
        );
        assert_eq!(a1.sha256, sha256_hex(&data[5 * block..6 * block]));
    }

    #[test]
    fn an_all_zero_chunk_has_no_anchor() {
        let dir = tempfile::tempdir().unwrap();
        let data = vec![0u8; 2 * ANCHOR_BLOCK as usize];
        let framed = compress_framed(&data[..], &dir.path().join("r"), 3, ANCHOR_BLOCK).unwrap();
        assert!(framed.chunks.iter().all(|c| c.anchor.is_none()));
    }

    #[test]
    fn an_empty_region_is_one_empty_frame_and_no_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("r");
        let framed = compress_framed(&[][..], &tmp, 3, 16 << 10).unwrap();
        assert!(framed.chunks.is_empty());
        assert!(framed.compressed_size > 0);
        assert!(
            zstd::decode_all(&std::fs::read(&tmp).unwrap()[..])
                .unwrap()
                .is_empty()
        );
    }
}
