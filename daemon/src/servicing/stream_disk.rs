//! StreamDisk (`trident.v1.StreamingService`): writes a whole COSI disk
//! image onto one of the daemon's `--disk` candidates.
//!
//! Phases (progress records of the operation):
//! * `validate`: check the request, open the image and verify the SHA-384
//!   of `metadata.json`, pick the smallest candidate disk that fits;
//! * `download` (bytes, all regions) with one child `write/<region>` per
//!   region (`write/primary-gpt`, `write/partition-N`): the image is
//!   streamed, decompressed, hash-checked and written in one pass;
//! * `verify`: read back the primary and backup GPT of the target.
//!
//! The heavy lifting is `trident_cosi::stream_to_target`; this file adds
//! disk selection, telemetry and the error mapping. The gRPC handler is
//! `crate::grpc::stream_disk`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use trident_cosi::{CosiSource, ExpectedHash, RegionInfo};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_telemetry::progress::{Phase, Unit};

use super::engine::plan::StepPlan;
use super::engine::runner::{RebootRequest, StepContext, StepOutcome, StepResult};
use super::engine::step;
use super::engine::write::CosiResultExt;

/// The StreamDisk step (see the module docs for its phases).
pub async fn stream_disk_step(
    _ctx: StepContext,
    url: String,
    hash: Option<String>,
    handling: RebootHandling,
    disks: Arc<[PathBuf]>,
) -> StepResult {
    let (hash, target) = step::blocking(move || stream_disk(&url, hash.as_deref(), &disks)).await?;
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
    disks: &[PathBuf],
) -> Result<(String, PathBuf), TridentError> {
    StepPlan::stream_disk().declare();
    let (mut source, target) = validate(url, hash, disks)?;
    tracing::info!(
        url,
        image_hash = %source.image_hash(),
        target = %target.display(),
        disk_size = source.disk().size,
        "streaming image to disk"
    );

    trident_telemetry::overall::plan_bytes(source.total_uncompressed());
    let download = Phase::start(
        "download",
        "Download and write image",
        Unit::Bytes,
        Some(source.total_uncompressed()),
    );
    let mut progress = PhaseProgress {
        parent: &download,
        region: None,
    };
    let report = trident_cosi::stream_to_target(&mut source, &target, &mut progress).cosi()?;
    drop(progress);
    download.done();
    for r in &report.regions {
        tracing::info!(
            region = %r.name,
            offset = r.target_offset,
            bytes = r.uncompressed_bytes,
            elapsed_ms = r.elapsed.as_millis() as u64,
            "region written and verified"
        );
    }

    let verify = Phase::start("verify", "Verify partition tables", Unit::Items, Some(1));
    verify_gpt(&target, source.disk().lba_size, report.target_size)?;
    verify.set(1);
    verify.done();
    Ok((report.image_hash, target))
}

/// The "validate" phase: the request, the image's metadata (its SHA-384
/// checked) and the smallest candidate disk that holds the image.
fn validate(
    url: &str,
    hash: Option<&str>,
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
    let source = CosiSource::open(url, &expected).cosi()?;
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

fn verify_gpt(target: &Path, lba_size: u64, size: u64) -> Result<(), TridentError> {
    let file = std::fs::File::open(target).map_err(|e| {
        TridentError::with_source(
            Subkind::WriteImage,
            format!("verify: cannot open {}", target.display()),
            e,
        )
    })?;
    trident_cosi::gpt::Gpt::read_and_verify(&file, lba_size, size).map_err(|e| {
        TridentError::with_source(
            Subkind::WriteImage,
            format!(
                "verify: the partition tables on {} are not valid after writing",
                target.display()
            ),
            e,
        )
    })?;
    Ok(())
}

/// Drives the `download` phase and one `write/<region>` child per region.
struct PhaseProgress<'a> {
    parent: &'a Phase,
    region: Option<Phase>,
}

impl trident_cosi::Progress for PhaseProgress<'_> {
    fn on_region_start(&mut self, region: &RegionInfo, total_bytes: u64) {
        let name = region.name();
        let label = match &region.mount_point {
            Some(mp) => format!("Write {name} ({mp})"),
            None => format!("Write {name}"),
        };
        self.region = Some(Phase::child(
            self.parent,
            format!("write/{name}"),
            label,
            Unit::Bytes,
            Some(total_bytes),
        ));
    }

    fn on_bytes(&mut self, n: u64) {
        self.parent.add(n);
        if let Some(p) = &self.region {
            p.add(n);
        }
    }

    fn on_region_done(&mut self, _region: &RegionInfo) {
        if let Some(p) = self.region.take() {
            p.done();
        }
    }
}
