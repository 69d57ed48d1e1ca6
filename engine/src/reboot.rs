//! Pluggable reboot. The daemon never reboots the machine it runs on
//! unless started with `--reboot systemd`.
//!
//! Whatever the mode, a request that lets Trident handle the reboot is
//! answered as upstream's server answers when it takes charge of one:
//! `REBOOT_STARTED` (upstream's client reboots its own machine when it hears
//! `REBOOT_REQUIRED`, so a hand-started daemon must never say that to it).
//! What the daemon then does is the mode's [`RebootAction`]: `systemd`
//! reboots, `record` only records, `none` only logs; a client that opted in
//! to `reboot-action` is told which (`Completed.reboot_action`).

use std::io::Write;
use std::path::PathBuf;

use trident_host::{ResultExt, Subkind, TridentError};
use trident_proto::v1::RebootAction;

use super::settings::RebootMode;

/// Carries out a reboot request made after a servicing state was committed.
pub trait Reboot: Send + Sync + std::fmt::Debug {
    /// Takes charge of a reboot for `operation_id` (`Completed` says
    /// `REBOOT_STARTED`); returns what this mode does about it. An error:
    /// the reboot cannot happen (`REBOOT_REQUIRED`, the caller must act).
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootAction, TridentError>;

    /// Reboots for real, once `Completed` is published and the journal
    /// and datastore are on disk (only when `request` said
    /// [`RebootAction::Performed`]).
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
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootAction, TridentError> {
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
            "reboot requested (recorded only, nothing reboots; --reboot record)"
        );
        Ok(RebootAction::Recorded)
    }
}

/// Asks systemd to reboot the machine.
#[derive(Debug)]
pub struct SystemdReboot;

impl Reboot for SystemdReboot {
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootAction, TridentError> {
        // `systemctl` must exist: a reboot reported as started has to happen.
        which("systemctl").ok_or_else(|| {
            TridentError::new(Subkind::Reboot, "Cannot reboot: no 'systemctl' on PATH")
        })?;
        tracing::info!(
            operation_id,
            reason,
            "reboot starts once the operation is recorded"
        );
        Ok(RebootAction::Performed)
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

/// Only logs the request; nothing reboots.
#[derive(Debug)]
pub struct NoReboot;

impl Reboot for NoReboot {
    fn request(&self, operation_id: &str, reason: &str) -> Result<RebootAction, TridentError> {
        tracing::info!(
            operation_id,
            reason,
            "reboot requested (not performed; --reboot none)"
        );
        Ok(RebootAction::NotPerformed)
    }
}
