//! Durable writes of journal files: a file written and fsynced, a folder
//! fsynced. A leaf both the handover and the carried cursor files use.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::error::TelemetryError;

/// Writes a file of the staging folder, fsynced.
pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), TelemetryError> {
    let mut file = File::create(path).map_err(|source| TelemetryError::Journal {
        path: path.to_owned(),
        source,
    })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|source| TelemetryError::Journal {
            path: path.to_owned(),
            source,
        })
}

pub(super) fn sync_dir(dir: &Path) -> Result<(), TelemetryError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| TelemetryError::Journal {
            path: dir.to_owned(),
            source,
        })
}
