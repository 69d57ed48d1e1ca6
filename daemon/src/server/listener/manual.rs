//! Manual start: tridentd creates its socket. One instance per socket: a
//! path someone still answers on is left alone; a stale one is replaced.

use std::{
    fs,
    io::ErrorKind,
    os::unix::{
        fs::MetadataExt,
        net::{UnixListener, UnixStream},
    },
    path::{Path, PathBuf},
};

use nix::{
    fcntl::{AT_FDCWD, AtFlags},
    sys::{
        socket::{getsockopt, sockopt},
        stat::{FchmodatFlags, Mode, fchmodat, umask},
    },
    unistd::{Gid, Uid, fchownat},
};

use crate::server::ServerError;

/// Socket mode without a socket group: root only.
pub const MODE_ROOT_ONLY: u32 = 0o600;
/// Socket mode with a socket group: root and the group.
pub const MODE_WITH_GROUP: u32 = 0o660;

/// A socket file this process created; unlinked on drop if it is still ours.
#[derive(Debug)]
pub struct OwnedSocketFile {
    path: PathBuf,
    inode: u64,
}

impl OwnedSocketFile {
    /// Path of the socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedSocketFile {
    fn drop(&mut self) {
        // Only remove the file if nobody replaced it meanwhile.
        let ours = fs::symlink_metadata(&self.path).is_ok_and(|meta| meta.ino() == self.inode);
        if ours {
            match fs::remove_file(&self.path) {
                Ok(()) => tracing::debug!(path = %self.path.display(), "removed socket file"),
                Err(error) => {
                    tracing::warn!(path = %self.path.display(), %error, "cannot remove socket file")
                }
            }
        }
    }
}

/// Creates the socket at `path`: parent dir created, owner root, mode 0600,
/// or 0660 root:group when `group` is given.
pub fn bind(
    path: &Path,
    group: Option<Gid>,
    notes: &mut Vec<String>,
) -> Result<(UnixListener, OwnedSocketFile), ServerError> {
    let io_error = |what: &str, source: std::io::Error| ServerError::Socket {
        path: path.to_owned(),
        what: what.to_owned(),
        source,
    };
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        fs::create_dir_all(parent).map_err(|source| io_error("create parent directory", source))?;
    }
    remove_if_stale(path, notes)?;

    // Bind with a umask that leaves no access beyond the owner, so the file
    // is never briefly reachable with looser permissions than intended.
    // (umask is process-wide; this runs before any thread starts.)
    let previous = umask(Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(path);
    umask(previous);
    let listener = bound.map_err(|source| io_error("bind", source))?;
    let inode = fs::symlink_metadata(path)
        .map_err(|source| io_error("stat", source))?
        .ino();
    let file = OwnedSocketFile {
        path: path.to_owned(),
        inode,
    };

    // Neither call follows a symlink: one put where the socket was bound
    // (a parent directory others can write) must not have root chown or
    // chmod its target.
    let mode = match group {
        Some(gid) => {
            fchownat(
                AT_FDCWD,
                path,
                Some(Uid::from_raw(0)),
                Some(gid),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .map_err(|errno| io_error("chown", errno.into()))?;
            MODE_WITH_GROUP
        }
        None => MODE_ROOT_ONLY,
    };
    fchmodat(
        AT_FDCWD,
        path,
        Mode::from_bits_truncate(mode),
        FchmodatFlags::NoFollowSymlink,
    )
    .map_err(|errno| io_error("chmod", errno.into()))?;
    listener
        .set_nonblocking(true)
        .map_err(|source| io_error("set non-blocking", source))?;
    Ok((listener, file))
}

/// Removes a leftover socket file no one answers on; refuses if someone does.
fn remove_if_stale(path: &Path, notes: &mut Vec<String>) -> Result<(), ServerError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ServerError::Socket {
                path: path.to_owned(),
                what: "stat".to_owned(),
                source,
            });
        }
    };
    use std::os::unix::fs::FileTypeExt;
    if !meta.file_type().is_socket() {
        return Err(ServerError::NotASocket(path.to_owned()));
    }
    match UnixStream::connect(path) {
        Ok(stream) => {
            let pid = getsockopt(&stream, sockopt::PeerCredentials)
                .ok()
                .map(|cred| cred.pid());
            Err(ServerError::AlreadyServed {
                path: path.to_owned(),
                pid,
            })
        }
        Err(error) if error.kind() == ErrorKind::ConnectionRefused => {
            notes.push(format!("replacing stale socket file {}", path.display()));
            fs::remove_file(path).map_err(|source| ServerError::Socket {
                path: path.to_owned(),
                what: "remove stale socket".to_owned(),
                source,
            })
        }
        Err(source) => Err(ServerError::Socket {
            path: path.to_owned(),
            what: "probe existing socket".to_owned(),
            source,
        }),
    }
}
