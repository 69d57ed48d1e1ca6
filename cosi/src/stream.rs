//! StreamDisk core: write a COSI image onto a block device or disk-image
//! file, region by region, verifying as it goes.
//!
//! Order of checks, chosen so that a bad image writes as little as possible:
//! metadata hash and validation happen when the source is opened (nothing
//! written); then the image must fit the target, the primary GPT region is
//! read into memory and fully verified, and every partition region is
//! checked against its GPT entry — all before the first byte is written.
//! A region whose compressed hash turns out wrong is detected at its end,
//! after its bytes were written (streaming cannot know earlier).
//!
//! Partition tables last: before the first partition byte is written, both
//! GPT headers already on the target are erased (and that is fsynced); the
//! new backup and primary GPT are written only after every partition region
//! was written and verified. So a stream that fails (truncated image, bad
//! hash, I/O error, crash) never leaves a partition table that looks valid
//! over half-written partitions.
//!
//! What was written is checked, not assumed: the target's size after every
//! write and its identity after every region ([`crate::target_watch`]), then,
//! after the data is fsynced and before any table is written, every
//! region is read back ([`crate::readback`]: first and last block, or every
//! byte with [`VerifyWrites::Full`]); the tables are read back after they
//! are written and the target checked once more. Any difference is an
//! error naming the region, and the tables are erased again.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::CosiError;
use crate::gpt::{Gpt, GptEntry};
use crate::readback::{RegionRecord, VerifyWrites, drop_cached, verify_tables};
use crate::source::{CosiSource, RegionInfo, RegionKind, RegionReader};
use crate::target_watch::TargetWatch;

/// Size of one positioned write.
pub const WRITE_BUFFER_BYTES: usize = 4 << 20;
/// Sanity bound for the primary GPT region, which is buffered in memory.
const MAX_PRIMARY_GPT_BYTES: u64 = 16 << 20;

/// Progress callbacks, driven from the streaming thread.
pub trait Progress {
    /// A region starts; `total_bytes` is its uncompressed size.
    fn on_region_start(&mut self, _region: &RegionInfo, _total_bytes: u64) {}
    /// `n` more uncompressed bytes of the current region were written.
    fn on_bytes(&mut self, _n: u64) {}
    /// The region was written and verified.
    fn on_region_done(&mut self, _region: &RegionInfo) {}
    /// Reading back starts: `items` checks follow (one per partition
    /// region, one for the partition tables).
    fn on_verify_start(&mut self, _items: u64) {}
    /// One read-back check passed.
    fn on_verified(&mut self) {}
    /// Whether the writer must stop now (the daemon is shutting down):
    /// asked after every write, which then fails with
    /// [`CosiError::Cancelled`].
    fn cancelled(&self) -> bool {
        false
    }
}

/// A [`Progress`] that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;
impl Progress for NoProgress {}

/// What happened to one region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionStats {
    /// "primary-gpt" or "partition-N".
    pub name: String,
    pub path: String,
    pub target_offset: u64,
    pub compressed_bytes: u64,
    pub uncompressed_bytes: u64,
    /// Size of the partition the region went into (None for the GPT).
    pub partition_bytes: Option<u64>,
    pub elapsed: Duration,
}

/// Result of a successful [`stream_to_target`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamReport {
    /// `sha384:<hex>` of `metadata.json`.
    pub image_hash: String,
    pub disk_size: u64,
    pub target_size: u64,
    pub regions: Vec<RegionStats>,
}

fn target_err(target: &Path, action: &str, source: std::io::Error) -> CosiError {
    CosiError::Target {
        target: target.display().to_string(),
        action: action.to_owned(),
        source,
    }
}

/// Size in bytes of a block device or regular file.
pub fn target_size(target: &Path) -> Result<u64, CosiError> {
    let mut f = File::open(target).map_err(|e| target_err(target, "open", e))?;
    // Seeking to the end works for block devices, whose metadata length is 0.
    f.seek(SeekFrom::End(0))
        .map_err(|e| target_err(target, "determine size", e))
}

/// Checks that a region fits the partition it is meant for.
pub fn check_region_fits(
    info: &RegionInfo,
    number: u32,
    partition_bytes: u64,
) -> Result<(), CosiError> {
    if info.image.uncompressed_size > partition_bytes {
        return Err(CosiError::RegionTooLarge {
            path: info.image.path.clone(),
            number,
            region_size: info.image.uncompressed_size,
            partition_size: partition_bytes,
        });
    }
    Ok(())
}

/// Streams the current region into `file` at `offset`, refusing regions
/// larger than `max_len` before writing anything. Reads the region to its
/// end, so the returned stats are for a verified region.
pub fn write_region_at(
    region: &mut RegionReader<'_>,
    file: &File,
    target: &Path,
    offset: u64,
    max_len: u64,
    progress: &mut dyn Progress,
) -> Result<RegionStats, CosiError> {
    let dest = Dest {
        file,
        target,
        offset,
        max_len,
    };
    write_region(region, &dest, progress, None)
}

/// Where a region goes: `max_len` bytes at `offset` of `target`.
struct Dest<'a> {
    file: &'a File,
    target: &'a Path,
    offset: u64,
    max_len: u64,
}

/// What StreamDisk checks while a region is written: the target after
/// every write, and the record of what to read back.
struct Checks<'a> {
    watch: &'a TargetWatch,
    record: &'a mut RegionRecord,
}

fn write_region(
    region: &mut RegionReader<'_>,
    dest: &Dest<'_>,
    progress: &mut dyn Progress,
    mut checks: Option<Checks<'_>>,
) -> Result<RegionStats, CosiError> {
    let &Dest {
        file,
        target,
        offset,
        max_len,
    } = dest;
    let info = region.info().clone();
    let number = match info.kind {
        RegionKind::Partition { number } => number,
        RegionKind::PrimaryGpt => 0,
    };
    check_region_fits(&info, number, max_len)?;
    let started = Instant::now();
    progress.on_region_start(&info, info.image.uncompressed_size);
    let mut buf = vec![0u8; WRITE_BUFFER_BYTES];
    let mut written = 0u64;
    loop {
        let n = region.read_chunk(&mut buf)?;
        if n == 0 {
            break;
        }
        file.write_all_at(&buf[..n], offset + written)
            .map_err(|e| target_err(target, &format!("write at offset {}", offset + written), e))?;
        if let Some(checks) = &mut checks {
            checks.watch.check_size(
                file,
                &format!("writing {} at offset {}", info.name(), offset + written),
            )?;
            checks.record.observe(&buf[..n]);
        }
        written += n as u64;
        progress.on_bytes(n as u64);
        if progress.cancelled() {
            return Err(CosiError::Cancelled {
                what: format!(
                    "writing {} to {} after {written} bytes",
                    info.name(),
                    target.display()
                ),
            });
        }
    }
    progress.on_region_done(&info);
    Ok(RegionStats {
        name: info.name(),
        path: info.image.path.clone(),
        target_offset: offset,
        compressed_bytes: info.image.compressed_size,
        uncompressed_bytes: written,
        partition_bytes: Some(max_len),
        elapsed: started.elapsed(),
    })
}

/// Reads the (small) primary GPT region fully and verified.
fn read_primary(region: &mut RegionReader<'_>) -> Result<Vec<u8>, CosiError> {
    let info = region.info().clone();
    if info.image.uncompressed_size > MAX_PRIMARY_GPT_BYTES {
        return Err(CosiError::SizeMismatch {
            path: info.image.path,
            kind: crate::error::SizeKind::Uncompressed,
            expected: MAX_PRIMARY_GPT_BYTES,
            actual: info.image.uncompressed_size,
        });
    }
    let mut bytes = Vec::with_capacity(info.image.uncompressed_size as usize);
    let mut chunk = vec![0u8; 64 * 1024];
    // Read until the reader reports the end, which is when it verifies.
    loop {
        let n = region.read_chunk(&mut chunk)?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Ok(bytes)
}

/// Writes the COSI image of `source` onto `target` (block device or
/// disk-image file of at least `disk.size` bytes), then a backup GPT for the
/// target's size, then fsyncs; reads back what it wrote as
/// [`VerifyWrites::Sampled`]. See the module docs for the order of checks.
pub fn stream_to_target(
    source: &mut CosiSource,
    target: &Path,
    progress: &mut dyn Progress,
) -> Result<StreamReport, CosiError> {
    stream_to_target_verified(source, target, VerifyWrites::default(), progress)
}

/// [`stream_to_target`], reading back as much as `verify` says.
pub fn stream_to_target_verified(
    source: &mut CosiSource,
    target: &Path,
    verify: VerifyWrites,
    progress: &mut dyn Progress,
) -> Result<StreamReport, CosiError> {
    let disk = source.disk().clone();
    let image_hash = source.image_hash();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(target)
        .map_err(|e| target_err(target, "open for writing", e))?;
    let watch = TargetWatch::new(&file, target)?;
    let target_size = watch.size();
    if disk.size > target_size {
        return Err(CosiError::TargetTooSmall {
            target: target.display().to_string(),
            needed: disk.size,
            available: target_size,
        });
    }

    let mut regions = Vec::with_capacity(disk.gpt_regions.len());
    let started = Instant::now();
    let Some(mut first) = source.next_region()? else {
        return Err(CosiError::MissingRegion {
            path: "primary-gpt".to_owned(),
        });
    };
    let gpt_info = first.info().clone();
    progress.on_region_start(&gpt_info, gpt_info.image.uncompressed_size);
    let mut primary = read_primary(&mut first)?;
    let gpt_err = |source| CosiError::Gpt {
        path: gpt_info.image.path.clone(),
        source,
    };
    let gpt = Gpt::parse_primary(&primary, disk.lba_size).map_err(gpt_err)?;
    let on_target = gpt.for_disk_size(target_size).map_err(gpt_err)?;
    let partitions = check_partitions(source, &gpt)?;
    if on_target != gpt {
        // The target is larger than the image's disk: point the primary
        // header at the new backup location so the table stays valid.
        on_target.patch_primary(&mut primary);
    }
    // Read and verified; written last (see the module docs).
    progress.on_bytes(primary.len() as u64);
    progress.on_region_done(&gpt_info);
    regions.push(RegionStats {
        name: gpt_info.name(),
        path: gpt_info.image.path.clone(),
        target_offset: 0,
        compressed_bytes: gpt_info.image.compressed_size,
        uncompressed_bytes: primary.len() as u64,
        partition_bytes: None,
        elapsed: started.elapsed(),
    });

    erase_gpt_headers(&file, target, disk.lba_size, target_size)?;
    let mut records = Vec::with_capacity(partitions.len());
    while let Some(mut region) = source.next_region()? {
        let RegionKind::Partition { number } = region.info().kind else {
            continue;
        };
        let entry = partitions
            .iter()
            .find(|e| e.number == number)
            .ok_or_else(|| CosiError::PartitionNotInGpt {
                path: region.info().image.path.clone(),
                number,
            })?;
        let info = region.info().clone();
        let offset = entry.start_offset(disk.lba_size);
        let mut record = RegionRecord::new(info.name(), info.image.path.clone(), offset, verify);
        let dest = Dest {
            file: &file,
            target,
            offset,
            max_len: entry.size_bytes(disk.lba_size),
        };
        let stats = write_region(
            &mut region,
            &dest,
            progress,
            Some(Checks {
                watch: &watch,
                record: &mut record,
            }),
        )?;
        watch.check(&file, &format!("writing {}", stats.name))?;
        record.finish();
        records.push(record);
        regions.push(stats);
    }
    // Every partition is written and its image verified: data durable
    // first, then read back, then the tables, backup before primary.
    file.sync_all()
        .map_err(|e| target_err(target, "fsync", e))?;
    watch.check(&file, "writing the partitions")?;
    progress.on_verify_start(records.len() as u64 + 1);
    let shown = target.display().to_string();
    for record in &records {
        for (offset, len) in record.ranges() {
            drop_cached(&file, offset, len);
        }
    }
    for record in &records {
        record.verify(&file, &shown)?;
        progress.on_verified();
    }
    // After the tables, each region's first and last block once more: a
    // truncation between the read-back and the tables (which extend a
    // truncated file again) would have zeroed them.
    let tables = write_tables(&file, target, &on_target, &primary)
        .and_then(|()| verify_tables(&file, &shown, &on_target, &primary, target_size))
        .and_then(|()| watch.check(&file, "writing the partition tables"))
        .and_then(|()| {
            records.iter().try_for_each(|record| {
                for (offset, len) in record.sample_ranges() {
                    drop_cached(&file, offset, len);
                }
                record.verify_samples(&file, &shown)
            })
        });
    if let Err(err) = tables {
        // Whatever went wrong, no table may describe this disk.
        let _ = erase_gpt_headers(&file, target, disk.lba_size, target_size);
        return Err(err);
    }
    progress.on_verified();
    Ok(StreamReport {
        image_hash,
        disk_size: disk.size,
        target_size,
        regions,
    })
}

fn write_tables(
    file: &File,
    target: &Path,
    on_target: &Gpt,
    primary: &[u8],
) -> Result<(), CosiError> {
    on_target
        .write_backup(file)
        .map_err(|e| target_err(target, "write backup GPT", e))?;
    file.write_all_at(primary, 0)
        .map_err(|e| target_err(target, "write primary GPT", e))?;
    file.sync_all().map_err(|e| target_err(target, "fsync", e))
}

/// Zeroes both GPT headers of the target (LBA 1 and its last LBA) and
/// fsyncs, so no table that was there before describes the partitions
/// about to be overwritten.
fn erase_gpt_headers(
    file: &File,
    target: &Path,
    lba_size: u64,
    target_size: u64,
) -> Result<(), CosiError> {
    let zeros = vec![0u8; lba_size as usize];
    for offset in [lba_size, target_size.saturating_sub(lba_size)] {
        file.write_all_at(&zeros, offset)
            .map_err(|e| target_err(target, "erase old GPT header", e))?;
    }
    file.sync_data().map_err(|e| target_err(target, "fsync", e))
}

/// Every partition region must have a GPT entry it fits into; checked for
/// all regions before anything is written.
fn check_partitions(source: &CosiSource, gpt: &Gpt) -> Result<Vec<GptEntry>, CosiError> {
    let disk = source.disk();
    let mut out = Vec::new();
    for region in &disk.gpt_regions {
        let Some(number) = region
            .number
            .filter(|_| region.region_type == crate::metadata::RegionType::Partition)
        else {
            continue;
        };
        let entry = gpt
            .partition(number)
            .ok_or_else(|| CosiError::PartitionNotInGpt {
                path: region.image.path.clone(),
                number,
            })?;
        let size = entry.size_bytes(disk.lba_size);
        if region.image.uncompressed_size > size {
            return Err(CosiError::RegionTooLarge {
                path: region.image.path.clone(),
                number,
                region_size: region.image.uncompressed_size,
                partition_size: size,
            });
        }
        out.push(entry.clone());
    }
    Ok(out)
}
