//! A failure the datastore could not record (its file system full, the
//! file damaged): the bus and `GetLastError` know it, so the Host Status
//! served from the datastore must too, or the views disagree (`get status`
//! saying `lastError: null` while `get last-error` shows the failure). It
//! is served over the stored `lastError`, with a cause saying why the
//! datastore lacks it, until a state change is recorded again.

use std::sync::{Mutex, PoisonError};

use trident_host::status::HostStatus;
use trident_host::{ErrorRecord, TridentError};

/// The newest failure not in the datastore, if any.
#[derive(Debug, Default)]
pub struct UnrecordedError(Mutex<Option<ErrorRecord>>);

impl UnrecordedError {
    /// `record` could not be stored because of `why`.
    pub fn set(&self, record: &ErrorRecord, why: &TridentError) {
        let why = why.record();
        let reason = why.causes.last().unwrap_or(&why.message);
        let mut record = record.clone();
        record.causes.push(format!(
            "not recorded in the datastore ({reason}): kept in memory until \
             the next state change is recorded; a restart of the daemon loses it"
        ));
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(record);
    }

    /// A state change was recorded: the datastore is the truth again.
    pub fn clear(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// `status` as served: the unrecorded failure as its `lastError`.
    pub fn overlay(&self, status: &mut HostStatus) {
        if let Some(record) = &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            status.last_error = Some(record.clone());
        }
    }
}
