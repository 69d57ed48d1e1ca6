//! Semantic checks of `metadata.json` beyond what serde enforces.
//!
//! Every error names the JSON location (e.g. `disk.gptRegions[2]`) so a user
//! can find the offending value in the file.

use std::collections::HashSet;

use super::{BootloaderType, Filesystem, ImageFile, Metadata, RegionType, Verity};

/// Zstd's largest window log; larger values cannot be decoded.
const MAX_WINDOW_LOG: u32 = 31;
/// The oldest metadata revision that carries the disk layout we stream.
const MIN_MINOR_VERSION: u32 = 2;

/// Why `metadata.json` was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    #[error("metadata.json: line {line}, column {column}: {reason}")]
    Parse {
        line: usize,
        column: usize,
        reason: String,
    },
    #[error("metadata.json: {location}: {reason}")]
    Invalid { location: String, reason: String },
}

/// Marker for metadata that passed [`Metadata::validate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validated;

fn invalid(location: impl Into<String>, reason: impl Into<String>) -> MetadataError {
    MetadataError::Invalid {
        location: location.into(),
        reason: reason.into(),
    }
}

/// A UUID in its 8-4-4-4-12 form (either case), as the schema's pattern.
fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::parse_str(s).is_ok()
}

/// True for 96 lowercase hex digits (a SHA-384 as COSI writes it).
pub(crate) fn is_sha384_hex(s: &str) -> bool {
    s.len() == 96
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check_image_file(location: &str, image: &ImageFile) -> Result<(), MetadataError> {
    if !image.path.starts_with("images/") || image.path.len() <= "images/".len() {
        return Err(invalid(
            format!("{location}.path"),
            format!("{:?} must start with \"images/\"", image.path),
        ));
    }
    if image.path.split('/').any(|c| c == ".." || c == ".") {
        return Err(invalid(
            format!("{location}.path"),
            format!(
                "{:?} must not contain \".\" or \"..\" components",
                image.path
            ),
        ));
    }
    if !is_sha384_hex(&image.sha384) {
        return Err(invalid(
            format!("{location}.sha384"),
            format!("{:?} is not 96 hex digits", image.sha384),
        ));
    }
    if image.compressed_size == 0 {
        return Err(invalid(
            format!("{location}.compressedSize"),
            "must be greater than 0",
        ));
    }
    Ok(())
}

impl Metadata {
    /// Checks the rules of COSI 1.2 that the reader relies on.
    pub fn validate(&self) -> Result<Validated, MetadataError> {
        self.check_version()?;
        if self.compression.max_window_log > MAX_WINDOW_LOG {
            return Err(invalid(
                "compression.maxWindowLog",
                format!(
                    "{} is larger than zstd's largest window log {MAX_WINDOW_LOG}",
                    self.compression.max_window_log
                ),
            ));
        }
        if let Some(id) = &self.id
            && !is_uuid(id)
        {
            return Err(invalid("id", format!("{id:?} is not a UUID")));
        }
        self.check_bootloader()?;
        self.check_filesystems()?;
        self.check_disk()?;
        self.check_chunk_index()?;
        Ok(Validated)
    }

    /// The chunk index's member: a plain path outside `images/` that is no
    /// other entry's, a SHA-384 and a size within bounds.
    fn check_chunk_index(&self) -> Result<(), MetadataError> {
        let Some(index) = &self.chunk_index else {
            return Ok(());
        };
        let path = &index.path;
        // The marker's and the metadata's own names.
        let reserved = ["cosi-marker", "metadata.json"];
        if path.is_empty()
            || path.starts_with('/')
            || path.starts_with("images/")
            || path
                .split('/')
                .any(|c| c.is_empty() || c == ".." || c == ".")
            || reserved.contains(&path.as_str())
        {
            return Err(invalid(
                "chunkIndex.path",
                format!(
                    "{path:?} must be a relative path outside images/ that names no other entry"
                ),
            ));
        }
        if !is_sha384_hex(&index.sha384) {
            return Err(invalid(
                "chunkIndex.sha384",
                format!("{:?} is not 96 hex digits", index.sha384),
            ));
        }
        let max = crate::chunk_index::MAX_INDEX_BYTES;
        if index.size == 0 || index.size > max {
            return Err(invalid(
                "chunkIndex.size",
                format!("{} is not between 1 and {max}", index.size),
            ));
        }
        Ok(())
    }

    /// systemd-boot needs its entries; grub has none.
    fn check_bootloader(&self) -> Result<(), MetadataError> {
        let boot = &self.bootloader;
        match (boot.bootloader_type, &boot.systemd_boot) {
            (BootloaderType::SystemdBoot, None) => Err(invalid(
                "bootloader.systemdBoot",
                "is required when bootloader.type is systemd-boot",
            )),
            (BootloaderType::SystemdBoot, Some(sd)) if sd.entries.is_empty() => Err(invalid(
                "bootloader.systemdBoot.entries",
                "must list at least one entry",
            )),
            (BootloaderType::Grub, Some(_)) => Err(invalid(
                "bootloader.systemdBoot",
                "must be absent or null when bootloader.type is grub",
            )),
            _ => Ok(()),
        }
    }

    fn check_version(&self) -> Result<(), MetadataError> {
        let parsed = self
            .version
            .split_once('.')
            .and_then(|(maj, min)| Some((maj.parse::<u32>().ok()?, min.parse::<u32>().ok()?)));
        match parsed {
            Some((1, minor)) if minor >= MIN_MINOR_VERSION => Ok(()),
            Some(_) => Err(invalid(
                "version",
                format!(
                    "{:?} is not supported (need 1.2 or a later 1.x)",
                    self.version
                ),
            )),
            None => Err(invalid(
                "version",
                format!("{:?} is not of the form MAJOR.MINOR", self.version),
            )),
        }
    }

    fn check_filesystems(&self) -> Result<(), MetadataError> {
        let mut fs_uuids = HashSet::new();
        for (i, fs) in self.images.iter().enumerate() {
            let loc = format!("images[{i}]");
            check_image_file(&format!("{loc}.image"), &fs.image)?;
            if !is_uuid(&fs.part_type) {
                return Err(invalid(
                    format!("{loc}.partType"),
                    format!("{:?} is not a UUID", fs.part_type),
                ));
            }
            if fs.mount_point.is_empty() {
                return Err(invalid(format!("{loc}.mountPoint"), "must not be empty"));
            }
            if fs.fs_type.is_empty() {
                return Err(invalid(format!("{loc}.fsType"), "must not be empty"));
            }
            if fs.fs_uuid.is_empty() {
                return Err(invalid(format!("{loc}.fsUuid"), "must not be empty"));
            }
            if !fs_uuids.insert(fs.fs_uuid.to_ascii_lowercase()) {
                return Err(invalid(
                    format!("{loc}.fsUuid"),
                    format!("{:?} is used by another filesystem", fs.fs_uuid),
                ));
            }
            if let Some(v) = &fs.verity {
                self.check_verity(&loc, fs, v)?;
            }
        }
        Ok(())
    }

    /// A verity hash tree: its own image file (never a filesystem's) and a
    /// root hash as `veritysetup` prints it (SHA-256 or SHA-512 in hex).
    fn check_verity(&self, loc: &str, fs: &Filesystem, v: &Verity) -> Result<(), MetadataError> {
        check_image_file(&format!("{loc}.verity.image"), &v.image)?;
        if v.image.path == fs.image.path || self.images.iter().any(|f| f.image.path == v.image.path)
        {
            return Err(invalid(
                format!("{loc}.verity.image.path"),
                format!(
                    "{:?} is a filesystem's image, not a hash tree",
                    v.image.path
                ),
            ));
        }
        let hash_ok = matches!(v.roothash.len(), 64 | 128)
            && v.roothash.bytes().all(|b| b.is_ascii_hexdigit());
        if !hash_ok {
            return Err(invalid(
                format!("{loc}.verity.roothash"),
                "must be the hash tree's root hash: 64 or 128 hex digits",
            ));
        }
        Ok(())
    }

    fn check_disk(&self) -> Result<(), MetadataError> {
        let Some(disk) = &self.disk else {
            return Err(invalid("disk", "is required since COSI 1.2"));
        };
        if disk.disk_type != "gpt" {
            return Err(invalid(
                "disk.type",
                format!("{:?} is not supported (only \"gpt\")", disk.disk_type),
            ));
        }
        if disk.lba_size != 512 && disk.lba_size != 4096 {
            return Err(invalid(
                "disk.lbaSize",
                format!("{} is not 512 or 4096", disk.lba_size),
            ));
        }
        if disk.size == 0 || disk.size % disk.lba_size != 0 {
            return Err(invalid(
                "disk.size",
                format!(
                    "{} is not a positive multiple of lbaSize {}",
                    disk.size, disk.lba_size
                ),
            ));
        }
        let Some(first) = disk.gpt_regions.first() else {
            return Err(invalid("disk.gptRegions", "must not be empty"));
        };
        if first.region_type != RegionType::PrimaryGpt {
            return Err(invalid(
                "disk.gptRegions[0]",
                "the first region must be of type primary-gpt",
            ));
        }
        let mut numbers = HashSet::new();
        let mut paths = HashSet::new();
        for (i, region) in disk.gpt_regions.iter().enumerate() {
            let loc = format!("disk.gptRegions[{i}]");
            match (region.region_type, region.number) {
                (RegionType::PrimaryGpt, _) if i > 0 => {
                    return Err(invalid(loc, "only the first region may be primary-gpt"));
                }
                (RegionType::PrimaryGpt, _) => {
                    if region.image.uncompressed_size < 2 * disk.lba_size {
                        return Err(invalid(
                            format!("{loc}.image.uncompressedSize"),
                            format!(
                                "{} is too small for a protective MBR and a GPT header",
                                region.image.uncompressed_size
                            ),
                        ));
                    }
                }
                (RegionType::Partition, None | Some(0)) => {
                    return Err(invalid(
                        format!("{loc}.number"),
                        "a partition region needs a 1-based partition number",
                    ));
                }
                (RegionType::Partition, Some(n)) => {
                    if region.image.path.is_empty() {
                        return Err(invalid(loc, format!("partition number {n} has no image")));
                    }
                    if !numbers.insert(n) {
                        return Err(invalid(
                            format!("{loc}.number"),
                            format!("partition number {n} appears twice"),
                        ));
                    }
                }
            }
            check_image_file(&format!("{loc}.image"), &region.image)?;
            if region.image.uncompressed_size > disk.size {
                return Err(invalid(
                    format!("{loc}.image.uncompressedSize"),
                    format!(
                        "{} is larger than the disk ({} bytes)",
                        region.image.uncompressed_size, disk.size
                    ),
                ));
            }
            if !paths.insert(region.image.path.as_str()) {
                return Err(invalid(
                    format!("{loc}.image.path"),
                    format!("{:?} is used by another region", region.image.path),
                ));
            }
        }
        // Every filesystem must be one of the regions, described identically.
        for (i, fs) in self.images.iter().enumerate() {
            match disk
                .gpt_regions
                .iter()
                .find(|r| r.image.path == fs.image.path)
            {
                None => {
                    return Err(invalid(
                        format!("images[{i}].image"),
                        format!("{:?} has no entry in disk.gptRegions", fs.image.path),
                    ));
                }
                Some(r) if r.image != fs.image => {
                    return Err(invalid(
                        format!("images[{i}].image"),
                        format!(
                            "{:?} differs from its disk.gptRegions entry (sizes or sha384)",
                            fs.image.path
                        ),
                    ));
                }
                Some(r) if r.region_type != RegionType::Partition => {
                    return Err(invalid(
                        format!("images[{i}].image"),
                        format!("{:?} refers to the primary-gpt region", fs.image.path),
                    ));
                }
                Some(_) => {}
            }
        }
        // A hash tree that is also a region (a partition of the original
        // disk, as Image Customizer writes it) is described identically.
        for (i, fs) in self.images.iter().enumerate() {
            let Some(v) = &fs.verity else { continue };
            let region = disk
                .gpt_regions
                .iter()
                .find(|r| r.image.path == v.image.path);
            if let Some(r) = region
                && (r.image != v.image || r.region_type != RegionType::Partition)
            {
                return Err(invalid(
                    format!("images[{i}].verity.image"),
                    format!(
                        "{:?} differs from its disk.gptRegions entry (type, sizes or sha384)",
                        v.image.path
                    ),
                ));
            }
        }
        Ok(())
    }
}
