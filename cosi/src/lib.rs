//! The COSI 1.2 image format (Composable OS Image): a streaming,
//! hash-verifying reader, GPT handling, the StreamDisk core
//! ([`stream_to_target`]) and, with the `writer` feature, a writer for
//! test fixtures (`writer`; the `mkcosi` feature adds its command line).
//!
//! Writing selected filesystem images into partitions of a target:
//!
//! ```no_run
//! use std::fs::OpenOptions;
//! use std::path::Path;
//! use trident_cosi::{CosiSource, ExpectedHash, NoProgress, RegionKind, SourceOptions, write_region_at};
//!
//! # fn demo() -> Result<(), trident_cosi::CosiError> {
//! // Reads the marker and metadata.json; fails before any region is handed
//! // out if metadata.json does not have this SHA-384.
//! let expected = ExpectedHash::parse("ignored")?;
//! let options = SourceOptions::default(); // http(s) timeouts, registry credentials
//! let mut source = CosiSource::open("file:///srv/os.cosi", &expected, &options)?;
//! let target = Path::new("/tmp/disk.img");
//! let file = OpenOptions::new().write(true).open(target).map_err(|e| {
//!     trident_cosi::CosiError::Target { target: "/tmp/disk.img".into(), action: "open".into(), source: e }
//! })?;
//! while let Some(mut region) = source.next_region()? {
//!     let info = region.info().clone();
//!     match (info.kind, info.mount_point.as_deref()) {
//!         // Decompresses while writing; verifies hash and sizes at the end.
//!         (RegionKind::Partition { .. }, Some("/")) => {
//!             let (offset, partition_size) = (9 << 20, 2 << 30);
//!             write_region_at(&mut region, &file, target, offset, partition_size, &mut NoProgress)?;
//!         }
//!         // Not wanted: still hash-checked, not decompressed.
//!         _ => region.skip()?,
//!     }
//! }
//! println!("wrote image {}", source.image_hash());
//! # Ok(()) }
//! ```

pub mod chunk_index;
pub mod error;
pub mod gpt;
pub mod hash;
pub mod metadata;
pub mod readback;
pub mod source;
pub mod stream;
mod tar;
pub mod target_watch;
#[cfg(feature = "writer")]
pub mod writer;

pub use error::{ChunkMismatch, CosiError, ErrorClass, RegistryFailure, SizeKind};
pub use hash::ExpectedHash;
pub use metadata::Metadata;
pub use readback::VerifyWrites;
pub use source::{
    Cancel, CosiSource, DEFAULT_DOWNLOAD_DEADLINE, DEFAULT_DOWNLOAD_RETRIES,
    DEFAULT_HTTP_CONNECT_TIMEOUT, DEFAULT_HTTP_READ_TIMEOUT, DEFAULT_RESTARTS_WITHOUT_RANGES,
    DEFAULT_RETRY_BACKOFF, DEFAULT_RETRY_BACKOFF_MAX, HttpTimeouts, RangeReader, RegionInfo,
    RegionKind, RegionReader, ResumePolicy, RetryNotice, RetryObserver, SourceOptions, open_url,
};
pub use stream::{
    NoProgress, Progress, RegionStats, StreamReport, stream_to_target, stream_to_target_verified,
    write_region_at,
};
