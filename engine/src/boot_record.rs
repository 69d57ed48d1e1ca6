//! The boot record: which A/B volume the host boots next and which one it
//! booted. On a real host this is firmware/bootloader state (BootNext, the
//! mounted root); for disk-image targets it is this small file,
//! STATE_DIR/boot-record.json:
//!
//! ```json
//! { "nextBoot": "volume-b", "booted": null, "requestedBy": "<operation id>", "updatedAt": "..." }
//! ```
//!
//! * Finalize (install, A/B update, rollback) sets `nextBoot` and clears
//!   `booted`: a reboot into `nextBoot` is now pending.
//! * The reboot is simulated: when the daemon starts, or when the next
//!   Commit runs, a pending reboot "happens": `booted` becomes `nextBoot`.
//! * Commit reads `booted` to learn which volume the host came up on. A
//!   test (or an operator) can write `booted` by hand first to simulate a
//!   boot into the wrong volume.
//! * A failed health check points `nextBoot` back at the old volume.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trident_host::status::AbVolume;
use trident_host::{ResultExt, Subkind, TridentError};

/// File name inside the state directory.
pub const BOOT_RECORD_FILE: &str = "boot-record.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootRecord {
    /// Volume the next boot starts from.
    #[serde(default)]
    pub next_boot: Option<AbVolume>,
    /// Volume the host booted from; `None` while a reboot is pending.
    #[serde(default)]
    pub booted: Option<AbVolume>,
    /// Operation that last changed `nextBoot`.
    #[serde(default)]
    pub requested_by: Option<String>,
    #[serde(default)]
    pub updated_at: String,
}

/// The boot record file of one state directory.
#[derive(Debug, Clone)]
pub struct BootRecordFile {
    path: PathBuf,
}

impl BootRecordFile {
    pub fn new(state_dir: &Path) -> Self {
        Self {
            path: state_dir.join(BOOT_RECORD_FILE),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The record; an empty one when the file does not exist.
    pub fn load(&self) -> Result<BootRecord, TridentError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).structured_msg(
                Subkind::WriteBootRecord,
                format!("Boot record {} is unreadable", self.path.display()),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BootRecord::default()),
            Err(e) => Err(e).structured_msg(
                Subkind::WriteBootRecord,
                format!("Cannot read boot record {}", self.path.display()),
            ),
        }
    }

    /// Replaces the file atomically (temp file, fsync, rename).
    pub fn save(&self, record: &BootRecord) -> Result<(), TridentError> {
        let mut record = record.clone();
        record.updated_at = trident_host::time_util::now_rfc3339();
        let json = serde_json::to_vec_pretty(&record).structured(Subkind::WriteBootRecord)?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).structured(Subkind::WriteBootRecord)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let mut file = std::fs::File::create(&tmp).structured(Subkind::WriteBootRecord)?;
        file.write_all(&json).structured(Subkind::WriteBootRecord)?;
        file.sync_all().structured(Subkind::WriteBootRecord)?;
        std::fs::rename(&tmp, &self.path).structured(Subkind::WriteBootRecord)
    }

    /// Finalize: the next boot starts from `volume`.
    pub fn set_next_boot(&self, volume: AbVolume, operation_id: &str) -> Result<(), TridentError> {
        let mut record = self.load()?;
        record.next_boot = Some(volume);
        record.booted = None;
        record.requested_by = Some(operation_id.to_owned());
        self.save(&record)
    }

    /// Points the next boot at `volume` without marking a reboot pending
    /// (the host keeps running on what it booted).
    pub fn point_next_boot(
        &self,
        volume: AbVolume,
        operation_id: &str,
    ) -> Result<(), TridentError> {
        let mut record = self.load()?;
        record.next_boot = Some(volume);
        record.requested_by = Some(operation_id.to_owned());
        self.save(&record)
    }

    /// Simulates a pending reboot: `booted` becomes `nextBoot`. Returns the
    /// booted volume.
    pub fn complete_pending_reboot(&self) -> Result<Option<AbVolume>, TridentError> {
        let mut record = self.load()?;
        if record.booted.is_none() && record.next_boot.is_some() {
            record.booted = record.next_boot;
            self.save(&record)?;
            tracing::info!(booted = ?record.booted, "pending reboot simulated from the boot record");
        }
        Ok(record.booted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn finalize_then_simulated_reboot_marks_the_next_volume_booted() {
        let dir = std::env::temp_dir().join(format!("boot-record-{}", uuid::Uuid::new_v4()));
        let file = BootRecordFile::new(&dir);
        assert_eq!(file.load().unwrap(), BootRecord::default());
        file.set_next_boot(AbVolume::VolumeB, "op").unwrap();
        assert_eq!(file.load().unwrap().booted, None, "reboot pending");
        assert_eq!(
            file.complete_pending_reboot().unwrap(),
            Some(AbVolume::VolumeB)
        );
        // Pointing back does not fake another reboot.
        file.point_next_boot(AbVolume::VolumeA, "op2").unwrap();
        let record = file.load().unwrap();
        assert_eq!(
            (record.next_boot, record.booted),
            (Some(AbVolume::VolumeA), Some(AbVolume::VolumeB))
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
