//! Where the daemon listens: sockets passed by systemd socket activation, or
//! a socket it creates itself (`--socket`). Also decides who may connect.

mod activation;
mod connection;
mod manual;

use std::{
    fs,
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::PathBuf,
};

use nix::unistd::{Gid, Group};

pub use activation::{ENV_LISTEN_FDNAMES, ENV_LISTEN_FDS, ENV_LISTEN_PID, LISTEN_FDS_START};
pub use connection::{PeerStream, incoming};
pub use manual::{MODE_ROOT_ONLY, MODE_WITH_GROUP, OwnedSocketFile};

use super::{ServerError, security::AccessPolicy};
use crate::config::Config;

/// How the daemon got its socket(s).
#[derive(Debug)]
pub enum StartMode {
    /// systemd passed listening sockets; systemd owns the socket file.
    SocketActivation {
        /// fd numbers, names and paths of the passed sockets, for logs.
        sockets: Vec<(i32, Option<String>, Option<PathBuf>)>,
    },
    /// tridentd created the socket(s): `--socket` first, then the
    /// upstream-path one if any; removed again on clean exit.
    Manual {
        /// The socket files, unlinked when dropped.
        files: Vec<OwnedSocketFile>,
    },
}

/// Bound, not yet served, listening sockets plus the access policy.
#[derive(Debug)]
pub struct Listening {
    /// Listeners (std, non-blocking) to hand to tokio inside the runtime.
    pub listeners: Vec<std::os::unix::net::UnixListener>,
    /// How they were obtained.
    pub mode: StartMode,
    /// Who may call the API.
    pub policy: AccessPolicy,
    /// Things worth logging that happened before logging was set up.
    pub notes: Vec<String>,
}

impl Listening {
    /// Human-readable list of what is served, for the start-up log line.
    pub fn describe(&self) -> String {
        match &self.mode {
            StartMode::Manual { files } => files
                .iter()
                .map(|file| format!("{} (manual)", file.path().display()))
                .collect::<Vec<_>>()
                .join(", "),
            StartMode::SocketActivation { sockets } => sockets
                .iter()
                .map(|(fd, _, path)| match path {
                    Some(path) => format!("{} (fd {fd}, socket activation)", path.display()),
                    None => format!("fd {fd} (socket activation)"),
                })
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// Takes activated sockets or creates `config.socket`.
///
/// Must run before any thread starts (it edits the environment and umask)
/// and so before logging is set up: what it would log goes to `notes`.
pub fn open(config: &Config) -> Result<Listening, ServerError> {
    let mut notes = Vec::new();
    let configured_policy = match &config.socket_group {
        Some(name) => Some(AccessPolicy::root_and_group_named(name)?),
        None => None,
    };
    if let Some(sockets) = activation::take_activated_sockets(&mut notes)? {
        let policy = match configured_policy {
            Some(policy) => policy,
            None => policy_from_socket_file(sockets.iter().find_map(|socket| socket.path.clone())),
        };
        let described = sockets
            .iter()
            .map(|socket| (socket.fd, socket.name.clone(), socket.path.clone()))
            .collect();
        return Ok(Listening {
            listeners: sockets.into_iter().map(|socket| socket.listener).collect(),
            mode: StartMode::SocketActivation { sockets: described },
            policy,
            notes,
        });
    }
    let policy = configured_policy.unwrap_or_else(AccessPolicy::root_only);
    let mut listeners = Vec::new();
    let mut files = Vec::new();
    // Ours first: if it is already served, nothing else is created.
    for path in std::iter::once(config.socket.clone()).chain(config.upstream_socket_path()) {
        let (listener, file) = manual::bind(&path, policy.group(), &mut notes)?;
        listeners.push(listener);
        files.push(file);
    }
    Ok(Listening {
        listeners,
        mode: StartMode::Manual { files },
        policy,
        notes,
    })
}

/// Under socket activation without `--socket-group`, the group systemd gave
/// the socket file (SocketGroup=) is the allowed group, if it has access.
fn policy_from_socket_file(path: Option<PathBuf>) -> AccessPolicy {
    let Some(meta) = path.as_ref().and_then(|path| fs::metadata(path).ok()) else {
        return AccessPolicy::root_only();
    };
    let group_rw = meta.permissions().mode() & 0o060 == 0o060;
    if !group_rw || meta.gid() == 0 {
        return AccessPolicy::root_only();
    }
    let gid = Gid::from_raw(meta.gid());
    let name = Group::from_gid(gid)
        .ok()
        .flatten()
        .map_or_else(|| gid.to_string(), |group| group.name);
    AccessPolicy::root_and_group(gid, name)
}
