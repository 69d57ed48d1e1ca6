//! The SQLite datastore: Host Status history (the newest row is the current
//! status, holding servicing state, active volume and last error) and the
//! operation history. WAL mode; every state change is ONE transaction, so
//! the file always holds a state the engine can resume or report from.
//!
//! Used by the daemon (read-write) and by the CLI's `offline-initialize`
//! (read-write) and `diagnose` (read-only, [`Datastore::open_read_only`]).

mod export;
mod operations;
mod schema;
mod verify;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

pub use operations::{OperationEnd, OperationResult, OperationRow, OperationStart};
pub use schema::SCHEMA_VERSION;

use crate::error::{ContextExt, ErrorRecord, ResultExt, Subkind, TridentError};
use crate::kebab_name::KebabName;
use crate::status::HostStatus;
use crate::time_util;

/// How long a writer waits for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One row of the Host Status history.
#[derive(Debug, Clone)]
pub struct HostStatusRow {
    pub id: i64,
    pub recorded_at: String,
    pub operation_id: Option<String>,
    pub status: HostStatus,
}

/// An open datastore.
#[derive(Debug)]
pub struct Datastore {
    conn: Connection,
    path: PathBuf,
}

impl Datastore {
    /// Opens (creating it and its directory if needed) and migrates.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, TridentError> {
        let path = path.as_ref().to_path_buf();
        let describe = || format!("Opening datastore {}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .structured(Subkind::OpenDatastore)
                .with_context(describe)?;
        }
        // A symlink where the datastore goes is refused, never followed.
        let mut conn = Connection::open_with_flags(
            &path,
            OpenFlags::default() | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .structured(Subkind::OpenDatastore)
        .with_context(describe)?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .structured(Subkind::OpenDatastore)?;
        check_integrity(&conn, &path)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .structured(Subkind::OpenDatastore)
            .with_context(describe)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .structured(Subkind::OpenDatastore)?;
        schema::migrate(&mut conn).with_context(describe)?;
        Ok(Self { conn, path })
    }

    /// Opens an existing datastore without writing to it.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, TridentError> {
        let path = path.as_ref().to_path_buf();
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .structured(Subkind::OpenDatastore)
        .with_context(|| format!("Opening datastore {} read-only", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .structured(Subkind::OpenDatastore)?;
        let version = schema::current_version(&conn)?;
        if version > SCHEMA_VERSION {
            return Err(TridentError::new(
                Subkind::DatastoreMigration,
                format!("Datastore schema version {version} is newer than this build supports"),
            ));
        }
        Ok(Self { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Applied schema version.
    pub fn schema_version(&self) -> Result<u32, TridentError> {
        schema::current_version(&self.conn)
    }

    /// The current Host Status (a not-provisioned default when empty).
    pub fn host_status(&self) -> Result<HostStatus, TridentError> {
        if self.schema_version()? == 0 {
            return Ok(HostStatus::default());
        }
        let json: Option<String> = self
            .conn
            .query_row(
                "SELECT status_json FROM host_status ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .structured(Subkind::LoadHostStatus)
            .with_context(|| self.reading_status())?;
        match json {
            Some(text) => HostStatus::from_json(&text).with_context(|| self.reading_status()),
            None => Ok(HostStatus::default()),
        }
    }

    /// Context of a failed Host Status read: which file (a damaged row
    /// must say where it lives).
    fn reading_status(&self) -> String {
        format!(
            "Reading the Host Status from datastore {}",
            self.path.display()
        )
    }

    /// The last error (the current Host Status's `lastError`).
    pub fn last_error(&self) -> Result<Option<ErrorRecord>, TridentError> {
        Ok(self.host_status()?.last_error)
    }

    /// Host Status history, newest first.
    pub fn history(&self, limit: u32) -> Result<Vec<HostStatusRow>, TridentError> {
        if self.schema_version()? == 0 {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, recorded_at, operation_id, status_json FROM host_status \
                 ORDER BY id DESC LIMIT ?1",
            )
            .structured(Subkind::DatastoreQuery)?;
        let rows = stmt
            .query_map([limit], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get::<_, String>(3)?,
                ))
            })
            .structured(Subkind::DatastoreQuery)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, recorded_at, operation_id, json) = row.structured(Subkind::DatastoreQuery)?;
            out.push(HostStatusRow {
                id,
                recorded_at,
                operation_id,
                status: HostStatus::from_json(&json)?,
            });
        }
        Ok(out)
    }

    /// Records a new Host Status (one transaction).
    pub fn save_status(
        &mut self,
        status: &HostStatus,
        operation_id: Option<&str>,
    ) -> Result<(), TridentError> {
        self.commit(Some(status), operation_id, None)
    }

    /// Records, in ONE transaction, an optional new Host Status and an
    /// optional operation end. This is the only write path for state.
    pub fn commit(
        &mut self,
        status: Option<&HostStatus>,
        operation_id: Option<&str>,
        end: Option<&OperationEnd>,
    ) -> Result<(), TridentError> {
        let now = time_util::now_rfc3339();
        let tx = self
            .conn
            .transaction()
            .structured(Subkind::DatastoreQuery)?;
        if let Some(status) = status {
            tx.execute(
                "INSERT INTO host_status (recorded_at, operation_id, servicing_state, ab_active_volume, status_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    now,
                    operation_id,
                    status.servicing_state.kebab_name(),
                    status.ab_active_volume.map(KebabName::kebab_name),
                    status.to_json()?,
                ],
            )
            .structured(Subkind::DatastoreQuery)
            .context("Recording the Host Status")?;
        }
        if let (Some(id), Some(end)) = (operation_id, end) {
            operations::finish(&tx, id, end, &now)?;
        }
        tx.commit().structured(Subkind::DatastoreQuery)?;
        // Acknowledged only once it reads back from the file.
        self.verify()
    }

    /// Writes a consistent copy of the whole datastore (Host Status and
    /// operation history) to `path`, replacing what is there: the datastore
    /// an A/B update hands to the volume it boots next (each root volume
    /// has its own `/var/lib/trident`). `VACUUM INTO` reads one snapshot,
    /// so a copy taken while this connection is open is never torn.
    pub fn snapshot_to(&self, path: &Path) -> Result<(), TridentError> {
        let describe = || format!("Copying the datastore to {}", path.display());
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .structured(Subkind::Io)
                .with_context(describe)?;
        }
        for stale in ["", "-wal", "-shm"] {
            match std::fs::remove_file(format!("{}{stale}", path.display())) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).structured(Subkind::Io).with_context(describe);
                }
                _ => {}
            }
        }
        self.conn
            .execute("VACUUM INTO ?1", [path.to_string_lossy()])
            .structured(Subkind::DatastoreQuery)
            .with_context(describe)?;
        Ok(())
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn conn_mut(&mut self) -> &mut Connection {
        &mut self.conn
    }
}

/// Refuses a damaged file (a torn write, a bad disk) at open, naming it,
/// rather than failing later on whichever page a query happens to read.
/// `quick_check` reads every page once; the datastore is small.
fn check_integrity(conn: &Connection, path: &Path) -> Result<(), TridentError> {
    let damaged = |detail: String| {
        TridentError::new(
            Subkind::OpenDatastore,
            format!("Datastore {} is damaged: {detail}", path.display()),
        )
    };
    let mut stmt = conn
        .prepare("PRAGMA quick_check(5)")
        .map_err(|e| damaged(e.to_string()))?;
    let problems = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
        .map_err(|e| damaged(e.to_string()))?;
    if problems.len() == 1 && problems[0] == "ok" {
        Ok(())
    } else {
        Err(damaged(problems.join("; ")))
    }
}

#[cfg(test)]
mod tests;
