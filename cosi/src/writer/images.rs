//! Packing given filesystem images (an OS build's ESP and root) into a COSI.
//!
//! Unlike the fixture generator, the partition contents come from files: each
//! image becomes one partition of a fresh GPT, in the given order, and one
//! filesystem entry of the metadata. A partition is the image's size rounded
//! up to 1 MiB unless a larger size is asked for; the disk is the smallest
//! that holds them unless a size is given.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha384};
use uuid::Uuid;

use super::pack::{CHUNK, MAX_WINDOW_LOG, Planned, compress, image_file, io_err, write_archive};
use super::{FixtureOutput, FixtureRegion, WriterError};
use crate::gpt::{Gpt, PartitionSpec};
use crate::metadata::{
    Bootloader, Compression, Disk, Filesystem, GptRegion, Metadata, OsArch, RegionType,
};

const MIB: u64 = 1 << 20;

/// One filesystem image that becomes one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePartition {
    pub image: PathBuf,
    /// GPT partition name.
    pub name: String,
    /// GPT partition type GUID.
    pub part_type: Uuid,
    /// "vfat", "ext4", ...
    pub fs_type: String,
    /// The filesystem's UUID as the OS refers to it (e.g. in `root=UUID=`).
    pub fs_uuid: String,
    pub mount_point: String,
    /// Partition size; `None` is the image size rounded up to 1 MiB.
    pub size: Option<u64>,
}

/// What to pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagesSpec {
    /// In disk order.
    pub partitions: Vec<ImagePartition>,
    /// `None`: the smallest disk that holds the partitions.
    pub disk_size: Option<u64>,
    pub lba_size: u64,
    pub zstd_level: i32,
    /// Content of the OS's `/etc/os-release`.
    pub os_release: String,
    /// The metadata's bootloader section (for systemd-boot: its entries).
    pub bootloader: Bootloader,
}

/// A GUID derived from `parts`: the same inputs give the same disk.
fn derived_guid(parts: &[&str]) -> Uuid {
    let mut h = Sha384::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

fn spec_error(reason: String) -> WriterError {
    WriterError::Spec(reason)
}

/// Partition sizes and the GPT for `spec`.
fn layout(spec: &ImagesSpec) -> Result<(Gpt, u64), WriterError> {
    if spec.partitions.is_empty() {
        return Err(spec_error("no filesystem images to pack".to_owned()));
    }
    let mut parts = Vec::with_capacity(spec.partitions.len());
    let mut total = 0u64;
    for (i, p) in spec.partitions.iter().enumerate() {
        let image_size = std::fs::metadata(&p.image).map_err(io_err(&p.image))?.len();
        if image_size == 0 {
            return Err(spec_error(format!("{} is empty", p.image.display())));
        }
        let size = p.size.unwrap_or(image_size.div_ceil(MIB) * MIB);
        if size < image_size {
            return Err(spec_error(format!(
                "partition {} ({}): {size} bytes cannot hold its {image_size}-byte image",
                i + 1,
                p.name
            )));
        }
        total += size.div_ceil(MIB) * MIB;
        parts.push(PartitionSpec {
            type_guid: p.part_type,
            unique_guid: derived_guid(&[&spec.os_release, &p.name, &p.fs_uuid]),
            name: p.name.clone(),
            size: Some(size),
            attributes: 0,
        });
    }
    // 1 MiB before the first partition (MBR, GPT, alignment), 1 MiB after
    // the last one for the backup GPT.
    let disk_size = spec.disk_size.unwrap_or(total + 2 * MIB);
    let disk_guid = derived_guid(&[&spec.os_release, "disk"]);
    Ok((
        Gpt::build(disk_size, spec.lba_size, disk_guid, &parts)?,
        disk_size,
    ))
}

/// Packs the images of `spec` into the COSI 1.2 file `out`.
pub fn pack_images(spec: &ImagesSpec, out: &Path) -> Result<FixtureOutput, WriterError> {
    let (gpt, disk_size) = layout(spec)?;
    let lba = spec.lba_size;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmpdir = tempfile::Builder::new()
        .prefix(".mkcosi-")
        .tempdir_in(parent)
        .map_err(io_err(parent))?;

    let mut planned = Vec::with_capacity(1 + spec.partitions.len());
    let tmp = tmpdir.path().join("region-0");
    let primary = gpt.primary_bytes();
    let (compressed_size, sha384, uncompressed_size) =
        compress(&primary[..], &tmp, spec.zstd_level)?;
    planned.push(Planned {
        region: FixtureRegion {
            path: "images/primary-gpt.raw.zst".to_owned(),
            region_type: "primary-gpt".to_owned(),
            number: None,
            mount_point: None,
            offset: 0,
            uncompressed_size,
            compressed_size,
            sha384,
        },
        tmp,
    });
    for (p, entry) in spec.partitions.iter().zip(gpt.partitions()) {
        let tmp = tmpdir.path().join(format!("region-{}", entry.number));
        let file = File::open(&p.image).map_err(io_err(&p.image))?;
        let (compressed_size, sha384, uncompressed_size) =
            compress(BufReader::new(file), &tmp, spec.zstd_level)?;
        planned.push(Planned {
            region: FixtureRegion {
                path: format!("images/partition-{}.raw.zst", entry.number),
                region_type: "partition".to_owned(),
                number: Some(entry.number),
                mount_point: Some(p.mount_point.clone()),
                offset: entry.start_offset(lba),
                uncompressed_size,
                compressed_size,
                sha384,
            },
            tmp,
        });
    }

    let metadata = metadata(spec, disk_size, &planned);
    metadata.validate().map_err(|e| spec_error(e.to_string()))?;
    let json = serde_json::to_vec_pretty(&metadata).map_err(|e| spec_error(e.to_string()))?;
    let metadata_sha384 = crate::hash::sha384_hex(&json);
    write_archive(out, &json, &planned)?;
    Ok(FixtureOutput {
        path: out.to_owned(),
        metadata_sha384,
        disk_size,
        lba_size: lba,
        regions: planned.into_iter().map(|p| p.region).collect(),
        corruption: None,
    })
}

fn metadata(spec: &ImagesSpec, disk_size: u64, planned: &[Planned]) -> Metadata {
    let mut images = Vec::new();
    let mut gpt_regions = Vec::new();
    for p in planned {
        let r = &p.region;
        gpt_regions.push(GptRegion {
            image: image_file(r),
            region_type: if r.number.is_some() {
                RegionType::Partition
            } else {
                RegionType::PrimaryGpt
            },
            number: r.number,
        });
        if let Some(n) = r.number
            && let Some(part) = spec.partitions.get(n as usize - 1)
        {
            images.push(Filesystem {
                image: image_file(r),
                mount_point: part.mount_point.clone(),
                fs_type: part.fs_type.clone(),
                fs_uuid: part.fs_uuid.clone(),
                part_type: part.part_type.to_string(),
                verity: None,
            });
        }
    }
    Metadata {
        version: "1.2".to_owned(),
        os_arch: OsArch::X86_64,
        os_release: spec.os_release.clone(),
        images,
        disk: Some(Disk {
            size: disk_size,
            disk_type: "gpt".to_owned(),
            lba_size: spec.lba_size,
            gpt_regions,
        }),
        os_packages: Vec::new(),
        bootloader: spec.bootloader.clone(),
        id: Some(derived_guid(&[&spec.os_release, "image"]).to_string()),
        compression: Compression {
            max_window_log: MAX_WINDOW_LOG,
        },
    }
}

/// Writes the plain disk image `spec` describes (primary GPT, the images at
/// their partitions' offsets, backup GPT), e.g. to boot it without a COSI
/// reader in between.
pub fn write_images_disk(spec: &ImagesSpec, out: &Path) -> Result<Gpt, WriterError> {
    let (gpt, disk_size) = layout(spec)?;
    let file = File::create(out).map_err(io_err(out))?;
    file.set_len(disk_size).map_err(io_err(out))?;
    gpt.write_primary(&file).map_err(io_err(out))?;
    let mut buf = vec![0u8; CHUNK];
    for (p, entry) in spec.partitions.iter().zip(gpt.partitions()) {
        let mut src = File::open(&p.image).map_err(io_err(&p.image))?;
        let mut offset = entry.start_offset(spec.lba_size);
        loop {
            let n = src.read(&mut buf).map_err(io_err(&p.image))?;
            if n == 0 {
                break;
            }
            file.write_all_at(&buf[..n], offset).map_err(io_err(out))?;
            offset += n as u64;
        }
    }
    gpt.write_backup(&file).map_err(io_err(out))?;
    file.sync_all().map_err(io_err(out))?;
    Ok(gpt)
}
