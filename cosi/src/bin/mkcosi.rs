//! mkcosi: writes a deterministic COSI 1.2 fixture and prints a JSON summary.
//!
//! `cargo run -p trident-cosi --bin mkcosi -- --out FILE --size 256MiB --seed 2`

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Parser;
use trident_cosi::writer::{self, Corruption, FixtureSpec};

#[derive(Debug, Parser)]
#[command(about = "Write a deterministic COSI 1.2 test image (GPT disk with ESP + root)")]
struct Args {
    /// Output .cosi file.
    #[arg(long)]
    out: PathBuf,
    /// Disk size, e.g. 256MiB, 1GiB, or bytes.
    #[arg(long, default_value = "256MiB", value_parser = parse_size)]
    size: u64,
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

fn main() -> Result<()> {
    let args = Args::parse();
    let spec = FixtureSpec {
        disk_size: args.size,
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
    let out = writer::write_cosi(&spec, &args.out)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}
