//! mkcosi: writes a COSI 1.2 file and prints a JSON summary. Two modes:
//!
//! - fixture (default): deterministic generated content,
//!   `mkcosi --out FILE --size 256MiB --seed 2`
//! - pack: given filesystem images become the partitions of a fresh GPT,
//!   `mkcosi --out FILE --os-release FILE \
//!      --filesystem image=esp.img,mount=/boot/efi,fs=vfat,uuid=ABCD-1234,type=esp \
//!      --filesystem image=root.img,mount=/,fs=ext4,uuid=...,type=root[,verity=yes] \
//!      --boot-entry /boot/efi/loader/entries/os.conf --boot-entry-kernel 6.1.0-9-amd64 \
//!      --boot-entry-cmdline "root=UUID=... rw"`
//!   (`--bootloader grub` without an entry; `--boot-entry-type
//!   uki-standalone` with the UKI's path for a UKI image)
//!
//! Either mode with `--chunk-size SIZE` writes an indexed COSI (for
//! adaptive A/B updates, `trident_cosi::chunk_index`). `mkcosi index IN
//! --out OUT` turns any existing COSI into an indexed one and prints its
//! new metadata SHA-384 (the Host Configuration's `image.sha384`).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use trident_cosi::metadata::{
    Bootloader, BootloaderType, PART_TYPE_ESP, PART_TYPE_LINUX_DATA, PART_TYPE_ROOT_X86_64,
    SystemdBoot, SystemdBootEntry, SystemdBootEntryType,
};
use trident_cosi::writer::{
    self, Corruption, FixtureOutput, FixtureSpec, ImagePartition, ImagesSpec, IndexOptions,
};
use uuid::Uuid;

const DEFAULT_FIXTURE_SIZE: u64 = 256 << 20;

#[derive(Debug, Parser)]
#[command(
    about = "Write a COSI 1.2 image: a deterministic test fixture (GPT disk with ESP + root), \
             or given filesystem images packed with --filesystem; `mkcosi index` makes any \
             COSI an indexed one",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Output .cosi file.
    #[arg(long, required = true)]
    out: Option<PathBuf>,
    /// Write an indexed COSI: every region as independent zstd frames of
    /// SIZE uncompressed bytes (e.g. 1MiB), with the chunk index adaptive
    /// A/B updates fetch by (what `mkcosi index` does to any COSI).
    #[arg(long, value_parser = parse_size)]
    chunk_size: Option<u64>,
    /// Disk size, e.g. 256MiB, 1GiB, or bytes (fixture default 256MiB;
    /// pack default: the smallest disk that holds the images).
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Pack mode: one filesystem image per partition, in disk order, as
    /// image=PATH,mount=PATH,fs=TYPE,uuid=FSUUID,type=esp|root|linux|GUID
    /// [,name=GPT-NAME] [,size=SIZE] [,verity=yes] (verity: `veritysetup
    /// format` makes the filesystem's hash tree, packed as the next
    /// partition and named with its root hash in `images[].verity`).
    #[arg(long = "filesystem", value_parser = parse_filesystem)]
    filesystems: Vec<ImagePartition>,
    /// Pack mode: the OS's os-release file (required with --filesystem).
    #[arg(long)]
    os_release: Option<PathBuf>,
    /// Pack mode: bootloader type recorded in the metadata: systemd-boot
    /// (needs --boot-entry) or grub.
    #[arg(long, default_value = "systemd-boot", value_parser = parse_bootloader)]
    bootloader: BootloaderType,
    /// Pack mode, systemd-boot: the boot entry's path in the OS (e.g.
    /// /boot/efi/loader/entries/os.conf, a classic kernel + initrd entry).
    #[arg(long)]
    boot_entry: Option<String>,
    /// Pack mode, systemd-boot: the boot entry's type, config (a Type 1
    /// entry: kernel + initrd) or uki-standalone (the entry's path is a
    /// UKI on the ESP, e.g. /boot/efi/EFI/Linux/os.efi).
    #[arg(long, default_value = "config", value_parser = parse_entry_type)]
    boot_entry_type: SystemdBootEntryType,
    /// Pack mode, systemd-boot: the boot entry's kernel release.
    #[arg(long, requires = "boot_entry")]
    boot_entry_kernel: Option<String>,
    /// Pack mode, systemd-boot: the boot entry's kernel command line.
    #[arg(long, requires = "boot_entry")]
    boot_entry_cmdline: Option<String>,
    /// Content/GUID seed; use another seed for an "update" image.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Logical block size (512 or 4096).
    #[arg(long, default_value_t = 512)]
    lba_size: u64,
    /// ESP size.
    #[arg(long, default_value = "8MiB", value_parser = parse_size)]
    esp_size: u64,
    /// ZSTD level.
    #[arg(long, default_value_t = writer::DEFAULT_ZSTD_LEVEL)]
    level: i32,
    /// Also write the plain disk image the COSI describes.
    #[arg(long)]
    disk_image: Option<PathBuf>,
    /// Corrupt the output: flip-byte:REGION, truncate:REGION or
    /// oversize:REGION (region 0 is the primary GPT).
    #[arg(long, value_parser = parse_corruption)]
    corrupt: Option<Corruption>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Turn an existing COSI (any writer's, e.g. Image Customizer's) into an
    /// indexed one: each region re-compressed as independent zstd frames of
    /// --chunk-size uncompressed bytes (the same bytes; sizes and hashes
    /// recomputed), the chunk index added after metadata.json. Prints a JSON
    /// summary whose metadata_sha384 is the Host Configuration's new
    /// image.sha384.
    Index(IndexArgs),
}

#[derive(Debug, clap::Args)]
struct IndexArgs {
    /// The COSI file to index.
    input: PathBuf,
    /// The indexed COSI to write.
    #[arg(long)]
    out: PathBuf,
    /// Uncompressed bytes per chunk: a multiple of 4KiB up to 64MiB.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    chunk_size: u64,
    /// ZSTD level of the frames.
    #[arg(long, default_value_t = writer::DEFAULT_ZSTD_LEVEL)]
    level: i32,
}

fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit {other:?} (use B, KiB, MiB, GiB)"
            ));
        }
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("{s:?} is too large"))
}

fn parse_corruption(s: &str) -> Result<Corruption, String> {
    let (kind, region) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: expected KIND:REGION"))?;
    let region: usize = region
        .parse()
        .map_err(|_| format!("{region:?} is not a region index"))?;
    match kind {
        "flip-byte" => Ok(Corruption::FlipByte { region }),
        "truncate" => Ok(Corruption::Truncate { region }),
        "oversize" => Ok(Corruption::RegionLargerThanPartition { region }),
        other => Err(format!(
            "unknown corruption {other:?} (flip-byte, truncate, oversize)"
        )),
    }
}

fn parse_part_type(s: &str) -> Result<Uuid, String> {
    let guid = match s {
        "esp" => PART_TYPE_ESP,
        "root" => PART_TYPE_ROOT_X86_64,
        "linux" => PART_TYPE_LINUX_DATA,
        other => other,
    };
    Uuid::parse_str(guid).map_err(|_| format!("{s:?} is not esp, root, linux or a GUID"))
}

fn parse_filesystem(s: &str) -> Result<ImagePartition, String> {
    let (mut image, mut mount, mut fs, mut uuid, mut part_type) = (None, None, None, None, None);
    let (mut name, mut size, mut verity) = (None, None, false);
    for field in s.split(',') {
        let (key, value) = field
            .split_once('=')
            .ok_or_else(|| format!("{field:?}: expected KEY=VALUE"))?;
        match key {
            "image" => image = Some(PathBuf::from(value)),
            "mount" => mount = Some(value.to_owned()),
            "fs" => fs = Some(value.to_owned()),
            "uuid" => uuid = Some(value.to_owned()),
            "type" => part_type = Some(parse_part_type(value)?),
            "name" => name = Some(value.to_owned()),
            "size" => size = Some(parse_size(value)?),
            "verity" => {
                verity = match value {
                    "yes" => true,
                    "no" => false,
                    _ => return Err(format!("verity={value:?}: expected yes or no")),
                }
            }
            other => return Err(format!("unknown key {other:?}")),
        }
    }
    let missing = |key: &str| format!("{s:?}: {key}= is required");
    let image = image.ok_or_else(|| missing("image"))?;
    let mount_point = mount.ok_or_else(|| missing("mount"))?;
    Ok(ImagePartition {
        name: name.unwrap_or_else(|| {
            if mount_point == "/" {
                "root".to_owned()
            } else {
                mount_point.trim_start_matches('/').replace('/', "-")
            }
        }),
        image,
        mount_point,
        fs_type: fs.ok_or_else(|| missing("fs"))?,
        fs_uuid: uuid.ok_or_else(|| missing("uuid"))?,
        part_type: part_type.ok_or_else(|| missing("type"))?,
        size,
        verity,
    })
}

fn pack(args: Args) -> Result<()> {
    if args.corrupt.is_some() {
        bail!("--corrupt applies to fixtures only, not to --filesystem images");
    }
    let Some(os_release) = &args.os_release else {
        bail!("--filesystem needs --os-release FILE (the OS's /etc/os-release)");
    };
    let bootloader = bootloader(&args)?;
    let spec = ImagesSpec {
        partitions: args.filesystems.clone(),
        disk_size: args.size,
        lba_size: args.lba_size,
        zstd_level: args.level,
        os_release: std::fs::read_to_string(os_release)
            .with_context(|| format!("reading {}", os_release.display()))?,
        bootloader,
    };
    if let Some(path) = &args.disk_image {
        writer::write_images_disk(&spec, path)
            .with_context(|| format!("writing disk image {}", path.display()))?;
    }
    let out_path = out_path(&args)?;
    let written = written_path(&args, out_path);
    let out = writer::pack_images(&spec, &written)
        .with_context(|| format!("writing {}", written.display()))?;
    finish(&args, out)
}

fn out_path(args: &Args) -> Result<&std::path::Path> {
    args.out.as_deref().context("--out FILE is required")
}

/// Where the plain COSI goes: the output, or next to it when it is to be
/// indexed.
fn written_path(args: &Args, out: &std::path::Path) -> PathBuf {
    match args.chunk_size {
        Some(_) => {
            let mut name = out.as_os_str().to_owned();
            name.push(".unindexed");
            PathBuf::from(name)
        }
        None => out.to_owned(),
    }
}

/// Indexes the plain COSI when asked, then prints the summary.
fn finish(args: &Args, mut out: FixtureOutput) -> Result<()> {
    let (Some(chunk_size), Some(target)) = (args.chunk_size, args.out.as_deref()) else {
        println!("{}", serde_json::to_string(&out)?);
        return Ok(());
    };
    let options = IndexOptions {
        chunk_size,
        zstd_level: args.level,
    };
    let indexed = writer::index_cosi(&out.path, target, &options)
        .with_context(|| format!("indexing into {}", target.display()));
    let _ = std::fs::remove_file(&out.path);
    let indexed = indexed?;
    out.path = indexed.path;
    out.metadata_sha384 = indexed.metadata_sha384;
    for (region, framed) in out.regions.iter_mut().zip(&indexed.regions) {
        region.compressed_size = framed.compressed_size;
        region.sha384 = framed.sha384.clone();
    }
    let mut summary = serde_json::to_value(&out)?;
    summary["chunk_size"] = chunk_size.into();
    summary["index_sha384"] = indexed.index_sha384.into();
    println!("{}", serde_json::to_string(&summary)?);
    Ok(())
}

fn index(args: IndexArgs) -> Result<()> {
    let options = IndexOptions {
        chunk_size: args.chunk_size,
        zstd_level: args.level,
    };
    let out = writer::index_cosi(&args.input, &args.out, &options).with_context(|| {
        format!(
            "indexing {} into {}",
            args.input.display(),
            args.out.display()
        )
    })?;
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}

fn main() -> Result<()> {
    let mut args = Args::parse();
    if let Some(Command::Index(index_args)) = args.command.take() {
        return index(index_args);
    }
    if !args.filesystems.is_empty() {
        return pack(args);
    }
    let spec = FixtureSpec {
        disk_size: args.size.unwrap_or(DEFAULT_FIXTURE_SIZE),
        lba_size: args.lba_size,
        seed: args.seed,
        esp_size: args.esp_size,
        zstd_level: args.level,
        corruption: args.corrupt,
    };
    if let Some(path) = &args.disk_image {
        if args.corrupt.is_some() {
            bail!("--disk-image describes the intact image; do not combine it with --corrupt");
        }
        writer::write_disk_image(&spec, path)
            .with_context(|| format!("writing disk image {}", path.display()))?;
    }
    if args.corrupt.is_some() && args.chunk_size.is_some() {
        bail!("--corrupt breaks a plain fixture; do not combine it with --chunk-size");
    }
    let written = written_path(&args, out_path(&args)?);
    let out = writer::write_cosi(&spec, &written)
        .with_context(|| format!("writing {}", written.display()))?;
    finish(&args, out)
}

fn parse_entry_type(text: &str) -> Result<SystemdBootEntryType, String> {
    match text {
        "config" => Ok(SystemdBootEntryType::Config),
        "uki-standalone" => Ok(SystemdBootEntryType::UkiStandalone),
        "uki-config" => Ok(SystemdBootEntryType::UkiConfig),
        other => Err(format!(
            "unknown entry type {other:?}: config, uki-standalone or uki-config"
        )),
    }
}

fn parse_bootloader(text: &str) -> Result<BootloaderType, String> {
    match text {
        "systemd-boot" => Ok(BootloaderType::SystemdBoot),
        "grub" => Ok(BootloaderType::Grub),
        other => Err(format!(
            "unknown bootloader {other:?}: systemd-boot or grub"
        )),
    }
}

/// The metadata's bootloader section from the pack-mode flags.
fn bootloader(args: &Args) -> Result<Bootloader> {
    let systemd_boot = match (args.bootloader, &args.boot_entry) {
        (BootloaderType::Grub, None) => None,
        (BootloaderType::Grub, Some(_)) => bail!("--boot-entry is for --bootloader systemd-boot"),
        (BootloaderType::SystemdBoot, None) => {
            bail!("--bootloader systemd-boot needs --boot-entry (and its kernel and cmdline)")
        }
        (BootloaderType::SystemdBoot, Some(path)) => Some(SystemdBoot {
            entries: vec![SystemdBootEntry {
                entry_type: args.boot_entry_type,
                path: path.clone(),
                kernel: args.boot_entry_kernel.clone().unwrap_or_default(),
                cmdline: args.boot_entry_cmdline.clone().unwrap_or_default(),
            }],
        }),
    };
    Ok(Bootloader {
        bootloader_type: args.bootloader,
        systemd_boot,
    })
}
