//! The new root as a directory handle: every write, mkdir, chmod, chown,
//! rename and remove tridentd does inside a new root (or, at a runtime
//! update, inside the running system's root) goes through [`RootDir`].
//!
//! Paths are resolved as the installed OS will see them, as under
//! `chroot`: an absolute symlink resolves inside the root
//! (`/etc/resolv.conf -> /run/...` lands in the new root's `/run`, never
//! the host's) and `..` stops at the root. Resolution is libpathrs's
//! (`openat2` with `RESOLVE_IN_ROOT`, or its checked `O_PATH` walk on
//! kernels without it), so no path text is ever joined to the host
//! directory and handed to `open`. What is written is reached through
//! file descriptors (`fchmod`, `fchown`); tools that need a path (mount
//! points) get [`RootDir::host_path`], the resolved directory's real path.
//!
//! A dangling symlink is followed too, as `open(O_CREAT)` follows one: its
//! target is made inside the root (and the directories on its way).

use std::ffi::OsStr;
use std::fs::{File, Permissions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use pathrs::error::ErrorKind;
use pathrs::flags::{OpenFlags, RenameFlags};
use pathrs::{Handle, InodeType, Root};

/// Symlinks followed on one path before giving up (the kernel's limit).
const MAX_LINKS: usize = 40;
/// The mode of directories made on the way to a path.
const DIR_MODE: u32 = 0o755;

/// A root directory every path is resolved inside.
#[derive(Debug)]
pub struct RootDir {
    root: Root,
    /// The directory, as the host names it (canonical).
    path: PathBuf,
}

/// The errno of a libpathrs error, when a system call failed.
fn errno(e: &pathrs::error::Error) -> Option<i32> {
    match e.kind() {
        ErrorKind::OsError(errno) => errno,
        _ => None,
    }
}

fn io_error(e: pathrs::error::Error) -> io::Error {
    match errno(&e) {
        Some(errno) => {
            let os = io::Error::from_raw_os_error(errno);
            io::Error::new(os.kind(), format!("{e}: {os}"))
        }
        None => io::Error::other(e.to_string()),
    }
}

fn is_not_found(e: &pathrs::error::Error) -> bool {
    errno(e) == Some(Errno::ENOENT as i32)
}

/// `path` as a path relative to the root ("/etc/x" and "etc/x" alike).
fn relative(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::RootDir | Component::Prefix(_)))
        .collect()
}

/// "/" for the root itself (pathrs resolves an absolute path inside the
/// root, as it does every symlink target).
fn or_root(path: &Path) -> &Path {
    if path.as_os_str().is_empty() {
        Path::new("/")
    } else {
        path
    }
}

impl RootDir {
    /// Opens the directory at `path` (the host's path of the new root).
    pub fn open(path: &Path) -> io::Result<RootDir> {
        let canonical = std::fs::canonicalize(path)?;
        let root = Root::open(&canonical).map_err(io_error)?;
        Ok(RootDir {
            root,
            path: canonical,
        })
    }

    /// The directory, as the host names it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `path` of the root, resolved (symlinks followed inside the root).
    fn resolve(&self, path: &Path) -> Result<Handle, pathrs::error::Error> {
        self.root.resolve(or_root(&relative(path)))
    }

    /// Whether `path` exists in the root (its symlinks followed there).
    pub fn exists(&self, path: &Path) -> bool {
        self.resolve(path).is_ok()
    }

    /// Opens `path` of the root for reading.
    pub fn open_read(&self, path: &Path) -> io::Result<File> {
        self.resolve(path)
            .map_err(io_error)?
            .reopen(OpenFlags::O_RDONLY)
            .map_err(io_error)
    }

    /// The content of `path` of the root.
    pub fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open_read(path)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// The content of `path` of the root, as text.
    pub fn read_to_string(&self, path: &Path) -> io::Result<String> {
        let mut text = String::new();
        self.open_read(path)?.read_to_string(&mut text)?;
        Ok(text)
    }

    /// Makes the directory `path` and the missing ones on its way (mode
    /// 0755), following symlinks inside the root, dangling ones too (their
    /// target is made); returns it opened.
    pub fn mkdir_all(&self, path: &Path) -> io::Result<File> {
        self.mkdir_all_hops(&relative(path), 0)?;
        self.resolve(path)
            .map_err(io_error)?
            .reopen(OpenFlags::O_RDONLY | OpenFlags::O_DIRECTORY)
            .map_err(io_error)
    }

    fn mkdir_all_hops(&self, path: &Path, hops: usize) -> io::Result<()> {
        if hops > MAX_LINKS {
            return Err(io::Error::other(format!(
                "too many levels of symbolic links making /{}",
                path.display()
            )));
        }
        let mut done = PathBuf::new();
        for part in path.components() {
            let name = match part {
                Component::Normal(name) => name,
                Component::ParentDir => OsStr::new(".."),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => continue,
            };
            let next = done.join(name);
            match self.root.resolve(&next) {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => match self.root.readlink(&next) {
                    // A dangling symlink: make its target (inside the root).
                    Ok(target) => self.mkdir_all_hops(&done.join(target), hops + 1)?,
                    Err(_) => self.make_dir(&next)?,
                },
                Err(e) => return Err(io_error(e)),
            }
            done = next;
        }
        Ok(())
    }

    /// Makes the one directory `path` (its parent exists), mode 0755
    /// whatever the umask.
    fn make_dir(&self, path: &Path) -> io::Result<()> {
        match self.root.create(
            path,
            &InodeType::Directory(Permissions::from_mode(DIR_MODE)),
        ) {
            Ok(()) => {}
            // Made meanwhile.
            Err(e) if errno(&e) == Some(Errno::EEXIST as i32) => return Ok(()),
            Err(e) => return Err(io_error(e)),
        }
        let dir = self
            .root
            .resolve_nofollow(path)
            .map_err(io_error)?
            .reopen(OpenFlags::O_RDONLY | OpenFlags::O_DIRECTORY)
            .map_err(io_error)?;
        dir.set_permissions(Permissions::from_mode(DIR_MODE))
    }

    /// Opens `path` of the root for writing, truncated, creating it (mode
    /// `mode`) and its directories when missing. A symlink on the way or at
    /// the end is followed inside the root, a dangling one to its target.
    fn open_write(&self, path: &Path, mode: u32) -> io::Result<File> {
        let mut path = relative(path);
        for _ in 0..MAX_LINKS {
            match self.root.resolve(or_root(&path)) {
                Ok(handle) => {
                    return handle
                        .reopen(OpenFlags::O_WRONLY | OpenFlags::O_TRUNC)
                        .map_err(io_error);
                }
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(io_error(e)),
            }
            let (Some(parent), Some(_)) = (path.parent(), path.file_name()) else {
                return Err(io::Error::other(format!(
                    "/{} names no file",
                    path.display()
                )));
            };
            let parent = parent.to_path_buf();
            self.mkdir_all_hops(&parent, 0)?;
            match self.root.readlink(&path) {
                // A dangling symlink: write its target, as open(O_CREAT) would.
                Ok(target) => {
                    path = relative(&parent.join(target));
                    continue;
                }
                Err(_) => {
                    return self
                        .root
                        .create_file(
                            &path,
                            OpenFlags::O_WRONLY | OpenFlags::O_EXCL | OpenFlags::O_NOFOLLOW,
                            &Permissions::from_mode(mode & 0o777),
                        )
                        .map_err(io_error);
                }
            }
        }
        Err(io::Error::other(format!(
            "too many levels of symbolic links writing /{}",
            path.display()
        )))
    }

    /// Writes `content` to `path` of the root with exactly `mode` (setuid
    /// and sticky bits included), replacing what was there; its missing
    /// directories are made.
    pub fn write_file(&self, path: &Path, content: &[u8], mode: u32) -> io::Result<()> {
        let mut file = self.open_write(path, mode)?;
        file.write_all(content)?;
        // `mode` at creation is filtered by the umask, and an existing
        // file keeps its mode: set it on the file written.
        file.set_permissions(Permissions::from_mode(mode))
    }

    /// Copies the host file `source` to `path` of the root (mode `mode`).
    pub fn copy_in(&self, source: &Path, path: &Path, mode: u32) -> io::Result<()> {
        let mut from = File::open(source)?;
        let mut file = self.open_write(path, mode)?;
        io::copy(&mut from, &mut file)?;
        file.set_permissions(Permissions::from_mode(mode))
    }

    /// Sets the mode of `path` of the root.
    pub fn set_mode(&self, path: &Path, mode: u32) -> io::Result<()> {
        self.open_read(path)?
            .set_permissions(Permissions::from_mode(mode))
    }

    /// Gives `path` of the root to `uid`:`gid`.
    pub fn chown(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        std::os::unix::fs::fchown(self.open_read(path)?, Some(uid), Some(gid))
    }

    /// Renames `from` to `to`, both of the root (the last component of
    /// each is the entry itself, never followed).
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.root
            .rename(relative(from), relative(to), RenameFlags::empty())
            .map_err(io_error)
    }

    /// Removes the file (or symlink: never its target) `path` of the root.
    /// `Ok(false)`: there was none.
    pub fn remove_file(&self, path: &Path) -> io::Result<bool> {
        match self.root.remove_file(relative(path)) {
            Ok(()) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(io_error(e)),
        }
    }

    /// The host's path of the directory `path` of the root, made when
    /// missing (for tools that need a path, such as `mount`): its real
    /// path, with no symlink left to follow, checked to be inside the
    /// root.
    pub fn host_dir(&self, path: &Path) -> io::Result<PathBuf> {
        let dir = self.mkdir_all(path)?;
        let real = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
        if !real.starts_with(&self.path) {
            return Err(io::Error::other(format!(
                "/{} resolves to {}, outside {}",
                relative(path).display(),
                real.display(),
                self.path.display()
            )));
        }
        Ok(real)
    }

    /// The host's path of `path` of the root, resolved (for reading with
    /// a tool that takes a path); `None` when it does not exist.
    pub fn host_path(&self, path: &Path) -> Option<PathBuf> {
        let file = self.resolve(path).ok()?;
        let real =
            std::fs::read_link(format!("/proc/self/fd/{}", file.as_fd().as_raw_fd())).ok()?;
        real.starts_with(&self.path).then_some(real)
    }
}
