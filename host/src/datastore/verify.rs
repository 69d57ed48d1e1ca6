//! Checks of the datastore's files while the daemon has it open. SQLite
//! serves reads from its page cache and writes through a connection that
//! never rereads what it wrote, so a file overwritten under a running
//! daemon (a bad disk, a stray `dd`) would go unnoticed until the next
//! start: a state change acknowledged and then lost. Every state change is
//! read back through a fresh connection ([`Datastore::verify`]) and every
//! use first looks at the files' headers ([`Datastore::check_files`]);
//! both fail as at start: `open-datastore`, naming the file.

use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::{Datastore, check_integrity, schema, upstream};
use crate::error::{Subkind, TridentError};

/// The first bytes of every SQLite database file.
const DB_MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// The first four bytes of a WAL file (big-endian; the last bit is the
/// checksum byte order).
const WAL_MAGICS: [u32; 2] = [0x377f_0682, 0x377f_0683];

fn damaged(path: &Path, detail: impl std::fmt::Display) -> TridentError {
    TridentError::new(
        Subkind::OpenDatastore,
        format!("Datastore {} is damaged: {detail}", path.display()),
    )
}

/// The first `N` bytes of `path`; `None` if it is missing or shorter.
fn head<const N: usize>(path: &Path) -> std::io::Result<Option<[u8; N]>> {
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut buf = [0u8; N];
    match file.read_exact(&mut buf) {
        Ok(()) => Ok(Some(buf)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

impl Datastore {
    /// Cheap, before every use: the database file still starts as an
    /// SQLite database and its WAL (when it has one) as a WAL.
    pub fn check_files(&self) -> Result<(), TridentError> {
        let path = self.path();
        match head::<16>(path) {
            Ok(Some(magic)) if &magic == DB_MAGIC => {}
            Ok(Some(_)) => return Err(damaged(path, "not an SQLite database any more")),
            Ok(None) => return Err(damaged(path, "the file is gone or truncated")),
            Err(e) => return Err(damaged(path, e)),
        }
        let wal = path.with_file_name(format!(
            "{}-wal",
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
        ));
        match head::<4>(&wal) {
            Ok(Some(magic)) if WAL_MAGICS.contains(&u32::from_be_bytes(magic)) => Ok(()),
            Ok(Some(_)) => Err(damaged(&wal, "not a write-ahead log any more")),
            Ok(None) => Ok(()),
            Err(e) => Err(damaged(&wal, e)),
        }
    }

    /// After every write: the files pass [`Self::check_files`], and a
    /// fresh connection (no page cache shared with ours) finds every page
    /// sound and reads the current Host Status back.
    pub fn verify(&self) -> Result<(), TridentError> {
        self.check_files()?;
        let path = self.path();
        let fresh = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| damaged(path, e))?;
        check_integrity(&fresh, path)?;
        if schema::current_version(&fresh).map_err(|e| damaged(path, e))? > 0 {
            let json: Option<String> = fresh
                .query_row(
                    "SELECT status_json FROM host_status ORDER BY id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(damaged(path, e)),
                })?;
            if let Some(json) = json {
                crate::status::HostStatus::from_json(&json).map_err(|e| damaged(path, e))?;
            }
        }
        // The upstream row written with our newest reads back too.
        if schema::current_version(&fresh).map_err(|e| damaged(path, e))? >= 3 {
            let linked: Option<Option<i64>> = fresh
                .query_row(
                    "SELECT upstream_id FROM host_status ORDER BY id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .map(Some)
                .or_else(|e| match e {
                    rusqlite::Error::QueryReturnedNoRows => Ok(None),
                    e => Err(damaged(path, e)),
                })?;
            if let Some(id) = linked.flatten() {
                let row = upstream::row(&fresh, id)
                    .map_err(|e| damaged(path, e))?
                    .ok_or_else(|| damaged(path, format!("row {id} of hoststatus is gone")))?;
                upstream::decode_row(&row, &path.display().to_string())
                    .map_err(|e| damaged(path, e))?;
            }
        }
        Ok(())
    }
}
