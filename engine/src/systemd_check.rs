//! Health checks of upstream's `systemdServices` kind: the named units must
//! all be `active` (as `systemctl is-active` reports them) within the
//! check's `timeoutSeconds`. Polled, because a unit starting at boot may
//! still be `activating` when the commit runs.

use std::time::Duration;

use tokio::process::Command;
use tokio::time::Instant;
use trident_host::{Subkind, TridentError};

/// The systemctl the checks ask.
pub const SYSTEMCTL: &str = "systemctl";
/// Upstream's default for systemd checks.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
/// How often the units are asked again while not all are active.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// `(unit, state)` as `systemctl is-active` prints it (`active`,
/// `activating`, `failed`, `inactive`, ...).
async fn unit_state(systemctl: &str, unit: &str) -> Result<(String, String), TridentError> {
    let output = Command::new(systemctl)
        .args(["is-active", "--", unit])
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| {
            TridentError::with_source(
                Subkind::HealthCheckFailed,
                format!("Cannot run `{systemctl} is-active {unit}`"),
                e,
            )
        })?;
    let state = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let state = if state.is_empty() {
        // No state on stdout: systemctl itself failed (no systemd, no bus).
        format!(
            "unknown: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )
    } else {
        state
    };
    Ok((unit.to_owned(), state))
}

/// Waits until every unit of `units` is active, or fails after `timeout`
/// naming the units that are not, with their last state.
pub async fn wait_active(
    check: &str,
    units: &[String],
    timeout: Duration,
    systemctl: &str,
) -> Result<(), TridentError> {
    let deadline = Instant::now() + timeout;
    loop {
        let mut waiting = Vec::new();
        for unit in units {
            let (unit, state) = unit_state(systemctl, unit).await?;
            if state != "active" {
                waiting.push(format!("{unit} ({state})"));
            }
        }
        if waiting.is_empty() {
            tracing::info!(check, units = units.join(" "), "systemd units active");
            return Ok(());
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(TridentError::new(
                Subkind::HealthCheckFailed,
                format!(
                    "health check '{check}': not active within {}s: {}",
                    timeout.as_secs(),
                    waiting.join(", ")
                ),
            ));
        }
        tracing::debug!(
            check,
            waiting = waiting.join(", "),
            "waiting for systemd units"
        );
        tokio::time::sleep(POLL_INTERVAL.min(deadline - now)).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// systemd cannot run as PID 1 here: a stand-in `systemctl is-active`
    /// that reports the state kept in `DIR/UNIT`, or `active` once
    /// `DIR/UNIT.after` calls have been made (a unit still starting).
    fn fake_systemctl(dir: &std::path::Path) -> String {
        let path = dir.join("systemctl");
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = is-active ] && [ \"$2\" = -- ] || exit 64\n\
             d={dir}\nu=\"$3\"\n\
             if [ -f \"$d/$u.after\" ]; then n=$(cat \"$d/$u.after\"); \
             if [ \"$n\" -le 0 ]; then echo active; exit 0; fi; \
             echo $((n-1)) > \"$d/$u.after\"; echo activating; exit 3; fi\n\
             s=$(cat \"$d/$u\" 2>/dev/null || echo inactive); echo \"$s\"; \
             [ \"$s\" = active ]\n",
            dir = dir.display()
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path.to_string_lossy().into_owned()
    }

    #[tokio::test]
    async fn passes_once_every_unit_is_active() {
        let dir = tempfile::tempdir().unwrap();
        let systemctl = fake_systemctl(dir.path());
        std::fs::write(dir.path().join("sshd.service"), "active").unwrap();
        std::fs::write(dir.path().join("slow.service.after"), "3").unwrap();
        let units = vec!["sshd.service".to_owned(), "slow.service".to_owned()];
        wait_active("up", &units, Duration::from_secs(120), &systemctl)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn fails_naming_the_units_not_active_and_their_state() {
        let dir = tempfile::tempdir().unwrap();
        let systemctl = fake_systemctl(dir.path());
        std::fs::write(dir.path().join("sshd.service"), "active").unwrap();
        std::fs::write(dir.path().join("db.service"), "failed").unwrap();
        let units = vec!["sshd.service".to_owned(), "db.service".to_owned()];
        let err = wait_active("up", &units, Duration::from_secs(1), &systemctl)
            .await
            .unwrap_err();
        assert_eq!(err.subkind(), Subkind::HealthCheckFailed);
        assert!(
            err.message().contains("db.service (failed)"),
            "{}",
            err.message()
        );
        assert!(!err.message().contains("sshd"), "{}", err.message());
    }
}
