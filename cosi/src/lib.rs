//! The COSI 1.2 image format (Composable OS Image): a streaming,
//! hash-verifying reader, GPT handling, the StreamDisk core
//! ([`stream_to_target`]) and a writer for test fixtures.

pub mod error;
pub mod gpt;
pub mod hash;
pub mod metadata;
pub mod source;
pub mod stream;
mod tar;
pub mod writer;

pub use error::{CosiError, ErrorClass, SizeKind};
pub use hash::ExpectedHash;
pub use metadata::Metadata;
pub use source::{CosiSource, RegionInfo, RegionKind, RegionReader};
pub use stream::{
    NoProgress, Progress, RegionStats, StreamReport, stream_to_target, write_region_at,
};
