//! systemd socket activation (sd_listen_fds(3) protocol, implemented here so
//! every refusal can say exactly which fd was wrong and why).

use std::{
    env,
    os::{
        fd::{FromRawFd, OwnedFd, RawFd},
        unix::net::UnixListener,
    },
    path::PathBuf,
};

use nix::{
    fcntl::{FcntlArg, FdFlag, fcntl},
    sys::socket::{
        AddressFamily, SockType, SockaddrLike, SockaddrStorage, getsockname, getsockopt, sockopt,
    },
};

use crate::server::ServerError;

/// Env var: number of sockets systemd passed, starting at fd 3.
pub const ENV_LISTEN_FDS: &str = "LISTEN_FDS";
/// Env var: pid the sockets are meant for.
pub const ENV_LISTEN_PID: &str = "LISTEN_PID";
/// Env var: colon-separated names of the passed sockets (FileDescriptorName=).
pub const ENV_LISTEN_FDNAMES: &str = "LISTEN_FDNAMES";
/// First passed fd (SD_LISTEN_FDS_START).
pub const LISTEN_FDS_START: RawFd = 3;

/// One listening socket handed over by systemd.
#[derive(Debug)]
pub struct ActivatedSocket {
    /// The fd number it arrived on.
    pub fd: RawFd,
    /// Its FileDescriptorName=, if systemd passed names.
    pub name: Option<String>,
    /// Its bound path (None for abstract or unnamed sockets).
    pub path: Option<PathBuf>,
    /// The listener, close-on-exec and non-blocking.
    pub listener: UnixListener,
}

/// Takes the sockets systemd passed, or `None` when not socket-activated.
///
/// Must run before any thread is started: it unsets the LISTEN_* variables
/// so children do not inherit them.
pub fn take_activated_sockets(
    notes: &mut Vec<String>,
) -> Result<Option<Vec<ActivatedSocket>>, ServerError> {
    let Some(pid) = env::var_os(ENV_LISTEN_PID) else {
        return Ok(None);
    };
    let fds = env::var_os(ENV_LISTEN_FDS);
    let names = env::var(ENV_LISTEN_FDNAMES).ok();
    unset_listen_env();

    let pid = pid.to_string_lossy().into_owned();
    if pid.trim() != std::process::id().to_string() {
        notes.push(format!(
            "{ENV_LISTEN_PID}={pid} names another process; ignored the passed sockets"
        ));
        return Ok(None);
    }
    let fds = fds
        .map(|fds| fds.to_string_lossy().into_owned())
        .unwrap_or_default();
    let count: RawFd = fds.trim().parse().map_err(|_| {
        ServerError::Activation(format!("{ENV_LISTEN_FDS}={fds:?} is not a number"))
    })?;
    if count < 1 {
        return Err(ServerError::Activation(format!(
            "{ENV_LISTEN_FDS}={count}: socket activation passed no socket"
        )));
    }
    let names: Vec<String> = names
        .map(|names| names.split(':').map(str::to_owned).collect())
        .unwrap_or_default();

    (0..count)
        .map(|index| {
            let fd = LISTEN_FDS_START + index;
            let name = names.get(index as usize).cloned();
            adopt(fd, name)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

#[allow(unsafe_code)]
fn unset_listen_env() {
    for var in [ENV_LISTEN_PID, ENV_LISTEN_FDS, ENV_LISTEN_FDNAMES] {
        // SAFETY: called from `main` before the tokio runtime or any other
        // thread exists, so nothing reads the environment concurrently.
        unsafe { env::remove_var(var) };
    }
}

/// What /proc says an fd is ("socket:[123]", "/dev/null", "pipe:[9]").
fn describe_fd(fd: RawFd) -> Option<String> {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .ok()
        .map(|target| target.display().to_string())
}

fn refuse(fd: RawFd, what: impl Into<String>) -> ServerError {
    ServerError::Activation(format!(
        "fd {fd} passed by systemd is {}; tridentd serves only a listening Unix stream socket",
        what.into()
    ))
}

fn adopt(fd: RawFd, name: Option<String>) -> Result<ActivatedSocket, ServerError> {
    let Some(target) = describe_fd(fd) else {
        return Err(refuse(fd, "not open"));
    };
    if !target.starts_with("socket:") {
        return Err(refuse(fd, format!("not a socket ({target})")));
    }
    let address: SockaddrStorage = getsockname(fd).map_err(|errno| {
        refuse(
            fd,
            format!("a socket whose address is unreadable ({errno})"),
        )
    })?;
    check_unix_family(fd, &address)?;
    let owned = adopt_fd(fd);
    check_listening_stream(fd, &owned)?;
    // systemd passes the fds without FD_CLOEXEC; scripts we run must not inherit them.
    fcntl(&owned, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(|errno| {
        ServerError::Activation(format!("fd {fd}: cannot set close-on-exec: {errno}"))
    })?;
    let path = address
        .as_unix_addr()
        .and_then(|unix| unix.path())
        .map(PathBuf::from);
    let listener = UnixListener::from(owned);
    listener.set_nonblocking(true).map_err(|source| {
        ServerError::Activation(format!("fd {fd}: cannot set non-blocking: {source}"))
    })?;
    Ok(ActivatedSocket {
        fd,
        name,
        path,
        listener,
    })
}

/// The socket is AF_UNIX (systemd may pass IP sockets too).
fn check_unix_family(fd: RawFd, address: &SockaddrStorage) -> Result<(), ServerError> {
    match address.family() {
        Some(AddressFamily::Unix) => Ok(()),
        Some(AddressFamily::Inet) => Err(refuse(fd, "an IPv4 (AF_INET) socket")),
        Some(AddressFamily::Inet6) => Err(refuse(fd, "an IPv6 (AF_INET6) socket")),
        Some(family) => Err(refuse(
            fd,
            format!("a socket of family {family:?}, not AF_UNIX"),
        )),
        None => Err(refuse(fd, "a socket of unknown family, not AF_UNIX")),
    }
}

/// The socket is a listening stream socket (not datagram, not `Accept=yes`).
fn check_listening_stream(fd: RawFd, owned: &OwnedFd) -> Result<(), ServerError> {
    match getsockopt(owned, sockopt::SockType) {
        Ok(SockType::Stream) => {}
        Ok(SockType::Datagram) => return Err(refuse(fd, "a Unix datagram (SOCK_DGRAM) socket")),
        Ok(SockType::SeqPacket) => {
            return Err(refuse(fd, "a Unix seqpacket (SOCK_SEQPACKET) socket"));
        }
        Ok(other) => {
            return Err(refuse(
                fd,
                format!("a Unix {other:?} socket, not SOCK_STREAM"),
            ));
        }
        Err(errno) => return Err(refuse(fd, format!("a socket of unknown type ({errno})"))),
    }
    if !getsockopt(owned, sockopt::AcceptConn).unwrap_or(false) {
        return Err(refuse(
            fd,
            "a Unix stream socket that is not listening (Accept=yes?)",
        ));
    }
    Ok(())
}

#[allow(unsafe_code)]
fn adopt_fd(fd: RawFd) -> OwnedFd {
    // SAFETY: `fd` was checked open (via /proc/self/fd) and a socket; per the
    // sd_listen_fds protocol systemd hands it to this process, nothing else in
    // the process owns it, and it is adopted exactly once (the env vars that
    // announce it are already unset).
    unsafe { OwnedFd::from_raw_fd(fd) }
}
