//! Step 3 of an adaptive region (`adaptive_region`): the chunks still
//! wanted, found in a local source (the active volume) wherever they are.
//!
//! A grown file moves every file laid out after it by a whole number of
//! file-system blocks, so a chunk of the new image is often in the local
//! volume, but not at a multiple of the chunk size. Hashing a chunk-sized
//! window at every 4 KiB offset would cost the chunk size ÷ 4 KiB times
//! the volume (256× at 1 MiB). Instead the volume is read once, in
//! chunk-sized reads at chunk-size multiples, and every 4 KiB block of it
//! is hashed once and looked up among the wanted chunks' anchors (the
//! SHA-256 of one block of each chunk and its offset, from the index). An
//! anchor names a candidate only: the chunk-sized window it implies is
//! hashed whole and used only if it is the chunk's SHA-256; that window is
//! the buffer written, so a read-write volume changing meanwhile cannot
//! put unhashed bytes into the image.
//!
//! Windows hashed in vain are bounded, since a block may be common (a
//! header every file of a package has): an anchor is given up after
//! [`MAX_MISSES_PER_ANCHOR`] misses, and all anchors after misses adding
//! up to the source's size. An index without anchors (written before
//! them) is matched as before: whole chunk-sized blocks at chunk-size
//! multiples.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use sha2::{Digest, Sha256};
use trident_cosi::chunk_index::{ANCHOR_BLOCK, sha256_hex};
use trident_host::TridentError;

use super::adaptive_region::{Local, Region};

/// Misses after which an anchor's block is taken for a common one.
const MAX_MISSES_PER_ANCHOR: u32 = 16;

/// The wanted chunks' anchors: a block's SHA-256 → (chunk, the block's
/// offset in it).
type AnchorMap = HashMap<[u8; 32], Vec<(usize, u64)>>;

/// One source's scan: its file, the anchors and what was spent in vain.
struct Scan<'a> {
    local: &'a Local,
    file: File,
    anchors: AnchorMap,
    misses: HashMap<[u8; 32], u32>,
    missed_bytes: u64,
    window: Vec<u8>,
}

impl Region<'_> {
    /// Step 3 with one local source; a source that cannot be read is
    /// skipped (its chunks are fetched instead).
    pub(super) fn copy_from(&mut self, local: &Local) -> Result<(), TridentError> {
        let file = match File::open(&local.path) {
            Ok(file) => file,
            Err(error) => {
                tracing::warn!(source = %local.label, %error, "cannot read a local source of chunks: its chunks are fetched");
                return Ok(());
            }
        };
        let mut scan = Scan {
            local,
            file,
            anchors: self.anchor_map(),
            misses: HashMap::new(),
            missed_bytes: 0,
            window: Vec::new(),
        };
        // Chunks without an anchor are looked for where they were (decided
        // once: asking per block would walk every wanted chunk each time).
        let aligned = self.wants_unanchored();
        let size = self.image.index.chunk_size;
        let mut buf = vec![0u8; size as usize];
        for k in 0..local.size.div_ceil(size) {
            if self.wanted.is_empty() {
                break;
            }
            self.check_interrupt()?;
            let at = k * size;
            let len = size.min(local.size - at) as usize;
            if let Err(error) = scan.file.read_exact_at(&mut buf[..len], local.offset + at) {
                tracing::warn!(source = %local.label, %error, "reading a local source of chunks failed: the rest is fetched");
                return Ok(());
            }
            if aligned {
                self.place(&buf[..len], &sha256_hex(&buf[..len]))?;
            }
            if !scan.anchors.is_empty() {
                self.match_anchors(&mut scan, at, &buf[..len])?;
            }
        }
        self.copy_short_last(&scan)?;
        tracing::debug!(source = %local.label, missed_bytes = scan.missed_bytes,
            "local source scanned");
        Ok(())
    }

    /// The anchors of the chunks still wanted.
    fn anchor_map(&self) -> AnchorMap {
        let mut map = AnchorMap::new();
        let Some(region) = self.image.index.region(&self.job.info.image.path) else {
            return map;
        };
        for js in self.wanted.values() {
            for &j in js {
                let Some(anchor) = region.chunks.get(j).and_then(|c| c.anchor.as_ref()) else {
                    continue;
                };
                let mut key = [0u8; 32];
                // The index was validated: 64 hex digits.
                if hex::decode_to_slice(&anchor.sha256, &mut key).is_ok() {
                    map.entry(key).or_default().push((j, anchor.offset));
                }
            }
        }
        map
    }

    /// Whether a chunk without an anchor is still wanted.
    fn wants_unanchored(&self) -> bool {
        let Some(region) = self.image.index.region(&self.job.info.image.path) else {
            return false;
        };
        self.wanted
            .values()
            .flatten()
            .any(|&j| region.chunks.get(j).is_some_and(|c| c.anchor.is_none()))
    }

    /// Whether chunk `j` is still wanted; its hash if so.
    fn wanted_hash(&self, j: usize) -> Option<String> {
        let chunk = self
            .image
            .index
            .region(&self.job.info.image.path)?
            .chunks
            .get(j)?;
        self.wanted
            .get(&chunk.sha256)
            .filter(|js| js.contains(&j))
            .map(|_| chunk.sha256.clone())
    }

    /// Every block of `buf` (the source's bytes from `at`) looked up among
    /// the anchors; each candidate window verified whole before it is used.
    fn match_anchors(
        &mut self,
        scan: &mut Scan<'_>,
        at: u64,
        buf: &[u8],
    ) -> Result<(), TridentError> {
        let block = ANCHOR_BLOCK as usize;
        for (q, bytes) in buf.chunks_exact(block).enumerate() {
            if self.wanted.is_empty() {
                return Ok(());
            }
            // Zero blocks are never anchors (`mkcosi` skips them): not hashed.
            if bytes.iter().all(|b| *b == 0) {
                continue;
            }
            let key: [u8; 32] = Sha256::digest(bytes).into();
            let Some(candidates) = scan.anchors.get(&key).cloned() else {
                continue;
            };
            let p = at + (q * block) as u64;
            for (j, offset) in candidates {
                let Some(hash) = self.wanted_hash(j) else {
                    continue;
                };
                let (_, len) = self.span(j);
                let Some(start) = p.checked_sub(offset).filter(|s| s + len <= scan.local.size)
                else {
                    continue;
                };
                let misses = scan.misses.get(&key).copied().unwrap_or(0);
                if misses >= MAX_MISSES_PER_ANCHOR || scan.missed_bytes >= scan.local.size {
                    continue;
                }
                // The window from the buffer when it lies there (the aligned
                // case), else read again (from the page cache, mostly).
                let inside = start >= at && start + len <= at + buf.len() as u64;
                let window: &[u8] = if inside {
                    &buf[(start - at) as usize..(start - at + len) as usize]
                } else {
                    scan.window.resize(len as usize, 0);
                    if scan
                        .file
                        .read_exact_at(&mut scan.window, scan.local.offset + start)
                        .is_err()
                    {
                        continue;
                    }
                    &scan.window
                };
                if sha256_hex(window) == hash {
                    self.place(window, &hash)?;
                } else {
                    *scan.misses.entry(key).or_default() += 1;
                    scan.missed_bytes += len;
                }
            }
        }
        Ok(())
    }

    /// A short last chunk without an anchor is looked for where it was.
    fn copy_short_last(&mut self, scan: &Scan<'_>) -> Result<(), TridentError> {
        let Some(region) = self.image.index.region(&self.job.info.image.path) else {
            return Ok(());
        };
        let Some(last) = region.chunks.len().checked_sub(1) else {
            return Ok(());
        };
        if region.chunks[last].anchor.is_some() || self.wanted_hash(last).is_none() {
            return Ok(());
        }
        let (offset, len) = self.span(last);
        if len < self.image.index.chunk_size && offset + len <= scan.local.size {
            let mut data = vec![0u8; len as usize];
            if scan
                .file
                .read_exact_at(&mut data, scan.local.offset + offset)
                .is_ok()
            {
                let hash = sha256_hex(&data);
                self.place(&data, &hash)?;
            }
        }
        Ok(())
    }

    /// Writes `data` (whose hash is `hash`) wherever it is wanted.
    pub(super) fn place(&mut self, data: &[u8], hash: &str) -> Result<(), TridentError> {
        let Some(js) = self.wanted.remove(hash) else {
            return Ok(());
        };
        for j in js {
            self.write_dest(j, data)?;
            self.tally.copied += data.len() as u64;
            self.settled(data.len() as u64, true);
        }
        Ok(())
    }
}
