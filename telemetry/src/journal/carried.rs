//! What goes with the journal at a handover besides its records: the
//! delivery cursors its readers keep in the journal folder (files named
//! `*.cursor`, e.g. the OTLP export's: what of this journal it delivered),
//! brought up to date first by the readers' hooks, so the daemon of the
//! volume that boots next goes on from there instead of from a stale
//! cursor of its own.

use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::TelemetryError;

/// Suffix of the journal readers' cursor files carried over.
pub const CURSOR_SUFFIX: &str = ".cursor";

/// A reader's hook, run before the journal is handed over (e.g. the OTLP
/// export flushes, so its cursor says what it delivered by then).
pub type HandoverHook = Arc<dyn Fn() + Send + Sync>;

/// The hooks registered on a bus.
#[derive(Default)]
pub(crate) struct HandoverHooks(Mutex<Vec<HandoverHook>>);

impl std::fmt::Debug for HandoverHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.0.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("HandoverHooks")
            .field("count", &count)
            .finish()
    }
}

impl HandoverHooks {
    pub fn add(&self, hook: HandoverHook) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(hook);
    }

    pub fn run(&self) {
        let hooks = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for hook in hooks {
            hook();
        }
    }
}

/// The cursor files of journal folder `dir` (name, content); none when it
/// has none or cannot be read.
pub(crate) fn read_cursors(dir: &Path) -> Vec<(OsString, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(CURSOR_SUFFIX))
        .filter_map(|e| Some((e.file_name(), std::fs::read(e.path()).ok()?)))
        .collect()
}

/// Writes `cursors` into the (staging) journal folder `dir`, fsynced.
pub(crate) fn write_cursors(
    dir: &Path,
    cursors: &[(OsString, Vec<u8>)],
) -> Result<(), TelemetryError> {
    for (name, bytes) in cursors {
        let path = dir.join(name);
        super::durable::write_file(&path, bytes)?;
    }
    Ok(())
}
