//! The image pairs of the adaptive benchmark, built reproducibly: an ext4
//! root made by `mkfs.ext4 -d` from a generated tree of "packages" (a
//! directory of files each), with a fixed filesystem UUID, `hash_seed`
//! and time (`E2FSPROGS_FAKE_TIME`), every inode's times then set to that
//! time by `debugfs` (mkfs copies ctime and atime from the source tree,
//! which no one can set); one vfat ESP shared by both versions. Built
//! twice from the same tree, the root is the same file byte for byte, so
//! what differs between v1 and v2 is only what the change made differ.
//! Each version is packed as a plain COSI (the full update) and indexed
//! (`trident_cosi::writer::index_cosi`, what `mkcosi index` runs).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};
use trident_cosi::writer::{self, ImagesSpec, IndexOptions};

/// The root filesystem's UUID and `hash_seed` (the same in every version,
/// as an image pipeline that pins them would have).
const ROOT_UUID: &str = "3838a0b1-5d2e-4f51-9a2c-0a7e1b2c3d38";
const HASH_SEED: &str = "38385eed-0000-4000-8000-000000000038";
/// Every timestamp in the root: 2026-01-01T00:00:00Z.
const EPOCH: u64 = 1_767_225_600;
const EPOCH_DEBUGFS: &str = "20260101000000";
/// Files per package directory.
const FILES_PER_PACKAGE: usize = 20;

/// How v2 differs from v1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// One package's files rebuilt (new content, sizes a little off, so
    /// the files laid out after them move).
    OnePackage,
    /// The same package rebuilt to the same sizes: nothing moves. Beside
    /// [`Change::OnePackage`] it shows what moved data costs each tool.
    OnePackageSameSize,
    /// Every tenth file rebuilt, across all packages.
    TenPercent,
    /// Every file rebuilt.
    Everything,
}

impl Change {
    pub const ALL: [Change; 4] = [
        Change::OnePackage,
        Change::OnePackageSameSize,
        Change::TenPercent,
        Change::Everything,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Change::OnePackage => "one-package",
            Change::OnePackageSameSize => "one-package-same-size",
            Change::TenPercent => "ten-percent",
            Change::Everything => "everything",
        }
    }

    /// Whether file `file` of package `package` differs in v2.
    fn changes(self, package: usize, file: usize) -> bool {
        match self {
            Change::OnePackage | Change::OnePackageSameSize => package == 7,
            Change::TenPercent => (package * FILES_PER_PACKAGE + file) % 10 == 3,
            Change::Everything => true,
        }
    }
}

/// How big the images are.
#[derive(Debug, Clone, Copy)]
pub struct Size {
    pub packages: usize,
    /// The root filesystem's size in MiB (also its partitions').
    pub root_mib: u64,
}

/// One version of the image: its root filesystem and its two COSIs.
#[derive(Debug, Clone)]
pub struct Version {
    pub root: PathBuf,
    pub plain: PathBuf,
    pub plain_sha384: String,
    pub indexed: PathBuf,
    pub indexed_sha384: String,
}

/// The ESP both versions share: empty vfat, fixed volume id.
pub fn esp(dir: &Path) -> anyhow::Result<PathBuf> {
    let esp = dir.join("esp.img");
    let _ = std::fs::remove_file(&esp);
    run(Command::new("mkfs.vfat")
        .args(["-C", "-i", "38383838"])
        .arg(&esp)
        .arg("6144"))?;
    Ok(esp)
}

/// Builds version `name` (v1: `change` None) in `dir`.
pub fn build(
    dir: &Path,
    name: &str,
    size: Size,
    change: Option<Change>,
    esp: &Path,
) -> anyhow::Result<Version> {
    let tree = dir.join(format!("{name}-tree"));
    let _ = std::fs::remove_dir_all(&tree);
    let mut paths = vec!["/".to_owned()];
    for package in 0..size.packages {
        let rel = format!("usr/lib/pkg{package:03}");
        std::fs::create_dir_all(tree.join(&rel))?;
        for file in 0..FILES_PER_PACKAGE {
            let rebuilt = change.filter(|c| c.changes(package, file));
            let grows = rebuilt.is_some_and(|c| c != Change::OnePackageSameSize);
            let path = format!("{rel}/file{file:02}");
            let bytes = content(package, file, rebuilt.is_some(), grows);
            std::fs::write(tree.join(&path), bytes)?;
            paths.push(format!("/{path}"));
        }
    }
    for dir in ["/usr", "/usr/lib", "/lost+found"] {
        paths.push(dir.to_owned());
    }
    paths.extend((0..size.packages).map(|p| format!("/usr/lib/pkg{p:03}")));

    let root = dir.join(format!("{name}-root.img"));
    let _ = std::fs::remove_file(&root);
    run(Command::new("mkfs.ext4")
        .env("E2FSPROGS_FAKE_TIME", EPOCH.to_string())
        .args(["-q", "-F", "-b", "4096", "-U", ROOT_UUID, "-E"])
        .arg(format!("hash_seed={HASH_SEED},root_owner=0:0"))
        .arg("-d")
        .arg(&tree)
        .arg(&root)
        .arg(format!("{}M", size.root_mib)))?;
    let mut script = String::new();
    for path in &paths {
        for field in ["atime", "mtime", "ctime", "crtime"] {
            writeln!(script, "sif {path} {field} {EPOCH_DEBUGFS}")?;
        }
    }
    let script_path = dir.join(format!("{name}-times.debugfs"));
    std::fs::write(&script_path, script)?;
    run(Command::new("debugfs")
        .env("E2FSPROGS_FAKE_TIME", EPOCH.to_string())
        .arg("-w")
        .arg("-f")
        .arg(&script_path)
        .arg(&root))?;
    std::fs::remove_dir_all(&tree)?;

    let os_release = "ID=azurelinux\nVERSION_ID=\"3.0\"\n";
    let spec = ImagesSpec::esp_and_root(esp.to_path_buf(), root.clone(), ROOT_UUID, os_release);
    let plain = dir.join(format!("{name}-plain.cosi"));
    let packed = writer::pack_images(&spec, &plain)?;
    let indexed = dir.join(format!("{name}-indexed.cosi"));
    let index = writer::index_cosi(&plain, &indexed, &index_options()?)?;
    Ok(Version {
        root,
        plain,
        plain_sha384: packed.metadata_sha384,
        indexed,
        indexed_sha384: index.metadata_sha384,
    })
}

/// `mkcosi index`'s defaults, but for the chunk size when
/// `TRIDENT_BENCH_CHUNK_SIZE` (bytes) sets it: to weigh chunk sizes
/// against each other on the same pairs.
pub fn index_options() -> anyhow::Result<IndexOptions> {
    let mut options = IndexOptions::default();
    if let Ok(size) = std::env::var("TRIDENT_BENCH_CHUNK_SIZE") {
        options.chunk_size = size
            .parse()
            .with_context(|| format!("TRIDENT_BENCH_CHUNK_SIZE={size:?} is not a byte count"))?;
    }
    Ok(options)
}

/// The bytes of file `file` of package `package`, as built (`rebuilt`:
/// as v2 builds it). Half of each 4 KiB block is random and half a
/// repeated line, so the files compress about 2:1, as binaries and
/// libraries do; a rebuilt file has all other bytes, and is 1/16 longer
/// when it `grows` (a new version seldom has the same size).
fn content(package: usize, file: usize, rebuilt: bool, grows: bool) -> Vec<u8> {
    let seed = ((package as u64) << 32) | ((file as u64) << 1);
    // The size from the file alone, so a rebuild that does not grow keeps
    // it: 4 KiB to 124 KiB, about 64 KiB on average.
    let mut len = (1 + fastrand::Rng::with_seed(seed).usize(..31)) * 4096;
    let mut rng = fastrand::Rng::with_seed(seed ^ 0x3838_3838 ^ u64::from(rebuilt));
    if grows {
        len += len / 16;
    }
    let line = format!("pkg{package:03} file{file:02} v{} ", u8::from(rebuilt) + 1);
    let mut bytes = Vec::with_capacity(len);
    while bytes.len() < len {
        let random = (len - bytes.len()).min(2048);
        bytes.extend((0..random).map(|_| rng.u8(..)));
        while bytes.len() < len && bytes.len() % 4096 != 0 {
            bytes.push(line.as_bytes()[bytes.len() % line.len()]);
        }
    }
    bytes
}

fn run(command: &mut Command) -> anyhow::Result<()> {
    let out = command
        .output()
        .with_context(|| format!("run {command:?}"))?;
    if !out.status.success() {
        bail!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
