//! Compressing regions and packing the tar.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha384};

use super::content::ContentReader;
use super::{Corruption, FixtureOutput, FixtureRegion, FixtureSpec, WriterError};
use crate::gpt::Gpt;
use crate::metadata::{
    Bootloader, BootloaderType, Compression, Disk, Filesystem, GptRegion, ImageFile, Metadata,
    OsArch, OsPackage, RegionType,
};
use crate::source::{MARKER_ENTRY, METADATA_ENTRY};

pub(super) const CHUNK: usize = 4 << 20;
/// Large enough for any level we use; tells readers how to size windows.
pub(super) const MAX_WINDOW_LOG: u32 = 27;
const OVERSIZE_EXTRA: u64 = 1 << 20;

pub(super) fn io_err(path: &Path) -> impl Fn(io::Error) -> WriterError + '_ {
    move |source| WriterError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writer that hashes and counts what passes through.
struct Hashing<W> {
    inner: W,
    hasher: Sha384,
    count: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A region's source bytes: the GPT bytes or partition content.
enum RegionData {
    Bytes(Vec<u8>),
    Content(ContentReader),
}

impl Read for RegionData {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            RegionData::Bytes(b) => {
                let n = buf.len().min(b.len());
                buf[..n].copy_from_slice(&b[..n]);
                b.drain(..n);
                Ok(n)
            }
            RegionData::Content(c) => c.read(buf),
        }
    }
}

/// Compresses `data` into `tmp`; returns (compressed size, sha384 hex, uncompressed size).
pub(super) fn compress(
    mut data: impl Read,
    tmp: &Path,
    level: i32,
) -> Result<(u64, String, u64), WriterError> {
    let file = File::create(tmp).map_err(io_err(tmp))?;
    let hashing = Hashing {
        inner: BufWriter::with_capacity(CHUNK, file),
        hasher: Sha384::new(),
        count: 0,
    };
    let mut enc = zstd::stream::write::Encoder::new(hashing, level).map_err(io_err(tmp))?;
    enc.include_checksum(true).map_err(io_err(tmp))?;
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let n = data.read(&mut buf).map_err(io_err(tmp))?;
        if n == 0 {
            break;
        }
        enc.write_all(&buf[..n]).map_err(io_err(tmp))?;
        total += n as u64;
    }
    let mut hashing = enc.finish().map_err(io_err(tmp))?;
    hashing.flush().map_err(io_err(tmp))?;
    Ok((hashing.count, hex::encode(hashing.hasher.finalize()), total))
}

fn os_release(seed: u64) -> String {
    format!(
        "NAME=\"Microsoft Azure Linux\"\nVERSION=\"3.0.{seed}\"\nID=azurelinux\nVERSION_ID=\"3.0\"\nPRETTY_NAME=\"Microsoft Azure Linux 3.0 (fixture seed {seed})\"\n"
    )
}

/// A region compressed into `tmp`, waiting to be packed.
pub(super) struct Planned {
    pub(super) region: FixtureRegion,
    pub(super) tmp: PathBuf,
}

/// Builds the fixture COSI at `out` and returns what it contains.
pub fn write_cosi(spec: &FixtureSpec, out: &Path) -> Result<FixtureOutput, WriterError> {
    write(spec, out, None)
}

/// Like [`write_cosi`], and also leaves each compressed region as
/// `keep/region-<i>.zst` (i = index in `regions`), e.g. for a
/// `zstd -dc | dd` baseline in benchmarks.
pub fn write_cosi_keeping_regions(
    spec: &FixtureSpec,
    out: &Path,
    keep: &Path,
) -> Result<FixtureOutput, WriterError> {
    write(spec, out, Some(keep))
}

/// Writes a COSI file holding only the marker and `metadata_json` (no
/// region images): for checking how a reader treats a metadata document.
pub fn write_metadata_only_cosi(metadata_json: &[u8], out: &Path) -> Result<(), WriterError> {
    let file = File::create(out).map_err(io_err(out))?;
    let mut tar = tar::Builder::new(BufWriter::new(file));
    for (name, data) in [(MARKER_ENTRY, &[][..]), (METADATA_ENTRY, metadata_json)] {
        let mut h = tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, name, data).map_err(io_err(out))?;
    }
    let mut inner = tar.into_inner().map_err(io_err(out))?;
    inner.flush().map_err(io_err(out))
}

/// Path of a region kept by [`write_cosi_keeping_regions`].
pub fn kept_region_path(keep: &Path, index: usize) -> PathBuf {
    keep.join(format!("region-{index}.zst"))
}

fn write(
    spec: &FixtureSpec,
    out: &Path,
    keep: Option<&Path>,
) -> Result<FixtureOutput, WriterError> {
    let gpt = spec.gpt()?;
    let lba = spec.lba_size;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmpdir = tempfile::Builder::new()
        .prefix(".mkcosi-")
        .tempdir_in(parent)
        .map_err(io_err(parent))?;
    let regions_total = 1 + gpt.partitions().len();
    if let Some(Corruption::FlipByte { region } | Corruption::Truncate { region }) = spec.corruption
        && region >= regions_total
    {
        return Err(WriterError::Spec(format!(
            "region {region} does not exist ({regions_total} regions)"
        )));
    }
    if let Some(Corruption::RegionLargerThanPartition { region }) = spec.corruption
        && (region == 0 || region >= regions_total)
    {
        return Err(WriterError::Spec(format!(
            "region {region} is not a partition region"
        )));
    }

    let mut planned = Vec::new();
    let primary = gpt.primary_bytes();
    let mut sources = vec![(None, 0u64, RegionData::Bytes(primary))];
    for e in gpt.partitions() {
        let mut len = e.size_bytes(lba);
        if spec.corruption
            == Some(Corruption::RegionLargerThanPartition {
                region: sources.len(),
            })
        {
            len += OVERSIZE_EXTRA;
        }
        sources.push((
            Some(e.number),
            e.start_offset(lba),
            RegionData::Content(ContentReader::new(spec.seed, e.number, len)),
        ));
    }
    for (i, (number, offset, data)) in sources.into_iter().enumerate() {
        let path = match number {
            None => "images/primary-gpt.raw.zst".to_owned(),
            Some(n) => format!("images/partition-{n}.raw.zst"),
        };
        let tmp = tmpdir.path().join(format!("region-{i}"));
        let (compressed_size, sha384, uncompressed_size) = compress(data, &tmp, spec.zstd_level)?;
        if spec.corruption == Some(Corruption::FlipByte { region: i }) {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&tmp)
                .map_err(io_err(&tmp))?;
            let mut b = [0u8; 1];
            let at = compressed_size / 2;
            f.read_exact_at(&mut b, at).map_err(io_err(&tmp))?;
            b[0] ^= 0x5A;
            f.write_all_at(&b, at).map_err(io_err(&tmp))?;
        }
        planned.push(Planned {
            region: FixtureRegion {
                path,
                region_type: if number.is_some() {
                    "partition"
                } else {
                    "primary-gpt"
                }
                .to_owned(),
                number,
                mount_point: number.map(|n| if n == 1 { "/boot/efi" } else { "/" }.to_owned()),
                offset,
                uncompressed_size,
                compressed_size,
                sha384,
            },
            tmp,
        });
    }

    let metadata = build_metadata(spec, &planned);
    let json =
        serde_json::to_vec_pretty(&metadata).map_err(|e| WriterError::Spec(e.to_string()))?;
    let metadata_sha384 = crate::hash::sha384_hex(&json);

    write_archive(out, &json, &planned)?;
    if let Some(Corruption::Truncate { region }) = spec.corruption
        && let Some(half) = planned.get(region).map(|p| p.region.compressed_size / 2)
    {
        // Data of region `region` starts after the tar headers that precede
        // it; find it by re-reading sizes: marker + metadata + earlier regions.
        let block = |n: u64| n.div_ceil(512) * 512;
        let mut offset = 512 + 512 + block(json.len() as u64);
        for p in &planned[..region] {
            offset += 512 + block(p.region.compressed_size);
        }
        offset += 512 + half;
        let f = OpenOptions::new()
            .write(true)
            .open(out)
            .map_err(io_err(out))?;
        f.set_len(offset).map_err(io_err(out))?;
    }
    if let Some(keep) = keep {
        for (i, p) in planned.iter().enumerate() {
            let dst = kept_region_path(keep, i);
            if std::fs::rename(&p.tmp, &dst).is_err() {
                std::fs::copy(&p.tmp, &dst).map_err(io_err(&dst))?;
            }
        }
    }
    Ok(FixtureOutput {
        path: out.to_owned(),
        metadata_sha384,
        disk_size: spec.disk_size,
        lba_size: spec.lba_size,
        regions: planned.into_iter().map(|p| p.region).collect(),
        corruption: spec.corruption,
    })
}

/// Packs `cosi-marker`, `metadata.json` and the compressed regions (in
/// `planned` order, which is disk order) into the COSI tar at `out`.
pub(super) fn write_archive(
    out: &Path,
    json: &[u8],
    planned: &[Planned],
) -> Result<(), WriterError> {
    let file = File::create(out).map_err(io_err(out))?;
    let mut tar = tar::Builder::new(BufWriter::with_capacity(CHUNK, file));
    let mut append = |name: &str, size: u64, data: &mut dyn Read| -> Result<(), WriterError> {
        append_member(&mut tar, name, size, data).map_err(io_err(out))
    };
    append(MARKER_ENTRY, 0, &mut io::empty())?;
    append(METADATA_ENTRY, json.len() as u64, &mut &json[..])?;
    for p in planned {
        let mut f = File::open(&p.tmp).map_err(io_err(&p.tmp))?;
        append(&p.region.path, p.region.compressed_size, &mut f)?;
    }
    let mut inner = tar.into_inner().map_err(io_err(out))?;
    inner.flush().map_err(io_err(out))
}

/// Appends one regular file of `size` bytes from `data` the way every COSI
/// this writer makes has it (ustar, mode 0644, time 0), so the layout of
/// one archive can be predicted by appending the same to a counter.
pub(super) fn append_member<W: Write>(
    tar: &mut tar::Builder<W>,
    name: &str,
    size: u64,
    data: &mut dyn Read,
) -> io::Result<()> {
    let mut h = tar::Header::new_ustar();
    h.set_size(size);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut h, name, data)
}

pub(super) fn image_file(r: &FixtureRegion) -> ImageFile {
    ImageFile {
        path: r.path.clone(),
        compressed_size: r.compressed_size,
        uncompressed_size: r.uncompressed_size,
        sha384: r.sha384.clone(),
    }
}

fn build_metadata(spec: &FixtureSpec, planned: &[Planned]) -> Metadata {
    let mut images = Vec::new();
    let mut gpt_regions = Vec::new();
    for p in planned {
        let r = &p.region;
        match r.number {
            None => gpt_regions.push(GptRegion {
                image: image_file(r),
                region_type: RegionType::PrimaryGpt,
                number: None,
            }),
            Some(n) => {
                gpt_regions.push(GptRegion {
                    image: image_file(r),
                    region_type: RegionType::Partition,
                    number: Some(n),
                });
                let esp = n == 1;
                images.push(Filesystem {
                    image: image_file(r),
                    mount_point: if esp { "/boot/efi" } else { "/" }.to_owned(),
                    fs_type: if esp { "vfat" } else { "ext4" }.to_owned(),
                    fs_uuid: spec.fs_uuid(n),
                    part_type: if esp {
                        crate::metadata::PART_TYPE_ESP
                    } else {
                        crate::metadata::PART_TYPE_LINUX_DATA
                    }
                    .to_owned(),
                    verity: None,
                });
            }
        }
    }
    Metadata {
        version: "1.2".to_owned(),
        os_arch: OsArch::X86_64,
        os_release: os_release(spec.seed),
        images,
        disk: Some(Disk {
            size: spec.disk_size,
            disk_type: "gpt".to_owned(),
            lba_size: spec.lba_size,
            gpt_regions,
        }),
        os_packages: vec![OsPackage {
            name: "kernel".to_owned(),
            version: "6.6.0".to_owned(),
            release: format!("{}.azl3", spec.seed),
            arch: "x86_64".to_owned(),
        }],
        bootloader: Bootloader {
            bootloader_type: BootloaderType::Grub,
            systemd_boot: None,
        },
        id: Some(spec.guid(999).to_string()),
        compression: Compression {
            max_window_log: MAX_WINDOW_LOG,
        },
        chunk_index: None,
    }
}

/// Writes the plain disk image the (uncorrupted) fixture describes: primary
/// GPT, partition contents, backup GPT. For byte-for-byte comparisons.
pub fn write_disk_image(spec: &FixtureSpec, out: &Path) -> Result<Gpt, WriterError> {
    let gpt = spec.gpt()?;
    let file = File::create(out).map_err(io_err(out))?;
    file.set_len(spec.disk_size).map_err(io_err(out))?;
    gpt.write_primary(&file).map_err(io_err(out))?;
    let mut buf = vec![0u8; CHUNK];
    for e in gpt.partitions() {
        let mut reader = ContentReader::new(spec.seed, e.number, e.size_bytes(spec.lba_size));
        let mut offset = e.start_offset(spec.lba_size);
        loop {
            let n = reader.read(&mut buf).map_err(io_err(out))?;
            if n == 0 {
                break;
            }
            file.write_all_at(&buf[..n], offset).map_err(io_err(out))?;
            offset += n as u64;
        }
    }
    gpt.write_backup(&file).map_err(io_err(out))?;
    Ok(gpt)
}
