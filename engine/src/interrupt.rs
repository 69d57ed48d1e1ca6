//! Asking the running operation to stop. The daemon's shutdown sets it
//! when its grace period is over with an operation still running: the
//! image writers check it after every write and fail with an `interrupted`
//! error, which the runner records like any failure (last error, the
//! operation's end in the datastore and the journal) before the daemon
//! exits, so every view agrees the operation was interrupted.

use trident_cosi::Cancel;

/// Shared by the engine and the blocking work of its operations: the
/// image sources the engine opens fail their next read, the image writers
/// stop after their next write.
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Cancel);

impl Interrupt {
    /// From now on, running work stops at its next check.
    pub fn request(&self) {
        self.0.request();
    }

    /// Whether work must stop.
    pub fn requested(&self) -> bool {
        self.0.requested()
    }

    /// The same request, for image sources (`SourceOptions::cancel`).
    pub fn cancel(&self) -> Cancel {
        self.0.clone()
    }
}
