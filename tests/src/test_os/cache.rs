//! One build of the test OS shared by every VM test of a run (and by later
//! runs while the binaries are the same): the system extension, the
//! reverse-connect PKI and each version's image files, kept under
//! `$TRIDENT_VM_CACHE/test-os-<key>/` (default `/var/cache/trident-vm`).
//!
//! Each VM test used to build all of it again in its own temp directory:
//! 15-35 s of a 2-core machine per test, 9 tests in the test command. The
//! images are only read by the tests (the COSI each test packs from them,
//! the installer disk it streams, its blank target disks stay per test), so
//! one copy serves all.
//!
//! - `<key>` names what goes into the extension: the size and mtime of
//!   `tridentd`, `trident` and `trident-rcp` (cargo rewrites a binary it
//!   rebuilt) and the text of `packaging/sysext/build.sh` and
//!   `packaging/systemd/*`. A rebuilt daemon makes a new directory, with a
//!   new PKI: images of two builds never mix.
//! - Each version lives in `<version>-<bootloader>-<inputs>/`, `<inputs>`
//!   the hash of `build-image.sh`'s options and of the files it reads
//!   (`tests/vm/build-image.sh`, `tests/vm/guest/`, `tests/vm/verity/`,
//!   `TRIDENT_VM_ESP_MIB`, `DEBIAN_MIRROR`).
//! - Builds run under an exclusive `flock` of `<dir>/.lock`, each
//!   directory finished by a rename, so two test processes never build the
//!   same thing at once or read half of it.
//! - Older `test-os-*` directories are removed when a new one is made (the
//!   two newest stay): on a developer's machine every rebuild of the
//!   binaries makes one.
//! - `TRIDENT_VM_BUILD_CACHE=0` builds in the test's own directory, as
//!   before.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};

use super::repo_root;
use crate::bin_dir;

/// The binaries `packaging/sysext/build.sh` packs.
const SYSEXT_BINARIES: [&str; 3] = ["tridentd", "trident", "trident-rcp"];
/// `test-os-*` directories kept besides the one in use.
const KEEP: usize = 2;

/// The cache's root: `build-image.sh`'s (its root filesystem tars live there).
pub fn cache_root() -> PathBuf {
    std::env::var_os("TRIDENT_VM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/trident-vm"))
}

/// Whether VM tests share one build (`TRIDENT_VM_BUILD_CACHE`, default on).
pub fn enabled() -> bool {
    std::env::var("TRIDENT_VM_BUILD_CACHE").map_or(true, |v| v != "0")
}

/// Held while building into, or pruning, a cache directory.
pub struct BuildLock {
    _flock: Flock<fs::File>,
}

impl std::fmt::Debug for BuildLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BuildLock")
    }
}

/// Takes `dir/.lock` exclusively, waiting for another builder.
pub fn lock(dir: &Path) -> anyhow::Result<BuildLock> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(".lock");
    let file = fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let lock = Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .with_context(|| format!("locking {}", path.display()))?;
    Ok(BuildLock { _flock: lock })
}

fn hash_file(hasher: &mut Sha256, path: &Path) -> anyhow::Result<()> {
    let text = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    hasher.update(path.to_string_lossy().as_bytes());
    hasher.update((text.len() as u64).to_le_bytes());
    hasher.update(&text);
    Ok(())
}

/// Every file under `dir`, in name order (links as their text).
fn hash_tree(hasher: &mut Sha256, dir: &Path) -> anyhow::Result<()> {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            hash_tree(hasher, &path)?;
        } else if kind.is_symlink() {
            hasher.update(path.to_string_lossy().as_bytes());
            hasher.update(fs::read_link(&path)?.to_string_lossy().as_bytes());
        } else {
            hash_file(hasher, &path)?;
            hasher.update(entry.metadata()?.mode().to_le_bytes());
        }
    }
    Ok(())
}

fn short(hasher: Sha256) -> String {
    hex::encode(&hasher.finalize()[..8])
}

/// `test-os-<key>`: the directory of this build of the binaries.
pub fn build_dir() -> anyhow::Result<PathBuf> {
    let repo = repo_root();
    let mut hasher = Sha256::new();
    for bin in SYSEXT_BINARIES {
        let path = bin_dir().join(bin);
        let meta = fs::metadata(&path).with_context(|| format!("{}", path.display()))?;
        hasher.update(bin.as_bytes());
        hasher.update(meta.len().to_le_bytes());
        hasher.update(meta.mtime().to_le_bytes());
        hasher.update(meta.mtime_nsec().to_le_bytes());
    }
    hash_file(&mut hasher, &repo.join("packaging/sysext/build.sh"))?;
    hash_tree(&mut hasher, &repo.join("packaging/systemd"))?;
    Ok(cache_root().join(format!("test-os-{}", short(hasher))))
}

/// `<version>-<bootloader>-<inputs>` of one `build-image.sh` run.
pub fn version_dir(
    build: &Path,
    version: &str,
    bootloader: &str,
    options: &[&str],
) -> anyhow::Result<PathBuf> {
    let repo = repo_root();
    let mut hasher = Sha256::new();
    for option in options {
        hasher.update(option.as_bytes());
        hasher.update([0]);
    }
    for var in ["TRIDENT_VM_ESP_MIB", "DEBIAN_MIRROR"] {
        hasher.update(std::env::var(var).unwrap_or_default().as_bytes());
        hasher.update([0]);
    }
    hash_file(&mut hasher, &repo.join("tests/vm/build-image.sh"))?;
    hash_tree(&mut hasher, &repo.join("tests/vm/guest"))?;
    hash_tree(&mut hasher, &repo.join("tests/vm/verity"))?;
    Ok(build.join(format!("{version}-{bootloader}-{}", short(hasher))))
}

/// Removes the `test-os-*` directories but `keep` and the [`KEEP`] newest
/// others, each only when its lock is free (no test is building in it).
pub fn prune(keep: &Path) {
    let Ok(entries) = fs::read_dir(cache_root()) else {
        return;
    };
    let mut others: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("test-os-"))
        .map(|e| e.path())
        .filter(|p| p != keep)
        .filter_map(|p| Some((fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    others.sort();
    others.reverse();
    for (_, dir) in others.into_iter().skip(KEEP) {
        let Ok(file) = fs::File::open(dir.join(".lock")) else {
            continue;
        };
        if let Ok(_held) = Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            match fs::remove_dir_all(&dir) {
                Ok(()) => println!("test OS cache: removed {}", dir.display()),
                Err(e) => println!("test OS cache: removing {}: {e}", dir.display()),
            }
        }
    }
}
