//! After the daemon started the reboot Trident handles. A daemon on this
//! host: wait for the host (and this process) to go down, and report a
//! reboot that did not happen (exit 3), like upstream's CLI. A daemon on a
//! remote host (reached through `trident rcp-listen`): follow that host
//! through its reboot ([`remote`]).
//!
//! Which one it is comes from the boot ids: the daemon's (Version, our
//! field 1001) read before the operation starts, and this host's.

mod remote;

use std::time::Duration;

use trident_proto::v1::version_service_client::VersionServiceClient;
use trident_proto::v1::{RebootAction, VersionRequest};

use crate::client::Channel;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};

/// Environment variable: how long to wait for the host to go down (local
/// daemon) or to come back (remote daemon) after the daemon started a
/// reboot (humantime; defaults [`REBOOT_TIMEOUT`], [`REMOTE_REBOOT_TIMEOUT`]).
pub const REBOOT_TIMEOUT_ENV: &str = "TRIDENT_REBOOT_TIMEOUT";
/// Default wait for this host to go down (upstream's rule).
pub const REBOOT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default wait for a remote host to come back. Longer than the local
/// wait: the host must shut down, pass firmware and boot loader, start
/// tridentd and dial the proxy again; a UEFI VM under emulation measured
/// 200-300 s from the reboot request to its next boot's marker.
pub const REMOTE_REBOOT_TIMEOUT: Duration = Duration::from_secs(600);
const REBOOT_POLL: Duration = Duration::from_millis(500);
/// Bound on one Version or GetHostStatus call while a host may be down (a
/// proxy's socket may accept while nothing answers behind it).
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the daemon serving an operation runs, told before it starts (the
/// daemon may be gone right after `Completed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonHost {
    /// On this host, or not known (no boot id on either side).
    Local,
    /// On another host; the boot ids of that host and of this one.
    Remote {
        boot_id: String,
        own_boot_id: String,
    },
}

impl DaemonHost {
    /// Compares the daemon's boot id with this host's: only two known,
    /// different ids make a remote host.
    pub fn classify(own: Option<String>, daemon: Option<String>) -> DaemonHost {
        match (own, daemon) {
            (Some(own), Some(daemon)) if !daemon.is_empty() && own != daemon => {
                DaemonHost::Remote {
                    boot_id: daemon,
                    own_boot_id: own,
                }
            }
            _ => DaemonHost::Local,
        }
    }

    /// Asks the daemon on `channel` for its boot id; a failed call means
    /// "not known" (the operation's own call then reports the failure).
    pub async fn locate(channel: &Channel) -> DaemonHost {
        let daemon = daemon_boot_id(channel.clone()).await;
        DaemonHost::classify(trident_host::boot_id::own_boot_id(), daemon)
    }
}

/// The daemon's boot id: `None` when the call fails or times out, empty
/// when the daemon does not know it (or predates field 1001).
async fn daemon_boot_id(channel: Channel) -> Option<String> {
    let mut client = VersionServiceClient::new(channel);
    match tokio::time::timeout(PROBE_TIMEOUT, client.version(VersionRequest {})).await {
        Ok(Ok(response)) => Some(response.into_inner().boot_id),
        _ => None,
    }
}

/// The words for a reboot the daemon took charge of (`REBOOT_STARTED`) but
/// said it does not perform (`Completed.reboot_action`); `None` when it
/// reboots, or when it did not say (a daemon without the addition: wait).
pub fn not_performed(action: Option<RebootAction>) -> Option<&'static str> {
    match action? {
        RebootAction::Recorded => Some(
            "reboot recorded, not performed: the daemon runs with --reboot record \
             (STATE_DIR/reboot-requests.log); nothing reboots",
        ),
        RebootAction::NotPerformed => {
            Some("reboot not performed: the daemon runs with --reboot none; nothing reboots")
        }
        RebootAction::Performed | RebootAction::Unspecified => None,
    }
}

/// Waits for the reboot the daemon started, on `host`; `json` adds the
/// remote outcome as a JSON line on stdout (`--progress json`).
pub async fn wait_for_reboot(ctx: &Ctx, host: &DaemonHost, json: bool) -> CliResult<Exit> {
    match host {
        DaemonHost::Local => wait_for_local_reboot(ctx).await,
        DaemonHost::Remote {
            boot_id,
            own_boot_id,
        } => remote::wait_for_remote_reboot(ctx, boot_id, own_boot_id, json).await,
    }
}

/// `TRIDENT_REBOOT_TIMEOUT`, else `default`.
fn reboot_timeout(default: Duration) -> Duration {
    std::env::var(REBOOT_TIMEOUT_ENV)
        .ok()
        .and_then(|v| humantime::parse_duration(&v).ok())
        .unwrap_or(default)
}

/// Like upstream: once Trident started the reboot, this process should not
/// outlive the host. Still running (and the daemon still answering) after
/// the timeout means the reboot did not happen: exit 3.
async fn wait_for_local_reboot(ctx: &Ctx) -> CliResult<Exit> {
    let timeout = reboot_timeout(REBOOT_TIMEOUT);
    eprintln!(
        "trident: the host is rebooting; waiting up to {}",
        humantime::format_duration(timeout)
    );
    let deadline = tokio::time::Instant::now() + timeout;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(REBOOT_POLL).await;
    }
    // The daemon answering now proves the host did not go down.
    let answered = match ctx.channel().await {
        Ok(channel) => VersionServiceClient::new(channel)
            .version(VersionRequest {})
            .await
            .is_ok(),
        Err(_) => false,
    };
    let waited = humantime::format_duration(timeout);
    Err(CliError::RebootUnsuccessful(if answered {
        format!("the daemon started a reboot, but the host is still up after {waited}")
    } else {
        format!(
            "the daemon started a reboot and went away, but this host is still running after {waited}"
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn only_two_known_different_boot_ids_make_a_remote_host() {
        assert_eq!(DaemonHost::classify(id("a"), id("a")), DaemonHost::Local);
        assert_eq!(DaemonHost::classify(id("a"), id("")), DaemonHost::Local);
        assert_eq!(DaemonHost::classify(id("a"), None), DaemonHost::Local);
        assert_eq!(DaemonHost::classify(None, id("b")), DaemonHost::Local);
        assert_eq!(
            DaemonHost::classify(id("a"), id("b")),
            DaemonHost::Remote {
                boot_id: "b".into(),
                own_boot_id: "a".into()
            }
        );
    }
}
