//! Pluggable reboot. The daemon never reboots the machine it runs on
//! unless started with `--reboot systemd`.

use std::io::Write;
use std::path::PathBuf;

use trident_host::{ResultExt, Subkind, TridentError};
use trident_proto::v1::RebootStatus;

use super::settings::RebootMode;

/// Carries out a reboot request made after a servicing state was committed.
pub trait Reboot: Send + Sync + std::fmt::Debug {
    /// Requests a reboot for `operation_id`; returns what to report in
    /// `Completed.reboot_status`.
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootStatus, TridentError>;

    /// Reboots for real, once `Completed` is published and the journal
    /// and datastore are on disk (only when `request` said
    /// `REBOOT_STARTED`).
    fn carry_out(&self, _operation_id: &str, _reason: &str) -> Result<(), TridentError> {
        Ok(())
    }
}

/// Builds the implementation selected by `--reboot`.
pub fn from_mode(mode: RebootMode, log_path: PathBuf) -> Box<dyn Reboot> {
    match mode {
        RebootMode::Record => Box::new(RecordReboot { log_path }),
        RebootMode::Systemd => Box::new(SystemdReboot),
        RebootMode::None => Box::new(NoReboot),
    }
}

/// Only records the request: one line appended to
/// STATE_DIR/reboot-requests.log and a log record on the bus. The reboot
/// itself is simulated by the boot record (see `boot_record`).
#[derive(Debug)]
pub struct RecordReboot {
    pub log_path: PathBuf,
}

impl Reboot for RecordReboot {
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootStatus, TridentError> {
        let line = format!(
            "{} operation={operation_id} reason={reason:?}\n",
            trident_host::time_util::now_rfc3339()
        );
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .structured_msg(
                Subkind::Reboot,
                format!("Cannot open {}", self.log_path.display()),
            )?;
        file.write_all(line.as_bytes())
            .structured(Subkind::Reboot)?;
        tracing::info!(
            operation_id,
            reason,
            log = %self.log_path.display(),
            "reboot requested (recorded only; --reboot record)"
        );
        Ok(RebootStatus::RebootRequired)
    }
}

/// Asks systemd to reboot the machine.
#[derive(Debug)]
pub struct SystemdReboot;

impl Reboot for SystemdReboot {
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootStatus, TridentError> {
        // `systemctl` must exist: a reboot reported as started has to happen.
        which("systemctl").ok_or_else(|| {
            TridentError::new(Subkind::Reboot, "Cannot reboot: no 'systemctl' on PATH")
        })?;
        tracing::info!(
            operation_id,
            reason,
            "reboot starts once the operation is recorded"
        );
        Ok(RebootStatus::RebootStarted)
    }

    /// `systemctl reboot`: as root it reaches systemd over its private
    /// socket, so no D-Bus daemon is needed. systemd then stops tridentd
    /// like any service (SIGTERM: streams end cleanly).
    fn carry_out(&self, operation_id: &str, reason: &str) -> Result<(), TridentError> {
        tracing::warn!(operation_id, reason, "rebooting the machine via systemd");
        let status = std::process::Command::new("systemctl")
            .arg("reboot")
            .status()
            .structured_msg(Subkind::Reboot, "Cannot run 'systemctl reboot'")?;
        if !status.success() {
            return Err(TridentError::new(
                Subkind::Reboot,
                format!("'systemctl reboot' failed ({status})"),
            ));
        }
        Ok(())
    }
}

/// `program` on PATH.
fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|p| p.is_file())
    })
}

/// Does nothing; the caller reboots.
#[derive(Debug)]
pub struct NoReboot;

impl Reboot for NoReboot {
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootStatus, TridentError> {
        tracing::info!(
            operation_id,
            reason,
            "reboot required (--reboot none: not acting)"
        );
        Ok(RebootStatus::RebootRequired)
    }
}
