//! One daemon per state directory and per datastore, and only on paths
//! nobody else can write.
//!
//! Two daemons on one state directory would each mark the other's running
//! operation interrupted and write the same disks at once. So before
//! anything is read or written there, [`take`]:
//! - refuses a state directory or datastore path that another user could
//!   change: the path itself, any directory on it (as given and as the
//!   symlinks resolve), owned by someone other than root or writable by
//!   group or others, as sshd's `StrictModes` does. A root-owned directory
//!   with the sticky bit (`/tmp`) is allowed above them, as systemd allows
//!   it; the state directory itself never;
//! - holds an exclusive `flock` on the state directory and on the
//!   datastore file for the daemon's life. `flock` locks belong to the open
//!   file description, so SQLite's own POSIX record locks on the datastore
//!   (which any `close` of the file in this process would drop) are neither
//!   touched nor relied on. A second daemon is refused, naming the first
//!   one's pid (from `/proc/locks`).

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// Why the daemon may not use its state directory or datastore.
#[derive(Debug, thiserror::Error)]
pub enum StateLockError {
    /// A path others could change.
    #[error("refusing {what} {}: {why} (it must be root's and writable by root alone, as must every directory above it)", path.display())]
    Unsafe {
        /// The state directory or the datastore.
        what: &'static str,
        /// The offending path (the state path or a directory above it).
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Another daemon holds it.
    #[error("{what} {} is in use by another tridentd{}; stop it first", path.display(), pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default())]
    InUse {
        /// The state directory or the datastore.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The holder, when `/proc/locks` names it.
        pid: Option<u32>,
    },
    /// A file system call failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// On which path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The locks, held until dropped (at the daemon's exit).
#[derive(Debug)]
pub struct StateLock {
    _state_dir: Flock<File>,
    _datastore: Flock<File>,
}

const STATE_DIR: &str = "state directory";
const DATASTORE: &str = "datastore";

/// Checks, creates (0700) and locks `state_dir`, then checks and locks the
/// datastore file at `datastore` (created empty, 0600, if missing: SQLite
/// takes an empty file as a new database).
pub fn take(state_dir: &Path, datastore: &Path) -> Result<StateLock, StateLockError> {
    let state_dir = resolve_checked(STATE_DIR, &absolute(state_dir)?, true)?;
    let datastore = resolve_checked(DATASTORE, &absolute(datastore)?, false)?;
    if let Err(source) = DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&state_dir)
    {
        return Err(io("create", &state_dir, source));
    }
    let dir = open_no_follow(&state_dir, libc_flags::DIRECTORY, false)
        .map_err(|source| io("open", &state_dir, source))?;
    check_owned_and_private(STATE_DIR, &state_dir, &dir, false)?;
    let state_lock = lock(STATE_DIR, &state_dir, dir)?;

    if let Some(parent) = datastore.parent() {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|source| io("create", parent, source))?;
    }
    let file =
        open_no_follow(&datastore, 0, true).map_err(|source| io("open", &datastore, source))?;
    check_owned_and_private(DATASTORE, &datastore, &file, false)?;
    let datastore_lock = lock(DATASTORE, &datastore, file)?;
    Ok(StateLock {
        _state_dir: state_lock,
        _datastore: datastore_lock,
    })
}

mod libc_flags {
    pub const DIRECTORY: i32 = nix::libc::O_DIRECTORY;
}

fn io(what: &'static str, path: &Path, source: std::io::Error) -> StateLockError {
    StateLockError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

fn absolute(path: &Path) -> Result<PathBuf, StateLockError> {
    std::path::absolute(path).map_err(|source| io("resolve", path, source))
}

/// Opens `path` without following a symlink in its last component;
/// `create` makes a missing regular file 0600.
fn open_no_follow(path: &Path, flags: i32, create: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC | flags);
    if create {
        options.write(true).create(true).mode(0o600);
    }
    options.open(path)
}

/// `path` with its symlinks resolved, every directory on the way (as
/// written, and as the symlinks resolve) checked: root's, and writable by
/// others only if sticky. A symlink as the last component is resolved for
/// a directory (`link_leaf`) and refused for a file. The resolved path may
/// not exist yet (from the first missing component on, we create it).
fn resolve_checked(
    what: &'static str,
    path: &Path,
    link_leaf: bool,
) -> Result<PathBuf, StateLockError> {
    let mut current = path.to_owned();
    let mut hops = 0;
    'resolve: loop {
        let components: Vec<Component> = current.components().collect();
        let mut prefix = PathBuf::new();
        for (at, component) in components.iter().enumerate() {
            match component {
                Component::CurDir => continue,
                // No symlink is left in `prefix`: `..` is lexical there.
                Component::ParentDir => {
                    prefix.pop();
                    continue;
                }
                Component::RootDir | Component::Prefix(_) => {
                    prefix.push(component);
                    check_dir(what, &prefix, true)?;
                    continue;
                }
                Component::Normal(_) => prefix.push(component),
            }
            let leaf = at + 1 == components.len();
            let meta = match fs::symlink_metadata(&prefix) {
                Ok(meta) => meta,
                Err(error) if error.kind() == ErrorKind::NotFound => break 'resolve,
                Err(source) => return Err(io("stat", &prefix, source)),
            };
            if meta.file_type().is_symlink() {
                hops += 1;
                if (leaf && !link_leaf) || hops > 40 {
                    return Err(StateLockError::Unsafe {
                        what,
                        path: prefix,
                        why: if hops > 40 {
                            "too many symbolic links"
                        } else {
                            "it is a symbolic link"
                        }
                        .into(),
                    });
                }
                let target =
                    fs::read_link(&prefix).map_err(|source| io("read link", &prefix, source))?;
                let mut resolved = prefix.parent().unwrap_or(Path::new("/")).join(target);
                for rest in &components[at + 1..] {
                    resolved.push(rest);
                }
                current = resolved;
                continue 'resolve;
            }
            if !leaf {
                check_dir(what, &prefix, true)?;
            }
        }
        break;
    }
    Ok(current)
}

/// A directory on the way to a state path: root's, and not writable by
/// group or others unless sticky (`ancestor`) and root's.
fn check_dir(what: &'static str, dir: &Path, ancestor: bool) -> Result<(), StateLockError> {
    let meta = fs::metadata(dir).map_err(|source| io("stat", dir, source))?;
    check_meta(what, dir, &meta, ancestor)
}

fn check_meta(
    what: &'static str,
    path: &Path,
    meta: &fs::Metadata,
    ancestor: bool,
) -> Result<(), StateLockError> {
    let unsafe_because = |why: String| StateLockError::Unsafe {
        what,
        path: path.to_owned(),
        why,
    };
    if meta.uid() != 0 {
        return Err(unsafe_because(format!("it is owned by uid {}", meta.uid())));
    }
    let mode = meta.mode();
    let sticky = mode & 0o1000 != 0;
    if mode & 0o022 != 0 && !(ancestor && sticky) {
        return Err(unsafe_because(format!(
            "its mode {:04o} lets {} write to it",
            mode & 0o7777,
            if mode & 0o002 != 0 {
                "others"
            } else {
                "its group"
            }
        )));
    }
    Ok(())
}

/// The opened state path itself: root's, not writable by group or others.
fn check_owned_and_private(
    what: &'static str,
    path: &Path,
    file: &File,
    ancestor: bool,
) -> Result<(), StateLockError> {
    let meta = file.metadata().map_err(|source| io("stat", path, source))?;
    check_meta(what, path, &meta, ancestor)
}

fn lock(what: &'static str, path: &Path, file: File) -> Result<Flock<File>, StateLockError> {
    let inode = file.metadata().map(|m| (m.dev(), m.ino())).ok();
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
        if errno == nix::errno::Errno::EWOULDBLOCK {
            StateLockError::InUse {
                what,
                path: path.to_owned(),
                pid: inode.and_then(|(dev, ino)| flock_holder(dev, ino)),
            }
        } else {
            io("lock", path, errno.into())
        }
    })
}

/// The pid holding a `flock` on the file of (`dev`, `ino`), from
/// `/proc/locks` (`1: FLOCK  ADVISORY  WRITE 1234 00:1f:5678 0 EOF`).
fn flock_holder(dev: u64, ino: u64) -> Option<u32> {
    let locks = fs::read_to_string("/proc/locks").ok()?;
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "->" marks a waiter, not a holder.
        if fields.get(1) != Some(&"FLOCK") || fields.contains(&"->") {
            return None;
        }
        let id: Vec<&str> = fields.get(5)?.split(':').collect();
        let matches = id.len() == 3
            && u64::from_str_radix(id[0], 16).ok()? == major
            && u64::from_str_radix(id[1], 16).ok()? == minor
            && id[2].parse::<u64>().ok()? == ino;
        matches.then(|| fields.get(4)?.parse().ok()).flatten()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_private_state_dir_under_a_sticky_tmp_is_taken_and_a_second_taker_is_refused_naming_the_pid()
     {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let lock = take(&state, &state.join("datastore.sqlite")).unwrap();
        let meta = fs::metadata(&state).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700);
        let error = take(&state, &state.join("datastore.sqlite")).unwrap_err();
        let text = error.to_string();
        assert!(
            matches!(error, StateLockError::InUse { pid: Some(pid), .. } if pid == std::process::id()),
            "{text}"
        );
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        drop(lock);
        take(&state, &state.join("datastore.sqlite")).unwrap();
    }

    #[test]
    fn another_state_dir_on_the_same_datastore_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let datastore = tmp.path().join("shared/datastore.sqlite");
        let _first = take(&tmp.path().join("one"), &datastore).unwrap();
        let error = take(&tmp.path().join("two"), &datastore).unwrap_err();
        assert!(
            matches!(
                error,
                StateLockError::InUse {
                    what: DATASTORE,
                    ..
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn a_world_writable_state_dir_or_parent_or_one_owned_by_another_user_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        // The state directory itself 1777 (reached through a symlink).
        let open = tmp.path().join("open");
        fs::create_dir(&open).unwrap();
        chmod(&open, 0o1777);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        let error = take(&link, &link.join("datastore.sqlite")).unwrap_err();
        assert!(
            error.to_string().contains("mode 1777 lets others write"),
            "{error}"
        );
        // A 0777 parent without the sticky bit.
        let loose = tmp.path().join("loose");
        fs::create_dir(&loose).unwrap();
        chmod(&loose, 0o777);
        let error = take(&loose.join("state"), &loose.join("state/ds")).unwrap_err();
        assert!(
            matches!(&error, StateLockError::Unsafe { path, .. } if path == &loose),
            "{error}"
        );
        // A group-writable parent.
        chmod(&loose, 0o770);
        assert!(take(&loose.join("state"), &loose.join("state/ds")).is_err());
        // A parent owned by nobody.
        let theirs = tmp.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let error = take(&theirs.join("state"), &theirs.join("state/ds")).unwrap_err();
        assert!(error.to_string().contains("owned by uid 65534"), "{error}");
        // Nothing was created under any of them.
        assert!(!loose.join("state").exists() && !theirs.join("state").exists());
    }

    #[test]
    fn a_datastore_in_a_world_writable_directory_or_a_symlinked_datastore_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let drop_box = tmp.path().join("dropbox");
        fs::create_dir(&drop_box).unwrap();
        chmod(&drop_box, 0o777);
        assert!(take(&state, &drop_box.join("datastore.sqlite")).is_err());
        // A symlink planted where the datastore goes is never followed.
        let target = tmp.path().join("elsewhere");
        fs::write(&target, b"").unwrap();
        fs::create_dir_all(&state).unwrap();
        chmod(&state, 0o700);
        std::os::unix::fs::symlink(&target, state.join("datastore.sqlite")).unwrap();
        let error = take(&state, &state.join("datastore.sqlite")).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
    }
}
