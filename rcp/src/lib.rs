//! The reverse-connect proxy (RCP): tridentd only listens on a local Unix
//! socket, so a host that must be reachable by an orchestrator runs the
//! agent ([`agent`], binary `trident-rcp`), which dials OUT to the
//! orchestrator, authenticates with mutual TLS and then carries every
//! connection the orchestrator opens to tridentd's socket. The orchestrator
//! side is the [`listener`] library (used by `trident rcp-listen`).
//!
//! One TCP connection per host carries one TLS session carrying one HTTP/2
//! connection; every orchestrator connection is one HTTP/2 CONNECT stream
//! (hyper's, so flow control, many streams and keepalive pings come from a
//! well-kept implementation rather than from us).

pub mod agent;
pub mod backoff;
pub mod config;
pub mod duplicates;
pub mod error;
pub mod identity;
pub mod listener;
mod pinned;
#[cfg(feature = "test-pki")]
pub mod pki;
pub mod raw;
mod sever;
pub mod state_file;
pub mod tls;
pub mod tunnel;
pub mod validity;

pub use error::RcpError;
pub use listener::{Event, Host, Listener, ListenerConfig};
pub use tls::{Protocol, TlsFiles};
pub use tunnel::Keepalive;
