//! Following a remote host (a daemon with another boot id, reached through
//! `trident rcp-listen`) through the reboot its daemon started: poll the
//! same socket until the daemon answers with a new boot id, then say what
//! the host came back as. A failed connect or call only means "still
//! down": the proxy's socket disappears while the host is away.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use trident_proto::v1::GetHostStatusRequest;
use trident_proto::v1::host_status_service_client::HostStatusServiceClient;

use super::{PROBE_TIMEOUT, REBOOT_POLL, REMOTE_REBOOT_TIMEOUT, daemon_boot_id, reboot_timeout};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};

/// What the polls saw of the remote host so far.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Last {
    /// Nothing answered (or only this host's own daemon).
    Down,
    /// Its daemon answered with the boot id it had before the reboot.
    SameBoot,
}

/// The polls' judgement of a remote host's reboot.
#[derive(Debug)]
struct RebootWatch<'a> {
    before: &'a str,
    own: &'a str,
    went_down: bool,
    last: Last,
}

impl<'a> RebootWatch<'a> {
    fn new(before: &'a str, own: &'a str) -> Self {
        RebootWatch {
            before,
            own,
            went_down: false,
            last: Last::SameBoot,
        }
    }

    /// Takes one poll's answer (the daemon's boot id, `None` when nothing
    /// answered); returns the new boot id once the host came back.
    fn observe(&mut self, answer: Option<String>) -> Option<String> {
        match answer {
            // This host's own daemon (an upstream-path fallback socket)
            // is not the remote host.
            None => self.down(),
            Some(id) if id == self.own => self.down(),
            // A daemon that cannot tell its boot id came back only if the
            // host was seen gone in between.
            Some(id) if id.is_empty() && self.went_down => Some(id),
            Some(id) if id.is_empty() || id == self.before => {
                self.last = Last::SameBoot;
                None
            }
            Some(id) => Some(id),
        }
    }

    fn down(&mut self) -> Option<String> {
        self.went_down = true;
        self.last = Last::Down;
        None
    }
}

/// Waits up to `TRIDENT_REBOOT_TIMEOUT` (default [`REMOTE_REBOOT_TIMEOUT`])
/// for the remote host, which had boot id `before`, to answer with another.
pub(super) async fn wait_for_remote_reboot(
    ctx: &Ctx,
    before: &str,
    own: &str,
    json: bool,
) -> CliResult<Exit> {
    let timeout = reboot_timeout(REMOTE_REBOOT_TIMEOUT);
    let waited = humantime::format_duration(timeout);
    // Starts like the local wait's line: scripts watching for "the host is
    // rebooting" (scripts/vm-demo.sh) see both.
    eprintln!(
        "trident: the host is rebooting (a remote host: the daemon's boot id is not this host's); \
         waiting up to {waited} for it to come back"
    );
    let start = Instant::now();
    let deadline = start + timeout;
    let mut watch = RebootWatch::new(before, own);
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let answer = probe(ctx, remaining).await;
        if let Some(boot_id) = watch.observe(answer) {
            let state = came_back_as(ctx).await;
            emit_came_back(before, &boot_id, &state, start.elapsed(), json);
            return Ok(Exit::Success);
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(REBOOT_POLL.min(remaining)).await;
    }
    let (outcome, error) = match watch.last {
        Last::SameBoot => (
            "did-not-reboot",
            CliError::RebootUnsuccessful(format!(
                "the remote host did not reboot: its daemon still answers with boot id {before} after {waited}"
            )),
        ),
        Last::Down => (
            "did-not-come-back",
            CliError::RemoteHostLost(format!(
                "the remote host went down for its reboot and did not come back within {waited} \
                 (nothing answers on {}); check the host's console, or raise TRIDENT_REBOOT_TIMEOUT",
                ctx.socket.display()
            )),
        ),
    };
    if json {
        emit_json(json!({
            "type": "reboot", "host": "remote", "outcome": outcome,
            "previous_boot_id": before, "boot_id": null,
            "servicing_state": null, "active_volume": null,
            "waited_seconds": start.elapsed().as_secs_f64(),
        }));
    }
    Err(error)
}

/// One poll: the boot id of whatever daemon answers on the socket now,
/// `None` when nothing does within `remaining` (at most [`PROBE_TIMEOUT`]).
async fn probe(ctx: &Ctx, remaining: Duration) -> Option<String> {
    let bound = PROBE_TIMEOUT.min(remaining).max(Duration::from_millis(100));
    let channel = tokio::time::timeout(bound, ctx.channel())
        .await
        .ok()?
        .ok()?;
    daemon_boot_id(channel).await
}

/// What the host came back as, from its Host Status.
#[derive(Debug, Default)]
struct CameBackAs {
    servicing_state: Option<String>,
    active_volume: Option<String>,
    /// Why the Host Status could not be read.
    unread: Option<String>,
}

async fn came_back_as(ctx: &Ctx) -> CameBackAs {
    let read = async {
        let channel = ctx.channel().await.map_err(|e| e.to_string())?;
        HostStatusServiceClient::new(channel)
            .get_host_status(GetHostStatusRequest {})
            .await
            .map(|r| r.into_inner().host_status)
            .map_err(|s| crate::exit::describe_status(&s))
    };
    let yaml = match tokio::time::timeout(PROBE_TIMEOUT, read).await {
        Ok(Ok(yaml)) => yaml,
        Ok(Err(why)) => return unread(why),
        Err(_) => return unread(format!("no answer within {PROBE_TIMEOUT:?}")),
    };
    let status = crate::output::yaml_value(&yaml);
    let field = |key: &str| status.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    CameBackAs {
        servicing_state: field("servicingState"),
        active_volume: field("abActiveVolume"),
        unread: None,
    }
}

fn unread(why: String) -> CameBackAs {
    CameBackAs {
        unread: Some(why),
        ..CameBackAs::default()
    }
}

/// One line on stderr and, in JSON mode, one object on stdout.
fn emit_came_back(before: &str, boot_id: &str, state: &CameBackAs, waited: Duration, json: bool) {
    let boot = if boot_id.is_empty() {
        "boot id unknown".to_owned()
    } else {
        format!("boot id {boot_id}")
    };
    let what = match &state.unread {
        Some(why) => format!("Host Status not read: {why}"),
        None => format!(
            "{}, active volume {}",
            state.servicing_state.as_deref().unwrap_or("unknown state"),
            state.active_volume.as_deref().unwrap_or("none")
        ),
    };
    eprintln!(
        "trident: the remote host came back after {} ({boot}): {what}",
        humantime::format_duration(Duration::from_secs(waited.as_secs()))
    );
    if json {
        emit_json(json!({
            "type": "reboot", "host": "remote", "outcome": "came-back",
            "previous_boot_id": before, "boot_id": boot_id,
            "servicing_state": state.servicing_state, "active_volume": state.active_volume,
            "waited_seconds": waited.as_secs_f64(),
        }));
    }
}

fn emit_json(value: serde_json::Value) {
    use std::io::Write;
    // A closed pipe (`| head`) must not panic, as in the progress view.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}").and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> Option<String> {
        Some(s.to_owned())
    }

    #[test]
    fn a_new_boot_id_is_the_host_back() {
        let mut watch = RebootWatch::new("old", "mine");
        assert_eq!(watch.observe(id("old")), None);
        assert_eq!(watch.observe(None), None);
        assert_eq!(watch.observe(id("new")).as_deref(), Some("new"));
    }

    #[test]
    fn the_same_boot_id_after_a_restart_is_no_reboot() {
        let mut watch = RebootWatch::new("old", "mine");
        assert_eq!(watch.observe(None), None);
        assert_eq!(watch.last, Last::Down);
        assert_eq!(watch.observe(id("old")), None);
        assert_eq!(watch.last, Last::SameBoot);
    }

    #[test]
    fn this_hosts_own_daemon_counts_as_the_remote_host_down() {
        let mut watch = RebootWatch::new("old", "mine");
        assert_eq!(watch.observe(id("mine")), None);
        assert_eq!(watch.last, Last::Down);
    }

    #[test]
    fn no_boot_id_counts_as_back_only_after_the_host_was_gone() {
        let mut watch = RebootWatch::new("old", "mine");
        assert_eq!(watch.observe(id("")), None);
        assert_eq!(watch.last, Last::SameBoot);
        assert_eq!(watch.observe(None), None);
        assert_eq!(watch.observe(id("")).as_deref(), Some(""));
    }
}
