//! The agent's state as a small JSON file, so tridentd can put it on its
//! bus without either program linking the other (tridentd reads the file;
//! see the daemon's `rcp_agent_state`). One object, replaced atomically
//! (written beside, then renamed) on every state change:
//!
//! ```json
//! {"state":"connected","identity":"host-1","orchestrator":"orch:7443","pid":42,"since":"2026-11-23T15:00:00.123Z"}
//! {"state":"refused","identity":"host-1","orchestrator":"orch:7443","reason":"TLS handshake failed: ...","pid":42,"since":"..."}
//! {"state":"backoff","identity":"host-1","orchestrator":"orch:7443","delay_ms":1800,"after":"refused","reason":"TLS handshake failed: ...","pid":42,"since":"..."}
//! ```
//!
//! `state` is one of `dialling`, `connected`, `refused`, `disconnected`,
//! `backoff`, and `stopped` after a clean stop. `reason` comes with
//! `refused` and `disconnected`, and stays on the `backoff` and `dialling`
//! that follow them (with `after` naming the state that ended the
//! attempt), so a reader that looks less often than the state changes
//! still learns each refusal. `delay_ms` comes with `backoff`. `pid` lets
//! the reader tell a stale file from a running agent.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::agent::{Agent, AgentState};

/// Where the agent writes its state unless told otherwise (beside
/// tridentd's socket; the daemon's `--rcp-state-file` default).
pub const DEFAULT_STATE_FILE: &str = "/run/trident/rcp-agent.json";

/// The file's one object.
#[derive(Debug, Serialize)]
pub struct StateRecord<'a> {
    pub state: &'static str,
    pub identity: &'a str,
    pub orchestrator: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// On `backoff` and `dialling`: the state that ended the last attempt
    /// (`refused` or `disconnected`, whose `reason` is kept), so a reader
    /// that looks less often than the agent changes still learns why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<&'static str>,
    pub pid: u32,
    pub since: String,
}

impl<'a> StateRecord<'a> {
    pub fn of(state: &'a AgentState, identity: &'a str, orchestrator: &'a str) -> Self {
        let (name, reason, delay_ms) = match state {
            AgentState::Dialling => ("dialling", None, None),
            AgentState::Connected { .. } => ("connected", None, None),
            AgentState::Refused { reason } => ("refused", Some(reason.as_str()), None),
            AgentState::Disconnected { reason } => ("disconnected", Some(reason.as_str()), None),
            AgentState::Backoff { delay } => ("backoff", None, Some(delay.as_millis() as u64)),
        };
        StateRecord {
            state: name,
            identity,
            orchestrator,
            reason,
            delay_ms,
            after: None,
            pid: std::process::id(),
            since: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
        }
    }
}

/// Writes `record` to `path` atomically.
fn write(path: &Path, record: &StateRecord<'_>) -> std::io::Result<()> {
    let json = serde_json::to_string(record).map_err(std::io::Error::other)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&temporary, json + "\n")?;
    std::fs::rename(&temporary, path)
}

/// Records a clean stop (SIGTERM, Ctrl-C), so the reader need not guess.
pub fn write_stopped(path: &Path, identity: &str, orchestrator: &str) {
    let record = StateRecord {
        state: "stopped",
        ..StateRecord::of(&AgentState::Dialling, identity, orchestrator)
    };
    if let Err(err) = write(path, &record) {
        tracing::warn!(path = %path.display(), %err, "cannot write the state file");
    }
}

/// Mirrors every state of `agent` into `path` (run it beside
/// [`Agent::run`]). A write that fails is logged once (until one succeeds
/// again): the tunnel does not depend on the file.
pub async fn mirror(agent: &Agent, path: PathBuf, orchestrator: String) {
    let mut states = agent.state();
    let mut failing = false;
    loop {
        let state = states.borrow_and_update().clone();
        let ended = agent.last_end();
        let mut record = StateRecord::of(&state, agent.identity(), &orchestrator);
        if let AgentState::Backoff { .. } | AgentState::Dialling = state {
            match &ended {
                Some(AgentState::Refused { reason }) => {
                    (record.after, record.reason) = (Some("refused"), Some(reason.as_str()));
                }
                Some(AgentState::Disconnected { reason }) => {
                    (record.after, record.reason) = (Some("disconnected"), Some(reason.as_str()));
                }
                _ => {}
            }
        }
        match write(&path, &record) {
            Ok(()) => failing = false,
            Err(err) if !failing => {
                failing = true;
                tracing::warn!(path = %path.display(), %err, "cannot write the state file; tridentd will not see the agent's state");
            }
            Err(_) => {}
        }
        if states.changed().await.is_err() {
            return;
        }
    }
}
