//! Read-back verification of what [`crate::stream_to_target`] wrote: the
//! target must hold what the image says, whatever happened to it while it
//! was written (another writer, a replaced or truncated file, a device
//! that lost writes).
//!
//! While a region is written, [`RegionRecord`] keeps its first and last
//! [`SAMPLE_BLOCK`] bytes and, with [`VerifyWrites::Full`], a CRC-32 of
//! every [`CHUNK_BYTES`] chunk. After the data is fsynced, the cached pages
//! of what is about to be read are dropped (`POSIX_FADV_DONTNEED`), so the
//! read comes from the device rather than from the page cache that was just
//! written, and each region is compared; after the tables are written,
//! each region's first and last block once more. CRC-32 is enough here: the image
//! itself was already checked against its SHA-384 while it streamed; this
//! only compares the target with bytes we had in memory (a random change
//! escapes one chunk's check with probability 2^-32).

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::error::CosiError;
use crate::gpt::Gpt;

/// How much of what was written is read back and compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VerifyWrites {
    /// Both partition tables and every region's first and last block.
    #[default]
    Sampled,
    /// Every byte written (and the partition tables).
    Full,
}

/// Size of the first and last block compared in every mode (the common
/// file system block).
pub const SAMPLE_BLOCK: usize = 4096;
/// Unit of the full comparison: one CRC-32 per chunk of a region.
pub const CHUNK_BYTES: u64 = 4 << 20;

/// What one written region must read back as.
#[derive(Debug, Clone)]
pub struct RegionRecord {
    /// "partition-N".
    pub name: String,
    /// The region's image path in the COSI archive.
    pub path: String,
    /// Byte offset of the region on the target.
    pub offset: u64,
    /// Bytes written.
    pub len: u64,
    first: Vec<u8>,
    last: Vec<u8>,
    /// `Full` only: CRC-32 of each chunk, and the running one.
    chunks: Option<Vec<u32>>,
    running: crc32fast::Hasher,
}

impl RegionRecord {
    pub fn new(name: String, path: String, offset: u64, mode: VerifyWrites) -> Self {
        RegionRecord {
            name,
            path,
            offset,
            len: 0,
            first: Vec::with_capacity(SAMPLE_BLOCK),
            last: Vec::with_capacity(SAMPLE_BLOCK),
            chunks: (mode == VerifyWrites::Full).then(Vec::new),
            running: crc32fast::Hasher::new(),
        }
    }

    /// Notes `bytes`, written right after the bytes noted so far.
    pub fn observe(&mut self, bytes: &[u8]) {
        if self.first.len() < SAMPLE_BLOCK {
            let take = (SAMPLE_BLOCK - self.first.len()).min(bytes.len());
            self.first.extend_from_slice(&bytes[..take]);
        }
        if bytes.len() >= SAMPLE_BLOCK {
            self.last.clear();
            self.last
                .extend_from_slice(&bytes[bytes.len() - SAMPLE_BLOCK..]);
        } else {
            self.last.extend_from_slice(bytes);
            let excess = self.last.len().saturating_sub(SAMPLE_BLOCK);
            self.last.drain(..excess);
        }
        if let Some(chunks) = &mut self.chunks {
            let mut rest = bytes;
            while !rest.is_empty() {
                let in_chunk = (self.len % CHUNK_BYTES) as usize;
                let take = (CHUNK_BYTES as usize - in_chunk).min(rest.len());
                self.running.update(&rest[..take]);
                self.len += take as u64;
                rest = &rest[take..];
                if self.len.is_multiple_of(CHUNK_BYTES) {
                    chunks.push(std::mem::take(&mut self.running).finalize());
                }
            }
        } else {
            self.len += bytes.len() as u64;
        }
    }

    /// Ends the region: the last partial chunk gets its CRC.
    pub fn finish(&mut self) {
        if let Some(chunks) = &mut self.chunks
            && !self.len.is_multiple_of(CHUNK_BYTES)
        {
            chunks.push(std::mem::take(&mut self.running).finalize());
        }
    }

    /// The byte ranges (offset, len) on the target this record will read.
    pub fn ranges(&self) -> Vec<(u64, u64)> {
        if self.chunks.is_some() {
            return vec![(self.offset, self.len)];
        }
        self.sample_ranges().to_vec()
    }

    /// Reads the region back from `file` and compares (every chunk with
    /// `Full`, else [`verify_samples`](Self::verify_samples)).
    pub fn verify(&self, file: &File, target: &str) -> Result<(), CosiError> {
        self.verify_samples(file, target)?;
        let Some(chunks) = &self.chunks else {
            return Ok(());
        };
        let mut chunk = vec![0u8; CHUNK_BYTES.min(self.len) as usize];
        for (i, expected) in chunks.iter().enumerate() {
            let at = i as u64 * CHUNK_BYTES;
            let len = CHUNK_BYTES.min(self.len - at);
            let bytes = &mut chunk[..len as usize];
            self.read(file, target, self.offset + at, bytes)?;
            if crc32fast::hash(bytes) != *expected {
                return Err(self.mismatch(target, self.offset + at, len, "chunk"));
            }
        }
        Ok(())
    }

    /// The region's first and last block only.
    pub fn verify_samples(&self, file: &File, target: &str) -> Result<(), CosiError> {
        let mut buf = vec![0u8; SAMPLE_BLOCK];
        let first = &mut buf[..self.first.len()];
        self.read(file, target, self.offset, first)?;
        if *first != self.first[..] {
            return Err(self.mismatch(target, self.offset, self.first.len() as u64, "first block"));
        }
        let last_at = self.offset + self.len - self.last.len() as u64;
        let last = &mut buf[..self.last.len()];
        self.read(file, target, last_at, last)?;
        if *last != self.last[..] {
            return Err(self.mismatch(target, last_at, self.last.len() as u64, "last block"));
        }
        Ok(())
    }

    /// The byte ranges of [`verify_samples`](Self::verify_samples).
    pub fn sample_ranges(&self) -> [(u64, u64); 2] {
        let last = self.last.len() as u64;
        [
            (self.offset, self.first.len() as u64),
            (self.offset + self.len - last, last),
        ]
    }

    fn mismatch(&self, target: &str, offset: u64, len: u64, what: &str) -> CosiError {
        CosiError::ReadBackMismatch {
            target: target.to_owned(),
            region: self.name.clone(),
            path: self.path.clone(),
            offset,
            len,
            what: what.to_owned(),
        }
    }

    fn read(
        &self,
        file: &File,
        target: &str,
        offset: u64,
        buf: &mut [u8],
    ) -> Result<(), CosiError> {
        file.read_exact_at(buf, offset)
            .map_err(|source| CosiError::Target {
                target: target.to_owned(),
                action: format!("read back {} at offset {offset}", self.name),
                source,
            })
    }
}

/// Drops the cached pages of `len` bytes at `offset`, so the next read of
/// them comes from the device. Advice only: a file system that keeps them
/// (tmpfs) is read from memory, which is then what the file holds.
pub fn drop_cached(file: &File, offset: u64, len: u64) {
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    let _ = nix::fcntl::posix_fadvise(
        file,
        offset,
        len,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    );
}

/// Reads both tables back from the device: byte for byte what was written,
/// and valid together for the target's size.
pub fn verify_tables(
    file: &File,
    target: &str,
    on_target: &Gpt,
    primary: &[u8],
    target_size: u64,
) -> Result<(), CosiError> {
    let (backup_at, backup) = on_target.backup_bytes();
    let tables = [
        ("primary-gpt", 0, primary),
        ("backup-gpt", backup_at, backup.as_slice()),
    ];
    for (name, offset, expected) in tables {
        let len = expected.len() as u64;
        drop_cached(file, offset, len);
        let mut actual = vec![0u8; expected.len()];
        file.read_exact_at(&mut actual, offset)
            .map_err(|source| CosiError::Target {
                target: target.to_owned(),
                action: format!("read back {name}"),
                source,
            })?;
        if actual != expected {
            return Err(CosiError::ReadBackMismatch {
                target: target.to_owned(),
                region: name.to_owned(),
                path: name.to_owned(),
                offset,
                len,
                what: "partition table".to_owned(),
            });
        }
    }
    Gpt::read_and_verify(file, on_target.lba_size, target_size).map_err(|e| {
        CosiError::ReadBackMismatch {
            target: target.to_owned(),
            region: "primary-gpt".to_owned(),
            path: format!("primary-gpt ({e})"),
            offset: 0,
            len: primary.len() as u64,
            what: "partition table".to_owned(),
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn record(mode: VerifyWrites, data: &[u8], pieces: &[usize]) -> RegionRecord {
        let mut r = RegionRecord::new("partition-1".into(), "p1".into(), 0, mode);
        let mut at = 0;
        for &n in pieces {
            r.observe(&data[at..at + n]);
            at += n;
        }
        r.observe(&data[at..]);
        r.finish();
        r
    }

    #[test]
    fn first_and_last_blocks_are_kept_across_uneven_writes() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        let r = record(VerifyWrites::Sampled, &data, &[100, 5000, 3, 9000]);
        assert_eq!(r.first, data[..SAMPLE_BLOCK]);
        assert_eq!(r.last, data[data.len() - SAMPLE_BLOCK..]);
        assert_eq!(r.len, data.len() as u64);
        assert_eq!(
            r.ranges(),
            vec![(0, 4096), (data.len() as u64 - 4096, 4096)]
        );
    }

    #[test]
    fn full_mode_finds_a_changed_byte_in_the_middle_and_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let data: Vec<u8> = (0..(CHUNK_BYTES as usize * 2 + 777))
            .map(|i| (i % 253) as u8)
            .collect();
        std::fs::write(&path, &data).unwrap();
        let file = File::open(&path).unwrap();
        let full = record(VerifyWrites::Full, &data, &[1 << 20, 3 << 20, 12345]);
        let sampled = record(VerifyWrites::Sampled, &data, &[1 << 20]);
        full.verify(&file, "t").unwrap();
        let mut changed = data.clone();
        changed[CHUNK_BYTES as usize + 10] ^= 0xFF;
        std::fs::write(&path, &changed).unwrap();
        let file = File::open(&path).unwrap();
        // Sampled reads only the first and last block: the middle passes.
        sampled.verify(&file, "t").unwrap();
        let err = full.verify(&file, "t").unwrap_err();
        assert!(
            matches!(err, CosiError::ReadBackMismatch { offset, .. } if offset == CHUNK_BYTES),
            "{err}"
        );
        assert!(err.to_string().contains("partition-1"), "{err}");
    }
}
