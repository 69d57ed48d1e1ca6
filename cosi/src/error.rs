//! The one error type of this crate.

use std::io;

use crate::chunk_index::IndexError;
use crate::gpt::GptError;
use crate::metadata::MetadataError;

/// Coarse class of a [`CosiError`], so callers (the daemon) can map errors to
/// their own categories without matching every variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The image (or the request naming it) is wrong: bad URL, bad hash,
    /// malformed or corrupt archive, image does not fit the target.
    InvalidImage,
    /// Reading the source or writing the target failed (I/O, network).
    Io,
}

/// Which size of a region did not match `metadata.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeKind {
    Compressed,
    Uncompressed,
}

impl std::fmt::Display for SizeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SizeKind::Compressed => "compressed",
            SizeKind::Uncompressed => "uncompressed",
        })
    }
}

/// Why a pull from an OCI registry failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryFailure {
    /// The repository, tag, digest or layer does not exist.
    NotFound,
    /// The registry wants credentials, or refused the ones given.
    Unauthorized,
    /// The artifact is not one layer (the COSI file) under an image manifest.
    NotCosiArtifact,
    /// Connecting, TLS, a stalled or broken download, a server error.
    Transport,
}

/// A chunk of an indexed COSI whose bytes are not the chunk index's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{region} ({path}): chunk {chunk} (uncompressed bytes {offset}..{end}) {source_desc} has SHA-256 {actual}, the chunk index says {expected}"
)]
pub struct ChunkMismatch {
    /// "partition-N" or "primary-gpt".
    pub region: String,
    pub path: String,
    pub chunk: usize,
    pub offset: u64,
    pub end: u64,
    /// Where the bytes came from ("fetched from the image", "as written to
    /// root-b").
    pub source_desc: String,
    pub expected: String,
    pub actual: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CosiError {
    #[error("unsupported image URL {url:?}: only file://, http(s):// and oci:// are supported")]
    UnsupportedUrl { url: String },
    #[error(
        "{url:?} is not an OCI reference (oci://registry/repository:tag or @sha256:digest): {reason}"
    )]
    InvalidOciReference { url: String, reason: String },
    #[error("cannot pull {url}: {reason}")]
    Registry {
        url: String,
        failure: RegistryFailure,
        reason: String,
    },
    #[error("cannot pull {url}: registry credentials file {path}: {reason}")]
    RegistryAuthFile {
        url: String,
        path: std::path::PathBuf,
        reason: String,
    },
    #[error("cannot open {url}: {source}")]
    Open {
        url: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot download {url}: {reason}")]
    Http { url: String, reason: String },
    #[error(
        "{url} changed during the download ({detail}); after {delivered} bytes were consumed the download cannot start over, and a changed file is never mixed with the old one"
    )]
    ImageChanged {
        url: String,
        detail: String,
        delivered: u64,
    },
    #[error(
        "the server of {url} does not serve byte ranges: the download broke after {delivered} bytes and was read again from byte 0 {restarts} times, the most allowed"
    )]
    RangesNotServed {
        url: String,
        delivered: u64,
        restarts: u32,
    },
    #[error("expected image hash {value:?} is neither 96 lowercase hex digits nor \"ignored\"")]
    InvalidExpectedHash { value: String },
    #[error("reading {url}: {source}")]
    Read {
        url: String,
        #[source]
        source: io::Error,
    },
    #[error("{url} is not a COSI file: {reason}")]
    NotCosi { url: String, reason: String },
    #[error("{url}: malformed tar archive at byte {offset}: {reason}")]
    Tar {
        url: String,
        offset: u64,
        reason: String,
    },
    #[error(transparent)]
    Metadata(#[from] MetadataError),
    #[error("metadata.json has SHA-384 {actual}, expected {expected}")]
    MetadataHashMismatch { expected: String, actual: String },
    #[error(transparent)]
    ChunkIndex(#[from] IndexError),
    #[error("metadata.json names the chunk index {expected:?}, but {reason}")]
    ChunkIndexEntry { expected: String, reason: String },
    #[error("the chunk index has SHA-384 {actual}, metadata.json says {expected}")]
    ChunkIndexHashMismatch { expected: String, actual: String },
    #[error(transparent)]
    ChunkHashMismatch(Box<ChunkMismatch>),
    #[error("{region} ({path}): chunk {chunk}: cannot decompress its zstd frame: {reason}")]
    ChunkFrame {
        region: String,
        path: String,
        chunk: usize,
        reason: String,
    },
    #[error(
        "the server of {url} does not serve byte ranges: it answered a range request with HTTP {status}"
    )]
    RangesUnsupported { url: String, status: u16 },
    #[error("{path}: SHA-384 of the compressed image is {actual}, metadata.json says {expected}")]
    HashMismatch {
        path: String,
        expected: String,
        actual: String,
    },
    #[error("{path}: archive ends after {actual} of {expected} compressed bytes")]
    Truncated {
        path: String,
        expected: u64,
        actual: u64,
    },
    #[error("{path}: {kind} size is {actual} bytes, metadata.json says {expected}")]
    SizeMismatch {
        path: String,
        kind: SizeKind,
        expected: u64,
        actual: u64,
    },
    #[error("{path}: cannot decompress ZSTD data: {reason}")]
    Decompress { path: String, reason: String },
    #[error("{path}: region image listed in metadata.json is missing from the archive")]
    MissingRegion { path: String },
    #[error("{path}: region appears out of order (expected {expected} first)")]
    RegionOrder { path: String, expected: String },
    #[error("{path}: {source}")]
    Gpt {
        path: String,
        #[source]
        source: GptError,
    },
    #[error("image needs a disk of {needed} bytes but {target} has only {available} bytes")]
    TargetTooSmall {
        target: String,
        needed: u64,
        available: u64,
    },
    #[error(
        "{path}: region of {region_size} bytes is larger than partition {number} ({partition_size} bytes)"
    )]
    RegionTooLarge {
        path: String,
        number: u32,
        region_size: u64,
        partition_size: u64,
    },
    #[error("{path}: partition {number} is not in the primary GPT")]
    PartitionNotInGpt { path: String, number: u32 },
    #[error("{target}: {action}: {source}")]
    Target {
        target: String,
        action: String,
        #[source]
        source: io::Error,
    },
    #[error("{target} changed under the writer: {detail}")]
    TargetChanged { target: String, detail: String },
    #[error("{what} was cancelled (the daemon is shutting down)")]
    Cancelled { what: String },
    #[error(
        "{target}: {region} ({path}) read back differs from what was written: {what} of {len} bytes at byte offset {offset}"
    )]
    ReadBackMismatch {
        target: String,
        /// "partition-N", "primary-gpt" or "backup-gpt".
        region: String,
        path: String,
        offset: u64,
        len: u64,
        /// "first block", "last block", "chunk", "partition table".
        what: String,
    },
}

impl CosiError {
    pub fn class(&self) -> ErrorClass {
        match self {
            CosiError::Registry {
                failure: RegistryFailure::NotFound | RegistryFailure::NotCosiArtifact,
                ..
            } => ErrorClass::InvalidImage,
            CosiError::Open { .. }
            | CosiError::Http { .. }
            | CosiError::ImageChanged { .. }
            | CosiError::RangesNotServed { .. }
            | CosiError::RangesUnsupported { .. }
            | CosiError::Registry { .. }
            | CosiError::RegistryAuthFile { .. }
            | CosiError::Read { .. }
            | CosiError::Target { .. }
            | CosiError::TargetChanged { .. }
            | CosiError::Cancelled { .. }
            | CosiError::ReadBackMismatch { .. } => ErrorClass::Io,
            _ => ErrorClass::InvalidImage,
        }
    }

    /// Short kebab-case name of the variant, usable as an error subkind.
    pub fn subkind(&self) -> &'static str {
        match self {
            CosiError::UnsupportedUrl { .. } => "unsupported-image-url",
            CosiError::InvalidOciReference { .. } => "invalid-oci-reference",
            CosiError::Registry { failure, .. } => match failure {
                RegistryFailure::NotFound => "registry-image-not-found",
                RegistryFailure::Unauthorized => "registry-unauthorized",
                RegistryFailure::NotCosiArtifact => "registry-not-cosi-artifact",
                RegistryFailure::Transport => "registry-pull",
            },
            CosiError::RegistryAuthFile { .. } => "registry-auth-file",
            CosiError::Open { .. } => "open-image",
            CosiError::Http { .. } => "download-image",
            CosiError::ImageChanged { .. } => "image-changed-during-download",
            CosiError::RangesNotServed { .. } => "image-server-no-ranges",
            CosiError::InvalidExpectedHash { .. } => "invalid-image-hash",
            CosiError::Read { .. } => "read-image",
            CosiError::NotCosi { .. } => "not-cosi",
            CosiError::Tar { .. } => "malformed-archive",
            CosiError::Metadata(_) => "invalid-metadata",
            CosiError::MetadataHashMismatch { .. } => "metadata-hash-mismatch",
            CosiError::ChunkIndex(_) => "invalid-chunk-index",
            CosiError::ChunkIndexEntry { .. } => "chunk-index-missing",
            CosiError::ChunkIndexHashMismatch { .. } => "chunk-index-hash-mismatch",
            CosiError::ChunkHashMismatch(_) => "chunk-hash-mismatch",
            CosiError::ChunkFrame { .. } => "chunk-decompress",
            CosiError::RangesUnsupported { .. } => "range-requests-not-served",
            CosiError::HashMismatch { .. } => "image-hash-mismatch",
            CosiError::Truncated { .. } => "image-truncated",
            CosiError::SizeMismatch { .. } => "image-size-mismatch",
            CosiError::Decompress { .. } => "image-decompress",
            CosiError::MissingRegion { .. } => "image-missing-region",
            CosiError::RegionOrder { .. } => "image-region-order",
            CosiError::Gpt { .. } => "invalid-gpt",
            CosiError::TargetTooSmall { .. } => "target-too-small",
            CosiError::RegionTooLarge { .. } => "region-larger-than-partition",
            CosiError::PartitionNotInGpt { .. } => "partition-not-in-gpt",
            CosiError::Target { .. } => "write-target",
            CosiError::TargetChanged { .. } => "target-changed",
            CosiError::Cancelled { .. } => "cancelled",
            CosiError::ReadBackMismatch { .. } => "write-verification-failed",
        }
    }

    /// Recovers a `CosiError` that travelled through `std::io::Read` (see
    /// [`crate::RegionReader`]'s `Read` impl); other I/O errors become `Read`.
    pub fn from_io(url: &str, err: io::Error) -> CosiError {
        if err.get_ref().is_some_and(|e| e.is::<CosiError>()) {
            if let Some(inner) = err.into_inner()
                && let Ok(cosi) = inner.downcast::<CosiError>()
            {
                return *cosi;
            }
            // Unreachable in practice: `is` said it was a CosiError.
            return CosiError::Read {
                url: url.to_owned(),
                source: io::Error::other("lost wrapped error"),
            };
        }
        CosiError::Read {
            url: url.to_owned(),
            source: err,
        }
    }
}
