//! Writing the filesystem images of a COSI file into the partitions they
//! map to (by mount point), with download / write / verify progress.

use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use trident_cosi::metadata::PART_TYPE_ESP;
use trident_cosi::{CosiSource, ExpectedHash, RegionInfo, RegionKind, RegionReader, SourceOptions};
use trident_host::config::HostConfiguration;
use trident_host::status::HostStatus;
use trident_host::{ResultExt, Subkind, TridentError};
use trident_telemetry::progress::{Phase, Unit};

use super::adaptive;
use super::cosi_error::CosiResultExt;
use super::esp_copy;
use super::preflight;
pub use super::targets::{ImageTargets, LocalVolumes};
use super::verity;
use crate::block_device::ResolvedDevice;
use crate::boot_control::image_boot::{self, BootKind, ImageBoot};
use crate::interrupt::Interrupt;
use crate::machinery::runner::StepContext;
use crate::machinery::step::blocking;
use crate::new_storage;

/// Reports write progress of one region to its phase; stops the write
/// when the operation is interrupted.
struct PhaseProgress<'a>(&'a Phase, &'a Interrupt);

impl trident_cosi::Progress for PhaseProgress<'_> {
    fn on_bytes(&mut self, n: u64) {
        self.0.add(n);
    }

    fn cancelled(&self) -> bool {
        self.1.requested()
    }
}

/// The write step of install and A/B update: [`write_image`] of the Host
/// Configuration's image into the `targets` that take an image (and the
/// hash trees of verity filesystems into `hash_trees`), the
/// engine's boot control checking the image against `current` and getting
/// the image's ESP when it needs it (copied next to the operation's new
/// root, removed with it).
pub async fn write_step(
    ctx: &StepContext,
    current: &HostStatus,
    hc: &HostConfiguration,
    targets: &BTreeMap<String, ResolvedDevice>,
    hash_trees: &BTreeMap<String, ResolvedDevice>,
    reuse: Option<LocalVolumes>,
) -> Result<WrittenImage, TridentError> {
    let image = hc
        .image
        .clone()
        .ok_or_else(|| TridentError::new(Subkind::InvalidHostConfiguration, "image is required"))?;
    let written = new_storage::image_targets(hc, targets);
    let engine = ctx.engine.clone();
    let esp_copy = engine.boot.wants_image_esp().then(|| {
        engine
            .new_root_dir(&ctx.operation_id)
            .with_extension("esp.img")
    });
    let current = current.clone();
    let hash_trees = hash_trees.clone();
    let sources = ctx.engine.sources.clone();
    blocking(move || {
        let check = |kind: &BootKind| engine.boot.check_image(&current, kind);
        let boot = BootCheck {
            esp_copy,
            check: &check,
        };
        let written = ImageTargets {
            filesystems: &written,
            hash_trees: &hash_trees,
        };
        let reuse = reuse.as_ref().map(|local| ImageTargets {
            filesystems: &local.filesystems,
            hash_trees: &local.hash_trees,
        });
        write_image(
            &image.url,
            &image.sha384,
            &sources,
            &written,
            reuse.as_ref(),
            &boot,
            &engine.interrupt,
        )
    })
    .await
}

/// What [`write_image`] wrote: the image's `sha384:<hex>`, how it boots,
/// and the root hash of each verity filesystem written (by mount point).
#[derive(Debug, Clone)]
pub struct WrittenImage {
    pub hash: String,
    pub boot: ImageBoot,
    pub verity_root_hashes: BTreeMap<String, String>,
}

/// How boot control takes part in [`write_image`].
pub struct BootCheck<'a> {
    /// Where to copy the image's ESP filesystem when it is not a target
    /// and the image's boot files come from it (`None`: never).
    pub esp_copy: Option<PathBuf>,
    /// Refuses an image the host cannot boot, before anything is written.
    pub check: &'a (dyn Fn(&BootKind) -> Result<(), TridentError> + Sync),
}

impl std::fmt::Debug for BootCheck<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootCheck")
            .field("esp_copy", &self.esp_copy)
            .finish_non_exhaustive()
    }
}

/// How [`write_image`] opened the image. One value instead of two
/// `Option`s, so that "indexed but nothing to reuse" and "neither" cannot
/// be spelled: an image is opened by range only for an A/B update.
enum Opened<'a> {
    /// By range with its chunk index, and the active volume's devices to
    /// copy chunks from: an adaptive A/B update.
    Indexed {
        image: adaptive::Indexed,
        reuse: ImageTargets<'a>,
    },
    /// As one stream read front to back.
    Whole(CosiSource),
}

impl Opened<'_> {
    fn source(&self) -> &CosiSource {
        match self {
            Opened::Indexed { image, .. } => &image.source,
            Opened::Whole(source) => source,
        }
    }
}

/// Opens `url` (as `sources` says), checks that the image provides every mount point in
/// `targets` (with a hash tree where it goes to a verity device) and that
/// each fits its partition, that its bootloader
/// metadata is one this daemon boots (`boot`), then streams each region
/// into its partition. Regions of other mount points (and the image's own
/// GPT) are read and verified but not written; the image's ESP goes to
/// `boot.esp_copy` when asked. With `reuse` (an A/B update: the active
/// volume's devices) an indexed image is written adaptively
/// ([`adaptive`]): only the chunks found nowhere locally are fetched.
/// Blocking: run it in `spawn_blocking` inside the operation's span.
pub fn write_image(
    url: &str,
    sha384: &str,
    sources: &SourceOptions,
    image_targets: &ImageTargets<'_>,
    reuse: Option<&ImageTargets<'_>>,
    boot: &BootCheck<'_>,
    interrupt: &Interrupt,
) -> Result<WrittenImage, TridentError> {
    let targets = image_targets.filesystems;
    let hash_trees = image_targets.hash_trees;
    let expected = ExpectedHash::parse(sha384).cosi()?;
    let indexed = match reuse {
        Some(reuse) => {
            adaptive::open_indexed(url, &expected, sources)?.map(|image| (image, *reuse))
        }
        None => None,
    };
    let opened = match indexed {
        Some((image, reuse)) => Opened::Indexed { image, reuse },
        None => {
            let download = Phase::start(
                "download",
                "Open and verify image metadata",
                Unit::Items,
                Some(1),
            );
            let source = CosiSource::open(url, &expected, sources).cosi()?;
            download.set(1);
            download.done();
            Opened::Whole(source)
        }
    };
    let source = opened.source();
    tracing::info!(url = %trident_host::redact::url::redact_url(url), image_hash = %source.image_hash(), "image metadata verified");

    preflight::check_image_matches(source, targets)?;
    let verity_root_hashes = verity::check_hash_trees(source.metadata(), hash_trees)?;
    let kind = image_boot::boot_kind(source.metadata())?;
    (boot.check)(&kind)?;
    let esp_copy = esp_to_copy(source, targets, &kind, boot.esp_copy.as_deref())?;
    // The byte work: the filesystem images that are written.
    let bytes_total = source
        .metadata()
        .images
        .iter()
        .filter(|fs| targets.contains_key(&fs.mount_point))
        .map(|fs| fs.image.uncompressed_size)
        .sum::<u64>()
        + verity::tree_bytes(source.metadata(), hash_trees);
    trident_telemetry::overall::plan_bytes(bytes_total);
    let written = |hash: String, esp_copy: Option<(String, PathBuf)>| WrittenImage {
        hash,
        boot: ImageBoot {
            kind: kind.clone(),
            esp_copy: esp_copy.map(|(_, path)| path),
            verity_root_hash: verity_root_hashes.get("/").cloned(),
        },
        verity_root_hashes: verity_root_hashes.clone(),
    };

    let mut source = match opened {
        Opened::Indexed { image, reuse } => {
            let jobs = adaptive::jobs(&image.source, image_targets, &reuse, esp_copy.as_ref())?;
            adaptive::write_jobs(&image, &jobs, interrupt)?;
            return Ok(written(image.source.image_hash(), esp_copy));
        }
        Opened::Whole(source) => source,
    };
    if reuse.is_some() && source.chunk_index().is_some() {
        tracing::info!(
            "the image has a chunk index, but its source is not read by range: it streams whole"
        );
    }

    let mut files: HashMap<String, File> = HashMap::new();
    let mut verified = 0u64;
    let regions = source.disk().gpt_regions.len() as u64;
    let verify = Phase::start("verify", "Verify region hashes", Unit::Items, Some(regions));
    loop {
        let region = source.next_region().cosi()?;
        let Some(mut region) = region else { break };
        let info: RegionInfo = region.info().clone();
        let target = match (&info.kind, info.mount_point.as_deref(), &info.verity_of) {
            (RegionKind::Partition { .. }, Some(mp), _) => targets.get(mp),
            (RegionKind::Partition { .. }, None, Some(mp)) => hash_trees.get(mp),
            _ => None,
        };
        let is_esp_copy = esp_copy
            .as_ref()
            .is_some_and(|(mp, _)| info.mount_point.as_deref() == Some(mp.as_str()));
        match target {
            None if is_esp_copy => {
                if let Some((_, path)) = &esp_copy {
                    esp_copy::copy_region(&mut region, &info, path)?;
                }
            }
            None => {
                tracing::debug!(region = %info.name(), "not a target: verifying without writing");
                region.skip().cosi()?;
            }
            Some(target) => {
                write_region(&verify, &mut region, &info, target, &mut files, interrupt)?
            }
        }
        verified += 1;
        verify.set(verified);
    }
    for (device, file) in &files {
        file.sync_all()
            .structured_msg(Subkind::WriteImage, format!("fsync {device}"))?;
    }
    verify.done();
    Ok(written(source.image_hash(), esp_copy))
}

/// The image's ESP (its mount point) and where to copy it, when boot
/// control wants it (`esp_copy`), `kind` takes boot files from it and it
/// is not written to the host's ESP (an A/B update). A grub or UKI image
/// without an ESP is refused here, before anything is written.
fn esp_to_copy(
    source: &CosiSource,
    targets: &BTreeMap<String, ResolvedDevice>,
    kind: &BootKind,
    esp_copy: Option<&Path>,
) -> Result<Option<(String, PathBuf)>, TridentError> {
    let Some(path) = esp_copy.filter(|_| kind.needs_image_esp()) else {
        return Ok(None);
    };
    let Some(esp) = source
        .metadata()
        .filesystems_by_part_type(PART_TYPE_ESP)
        .next()
    else {
        return Err(TridentError::new(
            Subkind::UnsupportedBootloader,
            format!(
                "metadata.json: images: the image boots with {} but has no ESP filesystem (partType {PART_TYPE_ESP}) to take its loaders from",
                kind.name()
            ),
        ));
    };
    if targets.contains_key(&esp.mount_point) {
        return Ok(None); // written to the host's ESP: read there
    }
    Ok(Some((esp.mount_point.clone(), path.to_path_buf())))
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
    interrupt: &Interrupt,
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
        match (&info.mount_point, &info.verity_of) {
            (None, Some(mp)) => format!("Write the hash tree of {mp} to {}", t.id()),
            (mp, _) => format!("Write {} to {}", mp.as_deref().unwrap_or(""), t.id()),
        },
        Unit::Bytes,
        Some(info.image.uncompressed_size),
    );
    let stats = trident_cosi::write_region_at(
        region,
        file,
        Path::new(device),
        extent.offset,
        extent.size,
        &mut PhaseProgress(&phase, interrupt),
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
