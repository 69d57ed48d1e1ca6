//! Journal frame reader: any segment file (torn, corrupt, hostile length
//! fields) loads as the records it holds, never a panic and never an
//! allocation larger than the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trident_telemetry::journal::JournalHistory;

fuzz_target!(|data: &[u8]| {
    let Ok(dir) = tempfile::tempdir() else {
        return;
    };
    if std::fs::write(dir.path().join("segment-000000000001.log"), data).is_err() {
        return;
    }
    if let Ok(history) = JournalHistory::load(dir.path()) {
        let _ = history.operations();
        let _ = history.last_error();
    }
});
