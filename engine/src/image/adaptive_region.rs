//! One region of an adaptive update (`adaptive`): each chunk of the new
//! image settled in the cheapest way that proves itself against the chunk
//! index, then the whole region read back and checked.
//!
//! 1. In place: the destination (the inactive volume, which holds an
//!    earlier image) already has the chunk at its offset: nothing written.
//! 2. Zeros: an all-zero chunk is written as zeros (a fresh file keeps the
//!    hole), never fetched.
//! 3. Local copies (`adaptive_scan`): the local sources (the active
//!    volume) are read once; a chunk still wanted is found there at any
//!    4 KiB offset through its anchor, or at chunk-size multiples in an
//!    index without anchors, and the window that hashed to it is written
//!    where it is wanted. The active root is mounted read-write: what is
//!    written is what was hashed, whatever changes on it meanwhile.
//! 4. Fetch: the frames of what is left, adjacent ones merged into one
//!    range request, each decompressed alone and checked before it is
//!    written (to every place that wants it).
//!
//! Then the destination is synced; `adaptive::verify_region`, once every
//! region is written, drops its cached pages and reads every chunk back and
//! checks it: what is on the disk is the image.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use trident_cosi::chunk_index::{ChunkIndex, sha256_hex};
use trident_cosi::{CosiError, RangeReader, RegionInfo};
use trident_host::{ResultExt, Subkind, TridentError};
use trident_telemetry::progress::Phase;

use super::cosi_error::CosiResultExt;
use crate::interrupt::Interrupt;

/// Compressed bytes asked for in one range request at most.
const MAX_RANGE_BYTES: u64 = 8 << 20;

/// Where a region goes: `size` bytes of `path` from `offset`.
#[derive(Debug, Clone)]
pub struct Dest {
    /// The device id (or a name) for phases and logs.
    pub id: String,
    pub path: PathBuf,
    pub offset: u64,
    pub size: u64,
    /// Whether what is there may already be the image's (an earlier
    /// image in the inactive volume); false for a file made for the copy.
    pub in_place: bool,
}

/// A local source of chunks: `size` bytes of `path` from `offset`.
#[derive(Debug, Clone)]
pub struct Local {
    /// "root-a (the active volume)".
    pub label: String,
    pub path: PathBuf,
    pub offset: u64,
    pub size: u64,
}

/// One region to write adaptively.
#[derive(Debug, Clone)]
pub struct Job {
    pub info: RegionInfo,
    pub dest: Dest,
    pub locals: Vec<Local>,
}

/// Uncompressed bytes settled each way, and what it cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub in_place: u64,
    pub zeros: u64,
    pub copied: u64,
    /// Uncompressed bytes written from fetched frames.
    pub fetched: u64,
    /// Compressed bytes of the frames fetched.
    pub frame_bytes: u64,
}

impl Tally {
    pub fn reused(&self) -> u64 {
        self.in_place + self.zeros + self.copied
    }

    pub fn add(&mut self, other: &Tally) {
        self.in_place += other.in_place;
        self.zeros += other.zeros;
        self.copied += other.copied;
        self.fetched += other.fetched;
        self.frame_bytes += other.frame_bytes;
    }
}

/// The progress phases a region's settled bytes count in: the
/// operation's `download` (all of them, once), its `write/<id>`, and one
/// of `download/reused` and `download/fetched`.
#[derive(Debug)]
pub struct Phases<'a> {
    pub download: &'a Phase,
    pub write: &'a Phase,
    pub reused: &'a Phase,
    pub fetched: &'a Phase,
}

/// The image side of one region: its index, where its frames are, how
/// to decode them.
#[derive(Debug)]
pub struct Image<'a> {
    pub index: &'a ChunkIndex,
    pub ranges: &'a RangeReader,
    /// Archive offset of the region member's data.
    pub base: u64,
    pub max_window_log: u32,
}

pub(super) struct Region<'a> {
    pub(super) job: &'a Job,
    pub(super) image: &'a Image<'a>,
    file: File,
    phases: &'a Phases<'a>,
    interrupt: &'a Interrupt,
    pub(super) tally: Tally,
    /// Chunk hash → the chunks still wanted that have it.
    pub(super) wanted: BTreeMap<String, Vec<usize>>,
}

/// Writes `job`'s region (steps 1 to 4 of the module); returns how.
/// `adaptive::verify_region` checks it afterwards.
pub fn write_region(
    job: &Job,
    image: &Image<'_>,
    phases: &Phases<'_>,
    interrupt: &Interrupt,
) -> Result<Tally, TridentError> {
    let info = &job.info;
    let chunks = image
        .index
        .region(&info.image.path)
        .map(|r| r.chunks.as_slice())
        .unwrap_or_default();
    let dest = &job.dest;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&dest.path)
        .structured_msg(
            Subkind::WriteImage,
            format!("Cannot open {}", dest.path.display()),
        )?;
    let mut region = Region {
        job,
        image,
        file,
        phases,
        interrupt,
        tally: Tally::default(),
        wanted: BTreeMap::new(),
    };
    for (j, chunk) in chunks.iter().enumerate() {
        region
            .wanted
            .entry(chunk.sha256.clone())
            .or_default()
            .push(j);
    }
    if dest.in_place {
        region.settle_in_place()?;
    }
    region.settle_zeros()?;
    for local in &job.locals {
        if region.wanted.is_empty() {
            break;
        }
        region.copy_from(local)?;
    }
    region.fetch()?;
    region
        .file
        .sync_all()
        .structured_msg(Subkind::WriteImage, format!("fsync {}", dest.id))?;
    Ok(region.tally)
}

impl Region<'_> {
    pub(super) fn uncompressed(&self) -> u64 {
        self.job.info.image.uncompressed_size
    }

    pub(super) fn span(&self, j: usize) -> (u64, u64) {
        self.image.index.chunk_span(j, self.uncompressed())
    }

    pub(super) fn check_interrupt(&self) -> Result<(), TridentError> {
        if self.interrupt.requested() {
            return Err(CosiError::Cancelled {
                what: format!("writing {}", self.job.info.name()),
            })
            .cosi();
        }
        Ok(())
    }

    /// Forgets chunk `j` from what is wanted.
    fn unwant(&mut self, hash: &str, j: usize) {
        if let Some(list) = self.wanted.get_mut(hash) {
            list.retain(|x| *x != j);
            if list.is_empty() {
                self.wanted.remove(hash);
            }
        }
    }

    fn read_dest(&self, j: usize, buf: &mut Vec<u8>) -> Result<(), TridentError> {
        let (offset, len) = self.span(j);
        buf.resize(len as usize, 0);
        let dest = &self.job.dest;
        self.file
            .read_exact_at(buf, dest.offset + offset)
            .structured_msg(
                Subkind::WriteImage,
                format!("{}: read at offset {offset}", dest.id),
            )
    }

    pub(super) fn write_dest(&self, j: usize, data: &[u8]) -> Result<(), TridentError> {
        let (offset, _) = self.span(j);
        let dest = &self.job.dest;
        self.file
            .write_all_at(data, dest.offset + offset)
            .structured_msg(
                Subkind::WriteImage,
                format!("{}: write at offset {offset}", dest.id),
            )
    }

    pub(super) fn settled(&self, len: u64, reused: bool) {
        self.phases.download.add(len);
        self.phases.write.add(len);
        if reused {
            self.phases.reused.add(len);
        } else {
            self.phases.fetched.add(len);
        }
    }

    fn settle_in_place(&mut self) -> Result<(), TridentError> {
        let mut buf = Vec::new();
        let pending: Vec<(String, usize)> = self.pending();
        for (hash, j) in pending {
            self.check_interrupt()?;
            self.read_dest(j, &mut buf)?;
            if sha256_hex(&buf) == hash {
                self.unwant(&hash, j);
                self.tally.in_place += buf.len() as u64;
                self.settled(buf.len() as u64, true);
            }
        }
        Ok(())
    }

    fn pending(&self) -> Vec<(String, usize)> {
        let mut all: Vec<(String, usize)> = self
            .wanted
            .iter()
            .flat_map(|(h, js)| js.iter().map(move |j| (h.clone(), *j)))
            .collect();
        all.sort_by_key(|(_, j)| *j);
        all
    }

    fn settle_zeros(&mut self) -> Result<(), TridentError> {
        let size = self.image.index.chunk_size as usize;
        let zeros = vec![0u8; size];
        let pending = self.pending();
        for (hash, j) in pending {
            let (_, len) = self.span(j);
            let len = len as usize;
            if sha256_hex(&zeros[..len]) != hash {
                continue;
            }
            if self.job.dest.in_place {
                self.write_dest(j, &zeros[..len])?;
            }
            self.unwant(&hash, j);
            self.tally.zeros += len as u64;
            self.settled(len as u64, true);
        }
        Ok(())
    }

    /// Step 4: one frame per hash still wanted, adjacent frames merged.
    fn fetch(&mut self) -> Result<(), TridentError> {
        let path = self.job.info.image.path.clone();
        let Some(chunks) = self.image.index.region(&path).map(|r| r.chunks.clone()) else {
            return Ok(());
        };
        let mut firsts: Vec<usize> = self
            .wanted
            .values()
            .filter_map(|js| js.first().copied())
            .collect();
        firsts.sort_unstable();
        let mut runs: Vec<Vec<usize>> = Vec::new();
        for j in firsts {
            match runs.last_mut() {
                Some(run)
                    if run.last().is_some_and(|l| l + 1 == j)
                        && run.iter().map(|i| chunks[*i].size).sum::<u64>() + chunks[j].size
                            <= MAX_RANGE_BYTES =>
                {
                    run.push(j)
                }
                _ => runs.push(vec![j]),
            }
        }
        let name = self.job.info.name();
        let mut data = Vec::new();
        for run in runs {
            self.check_interrupt()?;
            let first = &chunks[run[0]];
            let total: u64 = run.iter().map(|i| chunks[*i].size).sum();
            let mut frames = vec![0u8; total as usize];
            self.image
                .ranges
                .read_exact_at(self.image.base + first.offset, &mut frames)
                .cosi()?;
            self.tally.frame_bytes += total;
            for j in run {
                let chunk = &chunks[j];
                let at = (chunk.offset - first.offset) as usize;
                let frame = &frames[at..at + chunk.size as usize];
                let (_, len) = self.span(j);
                data.resize(len as usize, 0);
                self.image
                    .index
                    .decode_chunk(
                        &name,
                        &path,
                        self.uncompressed(),
                        j,
                        frame,
                        &mut data,
                        self.image.max_window_log,
                    )
                    .cosi()?;
                for p in self.wanted.remove(&chunk.sha256).unwrap_or_default() {
                    self.write_dest(p, &data)?;
                    self.tally.fetched += len;
                    self.settled(len, false);
                }
            }
        }
        Ok(())
    }
}
