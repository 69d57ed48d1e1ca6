//! `trident rcp-listen` arguments (the command is `commands::rcp_listen`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

/// `trident rcp-listen` arguments.
#[derive(Debug, Clone, Args)]
pub struct RcpListenArgs {
    /// TCP address hosts dial (port 0 picks one; see the "listening" event).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// CA certificate (PEM) that signs the hosts' and this listener's certificates.
    #[arg(long, value_name = "FILE")]
    pub ca: PathBuf,
    /// This listener's certificate (PEM); hosts check it against --server-name.
    #[arg(long, value_name = "FILE")]
    pub cert: PathBuf,
    /// This listener's private key (PEM, mode 0600).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Directory of the per-host sockets (created if missing).
    #[arg(long, value_name = "DIR")]
    pub sockets_dir: PathBuf,
    /// Shell command run when a host connects (TRIDENT_HOST_ID, TRIDENT_HOST_ADDR,
    /// TRIDENT_HOST_SOCKET in its environment).
    #[arg(long, value_name = "CMD")]
    pub on_connect: Option<String>,
    /// Shell command run when a host's tunnel closes (same environment).
    #[arg(long, value_name = "CMD")]
    pub on_disconnect: Option<String>,
    /// Interval of keepalive pings on each tunnel.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s", value_name = "DURATION")]
    pub keepalive_interval: Duration,
    /// A ping unanswered this long closes the tunnel.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20s", value_name = "DURATION")]
    pub keepalive_timeout: Duration,
    /// Wire protocol the hosts' agents speak: `trident` (ours) or
    /// `upstream` (upstream Trident's rcp-agent: TLS 1.3, one raw stream per
    /// connection, so one client at a time per host socket).
    #[arg(long, value_enum, default_value = "trident", value_name = "PROTOCOL")]
    pub protocol: trident_rcp::Protocol,
    /// A host identity whose connections replace each other more than this
    /// many times a minute is reported once as a duplicate.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub duplicate_limit: u32,
    /// How long newcomers of a duplicate identity are then held unused
    /// (the connection it has is kept).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s", value_name = "DURATION")]
    pub duplicate_backoff: Duration,
}
