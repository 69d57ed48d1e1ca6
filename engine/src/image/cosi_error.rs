//! The one mapping of COSI errors (`trident_cosi::CosiError`) to the
//! engine's error model, for every flow that opens or streams an image.

use trident_cosi::{CosiError, RegistryFailure};
use trident_host::{Subkind, TridentError};

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
        CosiError::MetadataHashMismatch { .. }
        | CosiError::HashMismatch { .. }
        | CosiError::ChunkIndexHashMismatch { .. }
        | CosiError::ChunkHashMismatch(_) => Subkind::ImageHashMismatch,
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
        CosiError::Open { .. }
        | CosiError::Http { .. }
        | CosiError::Read { .. }
        | CosiError::ImageChanged { .. }
        | CosiError::RangesNotServed { .. }
        | CosiError::RangesUnsupported { .. } => Subkind::DownloadImage,
        CosiError::Target { .. } => Subkind::WriteImage,
        CosiError::TargetChanged { .. } => Subkind::TargetChanged,
        CosiError::Cancelled { .. } => Subkind::Interrupted,
        CosiError::ReadBackMismatch { .. } => Subkind::WriteVerificationFailed,
        CosiError::TargetTooSmall { .. } | CosiError::RegionTooLarge { .. } => {
            Subkind::ImageDoesNotMatchConfiguration
        }
        CosiError::Metadata(_) | CosiError::ChunkIndex(_) | CosiError::ChunkIndexEntry { .. } => {
            Subkind::InvalidImageMetadata
        }
        _ => Subkind::InvalidImage,
    };
    let message = match &error {
        // Names the field and why: `metadata.json: osPackages[0].arch: is required`.
        CosiError::Metadata(detail) => format!("{}: {detail}", subkind.default_message()),
        // Names the region and chunk, or the index's field.
        CosiError::ChunkHashMismatch(_)
        | CosiError::ChunkFrame { .. }
        | CosiError::ChunkIndex(_)
        | CosiError::ChunkIndexEntry { .. }
        | CosiError::ChunkIndexHashMismatch { .. } => format!(
            "{} ({}): {error}",
            subkind.default_message(),
            error.subkind()
        ),
        _ => format!("{} ({})", subkind.default_message(), error.subkind()),
    };
    TridentError::with_source(subkind, message, error)
}
