//! What an earlier run left under the new-root directory (the daemon
//! killed or crashed while a new root was mounted): checked at the start
//! of every operation that writes a volume or mounts a new root, before
//! anything is written. A mount left there would be written under (the
//! image written into the partition it still has mounted, and its cached
//! metadata written back over the new filesystem later) or written over.
//!
//! So: processes still running chrooted in it, or with their working
//! directory there, are ended; every mount under the directory is
//! unmounted, deepest first, and its loop device detached; the
//! directories are removed. A mount that cannot be unmounted (still
//! busy) refuses the operation, naming it, and nothing is written.

use std::path::{Path, PathBuf};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use trident_host::{Subkind, TridentError};

use super::tools::run_tool;

/// A mount of the mount table: where, and from what.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    target: PathBuf,
    source: String,
}

/// What [`clear`] found and cleaned.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Cleared {
    /// Mount points unmounted.
    pub unmounted: Vec<PathBuf>,
    /// Loop devices detached.
    pub detached: Vec<String>,
    /// Processes ended (pid).
    pub ended: Vec<i32>,
    /// Directories and files removed.
    pub removed: Vec<PathBuf>,
}

impl Cleared {
    pub fn is_empty(&self) -> bool {
        *self == Cleared::default()
    }
}

/// `\040` and friends of `/proc/self/mountinfo` decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && let Ok(code) = u8::from_str_radix(&field[i + 1..i + 4], 8)
        {
            out.push(code);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mounts at or under `base`, deepest first.
fn mounts_under(base: &Path) -> Vec<Mount> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut mounts: Vec<Mount> = text
        .lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let target = PathBuf::from(unescape(left.split(' ').nth(4)?));
            let source = unescape(right.split(' ').nth(1)?);
            target.starts_with(base).then_some(Mount { target, source })
        })
        .collect();
    mounts.sort_by_key(|m| std::cmp::Reverse(m.target.components().count()));
    mounts.dedup();
    mounts
}

/// Processes whose root or working directory is at or under `base`.
fn processes_in(base: &Path) -> Vec<i32> {
    let own = std::process::id();
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
                .filter(|pid| u32::try_from(*pid).ok() != Some(own))
                .filter(|pid| {
                    ["root", "cwd"].iter().any(|link| {
                        std::fs::read_link(format!("/proc/{pid}/{link}"))
                            .is_ok_and(|p| p.starts_with(base))
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn refused(message: String) -> TridentError {
    TridentError::new(Subkind::MountNewRoot, message)
}

/// Cleans what an earlier run left under `base` (the state directory's
/// `new-root`), or refuses naming what it cannot clean.
pub fn clear(base: &Path) -> Result<Cleared, TridentError> {
    let mut cleared = Cleared::default();
    if !base.exists() {
        return Ok(cleared);
    }
    for pid in processes_in(base) {
        if kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok() {
            cleared.ended.push(pid);
        }
    }
    if !cleared.ended.is_empty() {
        // Killed processes let go of their mounts once they are gone.
        for _ in 0..200 {
            if processes_in(base).is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    for mount in mounts_under(base) {
        let target = mount.target.to_string_lossy().into_owned();
        run_tool("umount", &[&target], Subkind::MountNewRoot).map_err(|e| {
            refused(format!(
                "A new root left by an earlier run is still mounted at {target} (from {}) and \
                 cannot be unmounted, so nothing is written until it is: {}",
                mount.source,
                e.message()
            ))
        })?;
        cleared.unmounted.push(mount.target.clone());
        let still_used = mounts_under(Path::new("/"))
            .iter()
            .any(|m| m.source == mount.source);
        if mount.source.starts_with("/dev/loop") && !still_used {
            match run_tool("losetup", &["-d", &mount.source], Subkind::MountNewRoot) {
                Ok(_) => cleared.detached.push(mount.source.clone()),
                Err(e) => tracing::warn!(device = %mount.source, error = %e.report(),
                    "loop device of a stale new root not detached"),
            }
        }
    }
    let entries = std::fs::read_dir(base)
        .map_err(|e| refused(format!("Cannot read {}: {e}", base.display())))?;
    for entry in entries.flatten() {
        let path = entry.path();
        // Nothing is mounted under `base` any more: removing follows no
        // mount (and std's removal follows no symlink).
        let removed = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        match removed {
            Ok(()) => cleared.removed.push(path),
            Err(e) => {
                return Err(refused(format!(
                    "Cannot remove {}, left by an earlier run: {e}",
                    path.display()
                )));
            }
        }
    }
    Ok(cleared)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;

    #[test]
    fn mount_table_fields_are_decoded() {
        assert_eq!(unescape(r"/a\040b/c\011d"), "/a b/c\td");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn a_missing_directory_is_nothing_to_clean() {
        let dir = tempfile::tempdir().unwrap();
        let cleared = clear(&dir.path().join("new-root")).unwrap();
        assert!(cleared.is_empty());
    }

    #[test]
    fn leftover_directories_and_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("new-root");
        std::fs::create_dir_all(base.join("op-1/etc")).unwrap();
        std::fs::write(base.join("op-1.esp.img"), b"esp").unwrap();
        let cleared = clear(&base).unwrap();
        assert_eq!(cleared.removed.len(), 2);
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
    }
}
