//! COSI 1.2 `metadata.json` types.
//!
//! Field names follow the spec (camelCase) and upstream's JSON schema
//! (`cosi-metadata-v1.2.schema.json`): every section is read, the `os`
//! side (arch, packages, bootloader and its entries) as typed data. Unknown
//! fields are ignored, as the spec requires, so newer writers stay readable.
//! A missing or mistyped field is a [`MetadataError::Invalid`] naming it;
//! [`Metadata::validate`] checks the rules the types cannot.

mod boot;
mod parse;
mod validate;

use serde::{Deserialize, Serialize};

pub use boot::{
    Bootloader, BootloaderType, OsArch, OsPackage, SystemdBoot, SystemdBootEntry,
    SystemdBootEntryType,
};
pub(crate) use validate::is_sha384_hex;
pub use validate::{MetadataError, Validated};

/// The ESP partition type (Discoverable Partitions Specification).
pub const PART_TYPE_ESP: &str = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b";
/// Generic Linux data partition type.
pub const PART_TYPE_LINUX_DATA: &str = "0fc63daf-8483-4772-8e79-3d69d8477de4";
/// DPS root partition type for x86-64.
pub const PART_TYPE_ROOT_X86_64: &str = "4f68bce3-e8cd-4db1-96e7-fbcaf984b709";

/// Root object of `metadata.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub version: String,
    pub os_arch: OsArch,
    pub os_release: String,
    pub images: Vec<Filesystem>,
    /// Required (checked by [`Metadata::validate`], naming the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<Disk>,
    pub os_packages: Vec<OsPackage>,
    pub bootloader: Bootloader,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub compression: Compression,
    /// Our addition (readers of COSI 1.2 ignore unknown fields): the tar
    /// member holding the chunk index of an indexed COSI
    /// ([`crate::chunk_index`]), pinned by its size and SHA-384.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_index: Option<crate::chunk_index::ChunkIndexRef>,
}

/// A filesystem image and the partition it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Filesystem {
    pub image: ImageFile,
    pub mount_point: String,
    pub fs_type: String,
    pub fs_uuid: String,
    pub part_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verity: Option<Verity>,
}

/// One compressed image file inside the tar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageFile {
    pub path: String,
    pub compressed_size: u64,
    pub uncompressed_size: u64,
    pub sha384: String,
}

/// A filesystem's dm-verity hash tree (`veritysetup format`'s hash
/// device) and the root hash the kernel checks it against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verity {
    pub image: ImageFile,
    pub roothash: String,
}

/// The original disk layout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Disk {
    pub size: u64,
    #[serde(rename = "type")]
    pub disk_type: String,
    pub lba_size: u64,
    #[serde(default)]
    pub gpt_regions: Vec<GptRegion>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GptRegion {
    pub image: ImageFile,
    #[serde(rename = "type")]
    pub region_type: RegionType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegionType {
    PrimaryGpt,
    Partition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compression {
    pub max_window_log: u32,
}

impl Metadata {
    /// The filesystem whose image sits at `path`, if any.
    pub fn filesystem_for_path(&self, path: &str) -> Option<&Filesystem> {
        self.images.iter().find(|f| f.image.path == path)
    }

    /// Filesystems with the given mount point (e.g. "/" or "/boot/efi").
    pub fn filesystem_by_mount_point(&self, mount_point: &str) -> Option<&Filesystem> {
        self.images.iter().find(|f| f.mount_point == mount_point)
    }

    /// The filesystem whose verity hash tree is the image at `path`, if any.
    pub fn verity_hash_of(&self, path: &str) -> Option<&Filesystem> {
        self.images
            .iter()
            .find(|f| f.verity.as_ref().is_some_and(|v| v.image.path == path))
    }

    /// Filesystems with the given GPT partition type (case-insensitive UUID).
    pub fn filesystems_by_part_type<'a>(
        &'a self,
        part_type: &'a str,
    ) -> impl Iterator<Item = &'a Filesystem> + 'a {
        self.images
            .iter()
            .filter(move |f| f.part_type.eq_ignore_ascii_case(part_type))
    }
}
