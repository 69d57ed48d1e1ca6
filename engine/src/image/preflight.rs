//! The image, checked against the Host Configuration before the first
//! write to any disk: a clean install whose image cannot be reached, or
//! does not hold what the configuration mounts from it, must leave the
//! disk as it was (it used to replace the partition table first and then
//! fail with `download-image`). Opening the image fetches and checks its
//! metadata against the SHA-384 the configuration pins; then every
//! filesystem the configuration takes from the image must be in it, and a
//! verity filesystem's blocks must suit dm-verity ([`verity_blocks`]).
//! The write step checks every byte again as it writes.

use std::collections::BTreeMap;

use trident_cosi::metadata::Metadata;
use trident_cosi::{CosiError, CosiSource, ExpectedHash, SourceOptions};
use trident_host::config::{FilesystemSource, HostConfiguration};
use trident_host::{Subkind, TridentError};

use super::cosi_error::CosiResultExt;
use super::verity_blocks::{self, VerityFilesystem};
use crate::block_device::ResolvedDevice;
use crate::machinery::step::blocking;

/// A filesystem the configuration takes from the image: its key path and
/// mount point.
#[derive(Debug, Clone)]
struct FromImage {
    key: String,
    mount_point: String,
}

/// Opens `hc`'s image and checks it (see the module), off the async
/// runtime. `verity`: the verity filesystems whose blocks to check. No
/// image: nothing to check here (validation and the write step refuse a
/// configuration that needs one).
pub async fn check_image(
    hc: &HostConfiguration,
    verity: Vec<VerityFilesystem>,
    sources: &SourceOptions,
) -> Result<(), TridentError> {
    let Some(image) = hc.image.clone() else {
        return Ok(());
    };
    let wanted = from_image(hc);
    let sources = sources.clone();
    blocking(move || {
        let expected = ExpectedHash::parse(&image.sha384).cosi()?;
        let mut source = if verity.is_empty() {
            open_head(&image.url, &expected, &sources)?
        } else {
            CosiSource::open(&image.url, &expected, &sources).cosi()?
        };
        check_mount_points(source.metadata(), &wanted)?;
        verity_blocks::check_source_block_sizes(&mut source, &verity)
    })
    .await
}

/// The image's head (marker, metadata, chunk index) read by range
/// requests where the source serves them, so a check that needs nothing
/// more does not start a whole download; else opened as a stream.
fn open_head(
    url: &str,
    expected: &ExpectedHash,
    sources: &SourceOptions,
) -> Result<CosiSource, TridentError> {
    match CosiSource::open_by_ranges(url, expected, sources) {
        Ok((source, _)) => Ok(source),
        Err(CosiError::RangesUnsupported { .. } | CosiError::UnsupportedUrl { .. }) => {
            CosiSource::open(url, expected, sources).cosi()
        }
        Err(error) => Err(error).cosi(),
    }
}

fn from_image(hc: &HostConfiguration) -> Vec<FromImage> {
    hc.storage
        .filesystems
        .iter()
        .enumerate()
        .filter(|(_, fs)| {
            fs.effective_source() == FilesystemSource::Image && !fs.mount_point.is_none()
        })
        .map(|(i, fs)| FromImage {
            key: format!("storage.filesystems[{i}]"),
            mount_point: fs.mount_point.path().to_owned(),
        })
        .collect()
}

/// Every filesystem taken from the image is in it.
fn check_mount_points(metadata: &Metadata, wanted: &[FromImage]) -> Result<(), TridentError> {
    for fs in wanted {
        if !metadata
            .images
            .iter()
            .any(|i| i.mount_point == fs.mount_point)
        {
            return Err(TridentError::new(
                Subkind::ImageDoesNotMatchConfiguration,
                format!(
                    "Host Configuration key '{}': the image has no filesystem for mount point \
                     '{}' (it has: {})",
                    fs.key,
                    fs.mount_point,
                    metadata
                        .images
                        .iter()
                        .map(|i| i.mount_point.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// Every target mount point must be in the image and fit its partition.
pub(super) fn check_image_matches(
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
