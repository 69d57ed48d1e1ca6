//! StreamDisk (`trident.v1.StreamingService`): writes a whole COSI disk
//! image onto one of the daemon's `--disk` candidates.
//!
//! Phases (progress records of the operation):
//! * `validate`: check the request, open the image and verify the SHA-384
//!   of `metadata.json`, pick the smallest candidate disk that fits;
//! * `download` (bytes, all regions) with one child `write/<region>` per
//!   region (`write/primary-gpt`, `write/partition-N`): the image is
//!   streamed, decompressed, hash-checked and written in one pass;
//! * `verify` (items: one per partition region, one for the partition
//!   tables): read back from the target what was written (every region's
//!   first and last block, or every byte with `VerifyWrites::Full`), then
//!   both partition tables; the target's size and identity are checked after
//!   every write and region and at the end (`target-changed`), a difference
//!   is `write-verification-failed` naming the region.
//!
//! The heavy lifting is `trident_cosi::stream_to_target_verified`; this
//! file adds disk selection, telemetry and the error mapping. The gRPC
//! handler is the daemon's `grpc::stream_disk`.

use std::path::PathBuf;
use std::sync::Arc;

use trident_cosi::{CosiSource, ExpectedHash, RegionInfo, SourceOptions, VerifyWrites};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_telemetry::progress::{Phase, Unit};

use crate::image::cosi_error::CosiResultExt;
use crate::interrupt::Interrupt;
use crate::machinery::plan::StepPlan;
use crate::machinery::runner::{RebootRequest, StepContext, StepOutcome, StepResult};
use crate::machinery::step;

/// What a StreamDisk request asks for.
#[derive(Debug, Clone)]
pub struct StreamDiskRequest {
    pub url: String,
    pub hash: Option<String>,
    pub handling: RebootHandling,
    /// How much of what was written is read back.
    pub verify: VerifyWrites,
}

/// The StreamDisk step (see the module docs for its phases).
pub async fn stream_disk_step(
    ctx: StepContext,
    request: StreamDiskRequest,
    disks: Arc<[PathBuf]>,
) -> StepResult {
    let StreamDiskRequest {
        url,
        hash,
        handling,
        verify,
    } = request;
    let sources = ctx.engine.sources.clone();
    let interrupt = ctx.engine.interrupt.clone();
    let (hash, target) = step::blocking(move || {
        stream_disk(&url, hash.as_deref(), &sources, verify, &disks, &interrupt)
    })
    .await?;
    Ok(StepOutcome {
        status: None,
        reboot: Some(RebootRequest {
            reason: format!("StreamDisk wrote a new OS image to {}", target.display()),
            handling,
        }),
        image_hash: Some(hash),
        servicing_kind: Some(ServicingKind::CleanInstall),
        keep_last_error: false,
    })
}

/// Blocking body: returns (`sha384:<hex>`, target disk).
fn stream_disk(
    url: &str,
    hash: Option<&str>,
    sources: &SourceOptions,
    verify: VerifyWrites,
    disks: &[PathBuf],
    interrupt: &Interrupt,
) -> Result<(String, PathBuf), TridentError> {
    StepPlan::stream_disk().declare();
    let (mut source, target) = validate(url, hash, sources, disks)?;
    tracing::info!(
        url = %trident_host::redact::url::redact_url(url),
        image_hash = %source.image_hash(),
        target = %target.display(),
        disk_size = source.disk().size,
        verify = ?verify,
        "streaming image to disk"
    );

    trident_telemetry::overall::plan_bytes(source.total_uncompressed());
    let mut progress = PhaseProgress {
        region: None,
        download: Some(Phase::start(
            "download",
            "Download and write image",
            Unit::Bytes,
            Some(source.total_uncompressed()),
        )),
        verify: None,
        interrupt: interrupt.clone(),
    };
    let report =
        trident_cosi::stream_to_target_verified(&mut source, &target, verify, &mut progress)
            .cosi()?;
    if let Some(verify) = progress.verify.take() {
        verify.done();
    }
    for r in &report.regions {
        tracing::info!(
            region = %r.name,
            offset = r.target_offset,
            bytes = r.uncompressed_bytes,
            elapsed_ms = r.elapsed.as_millis() as u64,
            "region written and verified"
        );
    }

    Ok((report.image_hash, target))
}

/// The "validate" phase: the request, the image's metadata (its SHA-384
/// checked) and the smallest candidate disk that holds the image.
fn validate(
    url: &str,
    hash: Option<&str>,
    sources: &SourceOptions,
    disks: &[PathBuf],
) -> Result<(CosiSource, PathBuf), TridentError> {
    let validate = Phase::start(
        "validate",
        "Validate request and image metadata",
        Unit::Items,
        Some(1),
    );
    if url.trim().is_empty() {
        return Err(TridentError::new(
            Subkind::InvalidImageUrl,
            "StreamDisk: image_url is empty",
        ));
    }
    let expected = ExpectedHash::from_optional(hash).cosi()?;
    let source = CosiSource::open(url, &expected, sources).cosi()?;
    let target = pick_disk(disks, source.disk().size)?;
    validate.set(1);
    validate.done();
    Ok((source, target))
}

/// The smallest candidate that holds `needed` bytes.
fn pick_disk(disks: &[PathBuf], needed: u64) -> Result<PathBuf, TridentError> {
    if disks.is_empty() {
        return Err(TridentError::new(
            Subkind::TargetDiskMissing,
            "StreamDisk: the daemon has no target disk (start tridentd with --disk PATH)",
        ));
    }
    let mut sizes = Vec::new();
    for disk in disks {
        match trident_cosi::stream::target_size(disk) {
            Ok(size) => sizes.push((size, disk)),
            Err(e) => tracing::warn!(disk = %disk.display(), error = %e, "candidate disk unusable"),
        }
    }
    sizes.sort();
    match sizes.iter().find(|(size, _)| *size >= needed) {
        Some((_, disk)) => Ok((*disk).clone()),
        None => Err(TridentError::new(
            Subkind::TargetDiskTooSmall,
            format!(
                "StreamDisk: the image needs a disk of {needed} bytes; candidates: {}",
                describe(&sizes, disks)
            ),
        )),
    }
}

fn describe(sizes: &[(u64, &PathBuf)], disks: &[PathBuf]) -> String {
    if sizes.is_empty() {
        return format!(
            "none usable ({})",
            join(disks.iter().map(|d| d.display().to_string()))
        );
    }
    join(
        sizes
            .iter()
            .map(|(s, d)| format!("{} ({s} bytes)", d.display())),
    )
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// Drives the `download` phase with one `write/<region>` child per region,
/// then the `verify` phase.
struct PhaseProgress {
    // Field order is drop order: a failed region before its parent.
    region: Option<Phase>,
    download: Option<Phase>,
    verify: Option<Phase>,
    interrupt: Interrupt,
}

impl trident_cosi::Progress for PhaseProgress {
    fn cancelled(&self) -> bool {
        self.interrupt.requested()
    }

    fn on_region_start(&mut self, region: &RegionInfo, total_bytes: u64) {
        let name = region.name();
        let label = match &region.mount_point {
            Some(mp) => format!("Write {name} ({mp})"),
            None => format!("Write {name}"),
        };
        let Some(parent) = &self.download else {
            return;
        };
        self.region = Some(Phase::child(
            parent,
            format!("write/{name}"),
            label,
            Unit::Bytes,
            Some(total_bytes),
        ));
    }

    fn on_bytes(&mut self, n: u64) {
        if let Some(p) = &self.download {
            p.add(n);
        }
        if let Some(p) = &self.region {
            p.add(n);
        }
    }

    fn on_region_done(&mut self, _region: &RegionInfo) {
        if let Some(p) = self.region.take() {
            p.done();
        }
    }

    fn on_verify_start(&mut self, items: u64) {
        if let Some(p) = self.download.take() {
            p.done();
        }
        self.verify = Some(Phase::start(
            "verify",
            "Read back what was written",
            Unit::Items,
            Some(items),
        ));
    }

    fn on_verified(&mut self) {
        if let Some(p) = &self.verify {
            p.add(1);
        }
    }
}
