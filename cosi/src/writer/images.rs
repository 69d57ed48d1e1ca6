//! Packing given filesystem images (an OS build's ESP and root) into a COSI.
//!
//! Unlike the fixture generator, the partition contents come from files: each
//! image becomes one partition of a fresh GPT, in the given order, and one
//! filesystem entry of the metadata. A partition is the image's size rounded
//! up to 1 MiB unless a larger size is asked for; the disk is the smallest
//! that holds them unless a size is given. A filesystem packed with
//! `verity` gets its hash tree ([`super::verity`]) as the next partition.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha384};
use uuid::Uuid;

use super::pack::{CHUNK, MAX_WINDOW_LOG, Planned, compress, image_file, io_err, write_archive};
use super::verity::{self, HashTree};
use super::{FixtureOutput, FixtureRegion, WriterError};
use crate::gpt::{Gpt, PartitionSpec};
use crate::metadata::{
    Bootloader, Compression, Disk, Filesystem, GptRegion, Metadata, OsArch, RegionType, Verity,
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
    /// Protect it with dm-verity: its hash tree is made at packing time
    /// and becomes the next partition (`/` and `/usr` only).
    pub verity: bool,
}

impl ImagePartition {
    /// The image of the filesystem `fs_type` (UUID `fs_uuid`) mounted at
    /// `mount_point`, as partition `name` of type `part_type`, sized to the
    /// image, without verity.
    pub fn new(
        image: PathBuf,
        name: &str,
        part_type: Uuid,
        fs_type: &str,
        fs_uuid: &str,
        mount_point: &str,
    ) -> Self {
        ImagePartition {
            image,
            name: name.to_owned(),
            part_type,
            fs_type: fs_type.to_owned(),
            fs_uuid: fs_uuid.to_owned(),
            mount_point: mount_point.to_owned(),
            size: None,
            verity: false,
        }
    }
}

/// One partition of the packed disk: a filesystem image, or the hash tree
/// of the filesystem before it.
#[derive(Debug)]
struct DiskPartition<'a> {
    image: PathBuf,
    name: String,
    part_type: Uuid,
    size: Option<u64>,
    filesystem: &'a ImagePartition,
    /// `Some` for a hash-tree partition.
    hash_tree: Option<HashTree>,
}

/// The disk's partitions in order: every filesystem, each verity one
/// followed by its hash tree (made in `workdir`).
fn disk_partitions<'a>(
    spec: &'a ImagesSpec,
    workdir: &Path,
) -> Result<Vec<DiskPartition<'a>>, WriterError> {
    let mut parts = Vec::new();
    for p in &spec.partitions {
        parts.push(DiskPartition {
            image: p.image.clone(),
            name: p.name.clone(),
            part_type: p.part_type,
            size: p.size,
            filesystem: p,
            hash_tree: None,
        });
        if p.verity {
            let name = format!("{}-hash", p.name);
            let tree = verity::format(
                &p.image,
                &p.mount_point,
                &[&spec.os_release, &p.fs_uuid],
                workdir,
                &name,
            )?;
            parts.push(DiskPartition {
                image: tree.image.clone(),
                name,
                part_type: tree.part_type,
                size: None,
                filesystem: p,
                hash_tree: Some(tree),
            });
        }
    }
    Ok(parts)
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

impl ImagesSpec {
    /// A grub image of two filesystems: the vfat ESP `esp` and the ext4
    /// root `root` (filesystem UUID `root_uuid`), partitions sized to them.
    pub fn esp_and_root(esp: PathBuf, root: PathBuf, root_uuid: &str, os_release: &str) -> Self {
        let guid = |g: &str| Uuid::parse_str(g).unwrap_or_default();
        ImagesSpec {
            partitions: vec![
                ImagePartition::new(
                    esp,
                    "esp",
                    guid(crate::metadata::PART_TYPE_ESP),
                    "vfat",
                    "ABCD-1234",
                    "/boot/efi",
                ),
                ImagePartition::new(
                    root,
                    "root",
                    guid(crate::metadata::PART_TYPE_ROOT_X86_64),
                    "ext4",
                    root_uuid,
                    "/",
                ),
            ],
            disk_size: None,
            lba_size: 512,
            zstd_level: super::DEFAULT_ZSTD_LEVEL,
            os_release: os_release.to_owned(),
            bootloader: Bootloader {
                bootloader_type: crate::metadata::BootloaderType::Grub,
                systemd_boot: None,
            },
        }
    }
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

/// Partition sizes and the GPT for `spec` laid out as `disk`.
fn layout(spec: &ImagesSpec, disk: &[DiskPartition<'_>]) -> Result<(Gpt, u64), WriterError> {
    if spec.partitions.is_empty() {
        return Err(spec_error("no filesystem images to pack".to_owned()));
    }
    let mut parts = Vec::with_capacity(disk.len());
    let mut total = 0u64;
    for (i, p) in disk.iter().enumerate() {
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
            unique_guid: derived_guid(&[&spec.os_release, &p.name, &p.filesystem.fs_uuid]),
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
    let tmpdir = work_dir(out)?;
    let disk = disk_partitions(spec, tmpdir.path())?;
    let (gpt, disk_size) = layout(spec, &disk)?;
    let lba = spec.lba_size;

    let mut planned = Vec::with_capacity(1 + disk.len());
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
    for (p, entry) in disk.iter().zip(gpt.partitions()) {
        let tmp = tmpdir.path().join(format!("region-{}", entry.number));
        let file = File::open(&p.image).map_err(io_err(&p.image))?;
        let (compressed_size, sha384, uncompressed_size) =
            compress(BufReader::new(file), &tmp, spec.zstd_level)?;
        planned.push(Planned {
            region: FixtureRegion {
                path: format!("images/partition-{}.raw.zst", entry.number),
                region_type: "partition".to_owned(),
                number: Some(entry.number),
                mount_point: p
                    .hash_tree
                    .is_none()
                    .then(|| p.filesystem.mount_point.clone()),
                offset: entry.start_offset(lba),
                uncompressed_size,
                compressed_size,
                sha384,
            },
            tmp,
        });
    }

    let metadata = metadata(spec, &disk, disk_size, &planned);
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

/// A work directory next to `out` (hash trees, compressed regions).
pub(super) fn work_dir(out: &Path) -> Result<tempfile::TempDir, WriterError> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(".mkcosi-")
        .tempdir_in(parent)
        .map_err(io_err(parent))
}

fn metadata(
    spec: &ImagesSpec,
    disk: &[DiskPartition<'_>],
    disk_size: u64,
    planned: &[Planned],
) -> Metadata {
    let mut images: Vec<Filesystem> = Vec::new();
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
        let Some(part) = r.number.and_then(|n| disk.get(n as usize - 1)) else {
            continue;
        };
        let fs = part.filesystem;
        match &part.hash_tree {
            // The hash tree's partition follows its filesystem's.
            Some(tree) => {
                if let Some(owner) = images.iter_mut().find(|f| f.mount_point == fs.mount_point) {
                    owner.verity = Some(Verity {
                        image: image_file(r),
                        roothash: tree.roothash.clone(),
                    });
                }
            }
            None => images.push(Filesystem {
                image: image_file(r),
                mount_point: fs.mount_point.clone(),
                fs_type: fs.fs_type.clone(),
                fs_uuid: fs.fs_uuid.clone(),
                part_type: fs.part_type.to_string(),
                verity: None,
            }),
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
        chunk_index: None,
    }
}

/// Writes the plain disk image `spec` describes (primary GPT, the images at
/// their partitions' offsets, backup GPT), e.g. to boot it without a COSI
/// reader in between.
pub fn write_images_disk(spec: &ImagesSpec, out: &Path) -> Result<Gpt, WriterError> {
    let tmpdir = work_dir(out)?;
    let disk = disk_partitions(spec, tmpdir.path())?;
    let (gpt, disk_size) = layout(spec, &disk)?;
    let file = File::create(out).map_err(io_err(out))?;
    file.set_len(disk_size).map_err(io_err(out))?;
    gpt.write_primary(&file).map_err(io_err(out))?;
    let mut buf = vec![0u8; CHUNK];
    for (p, entry) in disk.iter().zip(gpt.partitions()) {
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
