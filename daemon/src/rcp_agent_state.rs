//! The reverse-connect proxy agent's state on the bus. `trident-rcp` runs
//! as its own program and links neither the daemon nor the telemetry crate;
//! it mirrors its state into a small JSON file (`--state-file`, see
//! `trident_rcp::state_file` for the format) and this task turns every
//! change of that file into one log record under [`TARGET`] with the
//! state's fields (`state`, `identity`, `orchestrator`, `reason`,
//! `delay_ms`, `after`, `agent_pid`). Polled, so a state shorter than
//! [`POLL`] may be skipped; a refusal or disconnection is never lost, as
//! the `backoff` after it carries `after` and `reason`. A file whose agent process is gone (killed
//! without a clean stop) is reported once as `state = "gone"`.
//!
//! Polling (every [`POLL`]) rather than a file watch: one `stat` a second
//! is nothing beside the daemon's work, it needs no inotify permission in
//! a sandbox, and it sees the file appear, change and be replaced alike.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

/// Target of the agent's state records (`trident logs --target ...`).
pub const TARGET: &str = "tridentd::rcp_agent";
/// How often the state file is looked at.
pub const POLL: Duration = Duration::from_millis(500);

/// The agent's file, as far as the daemon reads it (unknown keys ignored,
/// so the agent may add some).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
struct AgentStateFile {
    state: String,
    #[serde(default)]
    identity: String,
    #[serde(default)]
    orchestrator: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    delay_ms: Option<u64>,
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    pid: u32,
}

impl AgentStateFile {
    fn log(&self) {
        tracing::info!(
            target: TARGET,
            state = self.state.as_str(),
            identity = self.identity.as_str(),
            orchestrator = self.orchestrator.as_str(),
            reason = self.reason.as_deref().unwrap_or(""),
            delay_ms = self.delay_ms.unwrap_or(0),
            after = self.after.as_deref().unwrap_or(""),
            agent_pid = self.pid,
            "rcp agent: {}{}{}",
            self.state,
            self.after.as_deref().map(|a| format!(" after {a}")).unwrap_or_default(),
            self.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
        );
    }

    /// The agent process is gone without writing `stopped`.
    fn process_gone(&self) -> bool {
        if self.pid == 0 || self.state == "stopped" {
            return false;
        }
        !std::path::Path::new(&format!("/proc/{}", self.pid)).exists()
    }
}

/// Follows `path` for the daemon's life (spawn it on the runtime).
pub async fn follow(path: PathBuf) {
    let mut seen: Option<(SystemTime, u64)> = None;
    let mut last: Option<AgentStateFile> = None;
    let mut gone_told = false;
    let mut unreadable_told = false;
    loop {
        if let Ok(meta) = tokio::fs::metadata(&path).await {
            let stamp = (
                meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                meta.len(),
            );
            if seen != Some(stamp) {
                seen = Some(stamp);
                match read(&path).await {
                    Ok(state) if last.as_ref() != Some(&state) => {
                        state.log();
                        last = Some(state);
                        gone_told = false;
                        unreadable_told = false;
                    }
                    Ok(_) => {}
                    Err(error) if !unreadable_told => {
                        unreadable_told = true;
                        tracing::warn!(target: TARGET, path = %path.display(), %error, "rcp agent state file unreadable");
                    }
                    Err(_) => {}
                }
            }
        }
        if let Some(state) = &last
            && !gone_told
            && state.process_gone()
        {
            gone_told = true;
            tracing::warn!(
                target: TARGET,
                state = "gone",
                identity = state.identity.as_str(),
                orchestrator = state.orchestrator.as_str(),
                agent_pid = state.pid,
                "rcp agent: gone (its process ended without a clean stop)"
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn read(path: &std::path::Path) -> Result<AgentStateFile, String> {
    let text = tokio::fs::read_to_string(path)
        .await
        .map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}
