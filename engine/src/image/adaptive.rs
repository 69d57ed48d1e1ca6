//! Adaptive A/B updates: an indexed COSI (`trident_cosi::chunk_index`)
//! written into the inactive volume chunk by chunk, each chunk taken from
//! where it already is (the inactive volume itself, the active volume,
//! zeros) and only the rest fetched by range requests (`adaptive_region`).
//! Every chunk, reused or fetched, is checked against the index, which
//! `metadata.json` pins, which the Host Configuration pins.
//!
//! What streams whole instead, as before: an image without an index, a
//! server that does not serve byte ranges (a warning in the operation's
//! records), an `oci://` source.

use trident_cosi::{CosiError, CosiSource, ExpectedHash, RangeReader, SourceOptions};
use trident_host::redact::url::redact_url;
use trident_host::{ResultExt, Subkind, TridentError};
use trident_telemetry::progress::{Phase, Unit};

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use trident_cosi::RegionKind;
use trident_cosi::chunk_index::ChunkIndex;

use super::adaptive_region::{Dest, Image, Job, Local, Phases, Tally, write_region};
use super::cosi_error::CosiResultExt;
use super::esp_copy;
use super::targets::ImageTargets;
use crate::block_device::ResolvedDevice;
use crate::interrupt::Interrupt;

/// An indexed image opened by its head only.
#[derive(Debug)]
pub struct Indexed {
    pub source: CosiSource,
    pub ranges: RangeReader,
}

/// Opens `url`'s marker, metadata and chunk index by range requests, all
/// checked (the metadata against `expected`, the index against the
/// metadata) before anything is written. `None`: the image streams whole
/// (no index, a server without ranges, a scheme without them), logged.
pub fn open_indexed(
    url: &str,
    expected: &ExpectedHash,
    sources: &SourceOptions,
) -> Result<Option<Indexed>, TridentError> {
    let shown = redact_url(url);
    if !(url.starts_with("http://")
        || url.starts_with("https://")
        || url.starts_with("file://")
        || url.starts_with('/'))
    {
        tracing::info!(url = %shown, "adaptive update: only file:// and http(s):// images are read by range; the image streams whole");
        return Ok(None);
    }
    match CosiSource::open_by_ranges(url, expected, sources) {
        Ok((source, ranges)) if source.chunk_index().is_some() => {
            Ok(Some(Indexed { source, ranges }))
        }
        Ok(_) => {
            tracing::info!(url = %shown, "the image has no chunk index: it streams whole");
            Ok(None)
        }
        Err(error @ CosiError::RangesUnsupported { .. }) => {
            tracing::warn!(url = %shown, reason = %error,
                "the image server does not serve byte ranges: no adaptive update, the image streams whole");
            Ok(None)
        }
        Err(error) => Err(error).cosi(),
    }
}

/// Writes `jobs` from `image`: the top-level `download` phase counts the
/// bytes settled (its children `download/reused` and `download/fetched`
/// split them, `write/<id>` per region), then `verify` reads each region
/// back and checks it. Logs the totals.
pub fn write_jobs(
    image: &Indexed,
    jobs: &[Job],
    interrupt: &Interrupt,
) -> Result<Tally, TridentError> {
    let Some(index) = image.source.chunk_index() else {
        return Ok(Tally::default());
    };
    let total: u64 = jobs.iter().map(|j| j.info.image.uncompressed_size).sum();
    let download = Phase::start(
        "download",
        "Reuse the image's chunks found locally, fetch the rest",
        Unit::Bytes,
        Some(total),
    );
    let child = |id: &str, name: &str, bytes: u64| {
        Phase::child(&download, id, name, Unit::Bytes, Some(bytes))
    };
    let reused = child("download/reused", "Chunks reused from local volumes", total);
    let fetched = child(
        "download/fetched",
        "Chunks fetched by range requests",
        total,
    );
    let mut tally = Tally::default();
    for job in jobs {
        let path = &job.info.image.path;
        let Some(base) = image.source.region_data_offset(path) else {
            continue; // the index covers every region (checked when opened)
        };
        let what = match (&job.info.mount_point, &job.info.verity_of) {
            (None, Some(mp)) => format!("Write the hash tree of {mp} to {}", job.dest.id),
            (mp, _) => format!("Write {} to {}", mp.as_deref().unwrap_or(""), job.dest.id),
        };
        let write = child(
            &format!("write/{}", job.dest.id),
            &what,
            job.info.image.uncompressed_size,
        );
        let region_image = Image {
            index,
            ranges: &image.ranges,
            base,
            max_window_log: image.source.max_window_log(),
        };
        let phases = Phases {
            download: &download,
            write: &write,
            reused: &reused,
            fetched: &fetched,
        };
        let this = write_region(job, &region_image, &phases, interrupt)?;
        write.done();
        tracing::info!(
            region = %job.info.name(),
            target = %job.dest.id,
            in_place = this.in_place,
            zeros = this.zeros,
            copied = this.copied,
            fetched = this.fetched,
            frame_bytes = this.frame_bytes,
            "{}: {} bytes in place, {} zeros, {} copied from local volumes, {} fetched ({} bytes of frames)",
            job.info.name(),
            this.in_place,
            this.zeros,
            this.copied,
            this.fetched,
            this.frame_bytes
        );
        tally.add(&this);
    }
    reused.done();
    fetched.done();
    download.done();
    let wire = image.ranges.bytes_fetched();
    tracing::info!(
        bytes_reused = tally.reused(),
        bytes_fetched = tally.fetched,
        bytes_downloaded = wire,
        range_requests = image.ranges.requests(),
        in_place = tally.in_place,
        zeros = tally.zeros,
        copied = tally.copied,
        "adaptive update: {} bytes reused, {} bytes fetched ({wire} bytes downloaded, the image's head included)",
        tally.reused(),
        tally.fetched
    );
    let verify = Phase::start(
        "verify",
        "Read the written regions back and check every chunk",
        Unit::Items,
        Some(jobs.len() as u64),
    );
    for (done, job) in jobs.iter().enumerate() {
        verify_region(job, index, interrupt)?;
        verify.set(done as u64 + 1);
    }
    verify.done();
    Ok(tally)
}

/// Reads `job`'s region back from its destination (its cached pages
/// dropped first) and checks every chunk against the index.
pub fn verify_region(
    job: &Job,
    index: &ChunkIndex,
    interrupt: &Interrupt,
) -> Result<(), TridentError> {
    let dest = &job.dest;
    let file = File::open(&dest.path).structured_msg(
        Subkind::WriteImage,
        format!("Cannot open {}", dest.path.display()),
    )?;
    let info = &job.info;
    let uncompressed = info.image.uncompressed_size;
    trident_cosi::readback::drop_cached(&file, dest.offset, uncompressed);
    let n = uncompressed.div_ceil(index.chunk_size) as usize;
    let mut buf = Vec::new();
    let written = format!("as written to {}", dest.id);
    for j in 0..n {
        if interrupt.requested() {
            return Err(CosiError::Cancelled {
                what: format!("verifying {}", info.name()),
            })
            .cosi();
        }
        let (offset, len) = index.chunk_span(j, uncompressed);
        buf.resize(len as usize, 0);
        file.read_exact_at(&mut buf, dest.offset + offset)
            .structured_msg(
                Subkind::WriteImage,
                format!("{}: read at offset {offset}", dest.id),
            )?;
        index
            .verify_chunk(
                &info.name(),
                &info.image.path,
                uncompressed,
                j,
                &buf,
                &written,
            )
            .cosi()?;
    }
    Ok(())
}

/// The regions an adaptive update writes: each filesystem and hash tree
/// of `targets` (the inactive volume, whose earlier image may already
/// hold chunks in place), with the same mount point's device in `reuse`
/// (the active volume) to copy chunks from; and the image's ESP into its
/// copy, when boot control wants one.
pub(super) fn jobs(
    source: &CosiSource,
    targets: &ImageTargets<'_>,
    reuse: &ImageTargets<'_>,
    esp_copy: Option<&(String, PathBuf)>,
) -> Result<Vec<Job>, TridentError> {
    let local = |device: Option<&ResolvedDevice>, role: &str| {
        device.map(|d| {
            let extent = d.extent();
            Local {
                label: format!("{} ({role})", d.id()),
                path: PathBuf::from(extent.backing),
                offset: extent.offset,
                size: extent.size,
            }
        })
    };
    let mut jobs = Vec::new();
    for info in source.region_infos() {
        let (target, active) = match (&info.kind, info.mount_point.as_deref(), &info.verity_of) {
            (RegionKind::Partition { .. }, Some(mp), _) => {
                (targets.filesystems.get(mp), reuse.filesystems.get(mp))
            }
            (RegionKind::Partition { .. }, None, Some(mp)) => {
                (targets.hash_trees.get(mp), reuse.hash_trees.get(mp))
            }
            _ => (None, None),
        };
        if let Some(target) = target {
            let extent = target.extent();
            jobs.push(Job {
                dest: Dest {
                    id: target.id().to_owned(),
                    path: PathBuf::from(extent.backing),
                    offset: extent.offset,
                    size: extent.size,
                    in_place: true,
                },
                locals: local(active, "the active volume").into_iter().collect(),
                info,
            });
            continue;
        }
        let Some((_, path)) =
            esp_copy.filter(|(mp, _)| info.mount_point.as_deref() == Some(mp.as_str()))
        else {
            continue;
        };
        esp_copy::create(path, info.image.uncompressed_size)?;
        jobs.push(Job {
            dest: Dest {
                id: "image-esp-copy".to_owned(),
                path: path.clone(),
                offset: 0,
                size: info.image.uncompressed_size,
                in_place: false,
            },
            locals: Vec::new(),
            info,
        });
    }
    Ok(jobs)
}
