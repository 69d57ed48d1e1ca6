//! After the daemon started the reboot Trident handles: wait for the host
//! to go down, and report a reboot that did not happen (exit 3).

use std::time::Duration;

use trident_proto::v1::VersionRequest;
use trident_proto::v1::version_service_client::VersionServiceClient;

use crate::commands::Ctx;
use crate::exit::{CliError, CliResult, Exit};

/// Environment variable: how long to wait for the host to go down after
/// the daemon started a reboot (humantime, default [`REBOOT_TIMEOUT`]).
pub const REBOOT_TIMEOUT_ENV: &str = "TRIDENT_REBOOT_TIMEOUT";
/// Default wait for the reboot Trident started.
pub const REBOOT_TIMEOUT: Duration = Duration::from_secs(120);
const REBOOT_POLL: Duration = Duration::from_millis(500);

/// Like upstream: once Trident started the reboot, this process should not
/// outlive the host. Still running (and the daemon still answering) after
/// the timeout means the reboot did not happen: exit 3.
pub async fn wait_for_reboot(ctx: &Ctx) -> CliResult<Exit> {
    let timeout = std::env::var(REBOOT_TIMEOUT_ENV)
        .ok()
        .and_then(|v| humantime::parse_duration(&v).ok())
        .unwrap_or(REBOOT_TIMEOUT);
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
