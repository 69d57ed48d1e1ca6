//! Writing the filesystem images of a COSI file into the partitions they
//! map to (by mount point), with download / write / verify progress.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::path::Path;

use trident_cosi::{
    CosiError, CosiSource, ExpectedHash, RegionInfo, RegionKind, RegionReader, RegistryFailure,
};
use trident_host::{ResultExt, Subkind, TridentError};
use trident_telemetry::progress::{Phase, Unit};

use crate::servicing::block_device::ResolvedDevice;

/// `result.cosi()?`: maps a COSI error with [`cosi_error`], located at the
/// caller. Use this instead of `map_err(cosi_error)`: a `#[track_caller]`
/// function passed by name to `map_err` is called from inside `std`, so
/// the error's location would point into the standard library.
pub trait CosiResultExt<T> {
    #[track_caller]
    fn cosi(self) -> Result<T, TridentError>;
}

impl<T> CosiResultExt<T> for Result<T, CosiError> {
    #[track_caller]
    fn cosi(self) -> Result<T, TridentError> {
        match self {
            Ok(value) => Ok(value),
            // A direct call, so `#[track_caller]` passes our caller through.
            Err(error) => Err(cosi_error(error)),
        }
    }
}

/// The single mapping of COSI errors to our error model. Located at the
/// caller: call it directly or through [`CosiResultExt::cosi`], never pass
/// it by name to `map_err`.
#[track_caller]
pub fn cosi_error(error: CosiError) -> TridentError {
    let subkind = match &error {
        CosiError::MetadataHashMismatch { .. } | CosiError::HashMismatch { .. } => {
            Subkind::ImageHashMismatch
        }
        CosiError::UnsupportedUrl { .. } | CosiError::InvalidOciReference { .. } => {
            Subkind::InvalidImageUrl
        }
        CosiError::Registry {
            failure: RegistryFailure::NotFound,
            ..
        } => Subkind::ImageNotInRegistry,
        CosiError::Registry {
            failure: RegistryFailure::Unauthorized,
            ..
        }
        | CosiError::RegistryAuthFile { .. } => Subkind::RegistryAccessDenied,
        CosiError::Registry {
            failure: RegistryFailure::NotCosiArtifact,
            ..
        } => Subkind::InvalidImage,
        CosiError::Registry {
            failure: RegistryFailure::Transport,
            ..
        } => Subkind::DownloadImage,
        CosiError::InvalidExpectedHash { .. } => Subkind::InvalidImageHash,
        CosiError::Open { .. } | CosiError::Http { .. } | CosiError::Read { .. } => {
            Subkind::DownloadImage
        }
        CosiError::Target { .. } => Subkind::WriteImage,
        CosiError::TargetChanged { .. } => Subkind::TargetChanged,
        CosiError::ReadBackMismatch { .. } => Subkind::WriteVerificationFailed,
        CosiError::TargetTooSmall { .. } | CosiError::RegionTooLarge { .. } => {
            Subkind::ImageDoesNotMatchConfiguration
        }
        CosiError::Metadata(_) => Subkind::InvalidImageMetadata,
        _ => Subkind::InvalidImage,
    };
    let message = match &error {
        // Names the field and why: `metadata.json: osPackages[0].arch: is required`.
        CosiError::Metadata(detail) => format!("{}: {detail}", subkind.default_message()),
        _ => format!("{} ({})", subkind.default_message(), error.subkind()),
    };
    TridentError::with_source(subkind, message, error)
}

/// Reports write progress of one region to its phase.
struct PhaseProgress<'a>(&'a Phase);

impl trident_cosi::Progress for PhaseProgress<'_> {
    fn on_bytes(&mut self, n: u64) {
        self.0.add(n);
    }
}

/// Opens `url`, checks that the image provides every mount point in
/// `targets` and that each fits its partition, then streams each region
/// into its partition. Regions of other mount points (and the image's own
/// GPT) are read and verified but not written. Returns `sha384:<hex>` of
/// the metadata. Blocking: run it in `spawn_blocking` inside the
/// operation's span.
pub fn write_image(
    url: &str,
    sha384: &str,
    targets: &BTreeMap<String, ResolvedDevice>,
) -> Result<String, TridentError> {
    let download = Phase::start(
        "download",
        "Open and verify image metadata",
        Unit::Items,
        Some(1),
    );
    let expected = ExpectedHash::parse(sha384).cosi()?;
    let mut source = CosiSource::open(url, &expected).cosi()?;
    download.set(1);
    download.done();
    tracing::info!(url, image_hash = %source.image_hash(), "image metadata verified");

    check_image_matches(&source, targets)?;
    // The byte work: the filesystem images that are written.
    let bytes_total = source
        .metadata()
        .images
        .iter()
        .filter(|fs| targets.contains_key(&fs.mount_point))
        .map(|fs| fs.image.uncompressed_size)
        .sum();
    trident_telemetry::overall::plan_bytes(bytes_total);

    let mut files: HashMap<String, File> = HashMap::new();
    let mut verified = 0u64;
    let regions = source.disk().gpt_regions.len() as u64;
    let verify = Phase::start("verify", "Verify region hashes", Unit::Items, Some(regions));
    loop {
        let region = source.next_region().cosi()?;
        let Some(mut region) = region else { break };
        let info: RegionInfo = region.info().clone();
        let target = match (&info.kind, info.mount_point.as_deref()) {
            (RegionKind::Partition { .. }, Some(mp)) => targets.get(mp),
            _ => None,
        };
        match target {
            None => {
                tracing::debug!(region = %info.name(), "not a target: verifying without writing");
                region.skip().cosi()?;
            }
            Some(target) => write_region(&verify, &mut region, &info, target, &mut files)?,
        }
        verified += 1;
        verify.set(verified);
    }
    for (device, file) in &files {
        file.sync_all()
            .structured_msg(Subkind::WriteImage, format!("fsync {device}"))?;
    }
    verify.done();
    Ok(source.image_hash())
}

/// Writes one region into its target device (opening its backing file or
/// block device on first use) as a `write/<partition>` phase nested in `verify` (the
/// region walk); hashes are checked on the way.
fn write_region(
    verify: &Phase,
    region: &mut RegionReader<'_>,
    info: &RegionInfo,
    t: &ResolvedDevice,
    files: &mut HashMap<String, File>,
) -> Result<(), TridentError> {
    let extent = t.extent();
    let device = extent.backing;
    if !files.contains_key(device) {
        let file = OpenOptions::new()
            .write(true)
            .open(device)
            .structured_msg(Subkind::WriteImage, format!("Cannot open {device}"))?;
        files.insert(device.to_owned(), file);
    }
    let file = files
        .get(device)
        .ok_or_else(|| TridentError::of(Subkind::WriteImage))?;
    let phase = Phase::child(
        verify,
        format!("write/{}", t.id()),
        format!(
            "Write {} to {}",
            info.mount_point.as_deref().unwrap_or(""),
            t.id()
        ),
        Unit::Bytes,
        Some(info.image.uncompressed_size),
    );
    let stats = trident_cosi::write_region_at(
        region,
        file,
        Path::new(device),
        extent.offset,
        extent.size,
        &mut PhaseProgress(&phase),
    )
    .cosi()?;
    phase.done();
    tracing::info!(
        partition = %t.id(),
        bytes = stats.uncompressed_bytes,
        elapsed_ms = stats.elapsed.as_millis() as u64,
        "region written and verified"
    );
    Ok(())
}

/// Every target mount point must be in the image and fit its partition.
fn check_image_matches(
    source: &CosiSource,
    targets: &BTreeMap<String, ResolvedDevice>,
) -> Result<(), TridentError> {
    let images = &source.metadata().images;
    for (mount_point, target) in targets {
        let Some(fs) = images.iter().find(|f| &f.mount_point == mount_point) else {
            return Err(TridentError::new(
                Subkind::ImageDoesNotMatchConfiguration,
                format!(
                    "The image has no filesystem for mount point '{mount_point}' (it has: {})",
                    images
                        .iter()
                        .map(|f| f.mount_point.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        let size = target.extent().size;
        if fs.image.uncompressed_size > size {
            return Err(TridentError::new(
                Subkind::ImageDoesNotMatchConfiguration,
                format!(
                    "The '{mount_point}' filesystem image ({} bytes) does not fit partition '{}' ({} bytes)",
                    fs.image.uncompressed_size,
                    target.id(),
                    size
                ),
            ));
        }
    }
    Ok(())
}
