//! Who is on the other end of a connection ([`PeerInfo`]) and whether it
//! may call the API ([`PeerAccess`]): a leaf both the peer check
//! (`security`) and the refusal log (`refusal_log`) name.

use std::{
    fmt,
    sync::{Arc, atomic::AtomicBool},
};

/// Outcome of the peer check for one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerAccess {
    /// May call every RPC.
    Allowed,
    /// Every RPC is answered PERMISSION_DENIED with this message.
    Denied(String),
}

/// Credentials and access decision of one connection (SO_PEERCRED), put in
/// each request's extensions by tonic.
#[derive(Debug, Clone)]
pub struct PeerInfo {
    /// Peer user id.
    pub uid: u32,
    /// Peer primary group id.
    pub gid: u32,
    /// Peer process id, when the kernel reports it.
    pub pid: Option<i32>,
    /// Whether this peer may call the API.
    pub access: PeerAccess,
    /// Set by the first request on the connection: ends its handshake
    /// (see `listener::connection::HANDSHAKE_TIMEOUT`).
    pub request_seen: Arc<AtomicBool>,
}

impl fmt::Display for PeerInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "uid {} gid {}", self.uid, self.gid)?;
        if let Some(pid) = self.pid {
            write!(f, " pid {pid}")?;
        }
        Ok(())
    }
}
