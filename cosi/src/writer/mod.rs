//! COSI writer: fixtures (tests, benchmarks, README demo) and packing given
//! filesystem images (the VM test OS, [`pack_images`]).
//!
//! Builds a GPT disk (ESP + root) of deterministic content in memory-bounded
//! chunks, compresses every region with ZSTD into a temp file next to the
//! output while hashing it, and packs `cosi-marker`, `metadata.json` and the
//! regions into a COSI 1.2 tar. Can also write the plain disk image the COSI
//! describes, for byte-for-byte comparisons, and produce corrupt variants.

mod content;
mod framed;
mod images;
mod pack;
mod reindex;
pub mod verity;

use std::path::PathBuf;

use serde::Serialize;
use uuid::Uuid;

use crate::gpt::{Gpt, GptError, PartitionSpec};
use crate::metadata::{PART_TYPE_ESP, PART_TYPE_LINUX_DATA};

pub use content::{ContentReader, fill as fill_content};
pub use images::{ImagePartition, ImagesSpec, pack_images, write_images_disk};
pub use pack::{
    kept_region_path, write_cosi, write_cosi_keeping_regions, write_disk_image,
    write_metadata_only_cosi,
};
pub use reindex::{IndexOptions, IndexOutput, IndexedRegion, edit_chunk_index, index_cosi};

/// Default ESP size of fixtures.
pub const DEFAULT_ESP_BYTES: u64 = 8 << 20;
/// Default zstd level: fast, like an image pipeline tuned for speed.
pub const DEFAULT_ZSTD_LEVEL: i32 = 1;

/// Ways to break a fixture on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Corruption {
    /// Flip one byte in the middle of region `region`'s compressed data
    /// (metadata keeps the original hash).
    FlipByte { region: usize },
    /// Cut the archive in the middle of region `region`'s data.
    Truncate { region: usize },
    /// Make partition region `region`'s image 1 MiB larger than its
    /// partition (metadata stays self-consistent).
    RegionLargerThanPartition { region: usize },
}

/// What fixture to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureSpec {
    pub disk_size: u64,
    pub lba_size: u64,
    /// Drives content and GUIDs; an "update image" uses another seed.
    pub seed: u64,
    pub esp_size: u64,
    pub zstd_level: i32,
    pub corruption: Option<Corruption>,
}

impl FixtureSpec {
    pub fn new(disk_size: u64, seed: u64) -> Self {
        FixtureSpec {
            disk_size,
            lba_size: 512,
            seed,
            esp_size: DEFAULT_ESP_BYTES,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            corruption: None,
        }
    }

    fn guid(&self, salt: u64) -> Uuid {
        // Deterministic v4-shaped GUIDs from the seed.
        let hi = u128::from(content_hash(self.seed, salt));
        let lo = u128::from(content_hash(self.seed ^ 0x5555, salt));
        uuid::Builder::from_random_bytes(((hi << 64) | lo).to_be_bytes()).into_uuid()
    }

    /// The partition table of the fixture disk.
    pub fn gpt(&self) -> Result<Gpt, GptError> {
        let parts = [
            PartitionSpec {
                type_guid: parse_uuid(PART_TYPE_ESP),
                unique_guid: self.guid(1),
                name: "esp".to_owned(),
                size: Some(self.esp_size),
                attributes: 0,
            },
            PartitionSpec {
                type_guid: parse_uuid(PART_TYPE_LINUX_DATA),
                unique_guid: self.guid(2),
                name: "root".to_owned(),
                size: None,
                attributes: 0,
            },
        ];
        Gpt::build(self.disk_size, self.lba_size, self.guid(0), &parts)
    }

    pub(crate) fn fs_uuid(&self, number: u32) -> String {
        if number == 1 {
            // vfat volume ids look like "ABCD-1234".
            let v = content_hash(self.seed, 100) as u32;
            format!("{:04X}-{:04X}", v >> 16, v & 0xFFFF)
        } else {
            self.guid(100 + u64::from(number)).to_string()
        }
    }
}

fn parse_uuid(s: &str) -> Uuid {
    Uuid::parse_str(s).unwrap_or_default()
}

fn content_hash(seed: u64, salt: u64) -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.rotate_left(17);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// One region as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FixtureRegion {
    pub path: String,
    /// "primary-gpt" or "partition".
    #[serde(rename = "type")]
    pub region_type: String,
    pub number: Option<u32>,
    pub mount_point: Option<String>,
    /// Byte offset on the disk.
    pub offset: u64,
    pub uncompressed_size: u64,
    pub compressed_size: u64,
    pub sha384: String,
}

/// What [`write_cosi`] produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FixtureOutput {
    pub path: PathBuf,
    pub metadata_sha384: String,
    pub disk_size: u64,
    pub lba_size: u64,
    pub regions: Vec<FixtureRegion>,
    pub corruption: Option<Corruption>,
}

#[derive(Debug, thiserror::Error)]
pub enum WriterError {
    #[error(transparent)]
    Gpt(#[from] GptError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid fixture: {0}")]
    Spec(String),
    /// The COSI being indexed could not be read (or failed its checks).
    #[error(transparent)]
    Cosi(#[from] crate::error::CosiError),
}
