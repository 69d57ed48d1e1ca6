//! The SQLite datastore: Host Status history (the newest row is the current
//! status, holding servicing state, active volume and last error) and the
//! operation history. WAL mode; every state change is ONE transaction, so
//! the file always holds a state the engine can resume or report from.
//!
//! Upstream Trident's own table `hoststatus` lives in the same file and
//! is read and written too ([`upstream`]): a host upstream serviced is
//! taken over as upstream left it, and every Host Status row of ours is
//! also a row of upstream's, so upstream's agent put back reads the host
//! as tridentd left it.
//!
//! Used by the daemon (read-write) and by the CLI's `offline-initialize`
//! (read-write) and `diagnose` (read-only, [`Datastore::open_read_only`]).

mod export;
mod operations;
pub mod rollback_chain;
mod schema;
pub mod upstream;
mod verify;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

pub use operations::{OperationEnd, OperationResult, OperationRow, OperationStart};
pub use rollback_chain::{ChainRow, RollbackChainItem, RollbackKind};
pub use schema::SCHEMA_VERSION;
pub use upstream::Winner;

use crate::error::{ContextExt, ErrorRecord, ResultExt, Subkind, TridentError};
use crate::kebab_name::KebabName;
use crate::status::HostStatus;
use crate::time_util;

/// How long a writer waits for another connection's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// One row of the Host Status history.
#[derive(Debug, Clone)]
pub struct HostStatusRow {
    /// The row's id in upstream's table `hoststatus` (the history's one
    /// order: every row of ours is written there too); our own row id for
    /// a row of ours from a file not yet migrated.
    pub id: i64,
    /// RFC 3339; empty for a row upstream wrote (it records no time).
    pub recorded_at: String,
    pub operation_id: Option<String>,
    /// Who wrote the row.
    pub writer: Writer,
    pub status: HostStatus,
}

/// Which agent wrote a Host Status row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writer {
    Tridentd,
    /// Upstream Trident: a row of its table no row of ours names.
    Upstream,
}

/// Our newest Host Status row: its status and the upstream row it names.
struct OurNewest {
    status: HostStatus,
    upstream_id: Option<i64>,
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

    /// The current Host Status (a not-provisioned default when empty):
    /// our newest row, or upstream's newest when [`Winner::decide`] says
    /// so (a host upstream serviced, or one its agent serviced after ours).
    pub fn host_status(&self) -> Result<HostStatus, TridentError> {
        let ours = self.our_newest()?;
        match self.winner_of(ours.as_ref())? {
            Winner::Neither => Ok(HostStatus::default()),
            Winner::Ours => Ok(ours.map(|o| o.status).unwrap_or_default()),
            Winner::Upstream(id) => {
                let decoded = self.upstream_decoded(id)?;
                Ok(upstream::adopt(
                    decoded.status,
                    ours.as_ref().map(|o| &o.status),
                ))
            }
        }
    }

    /// Which table holds the current Host Status.
    pub fn winner(&self) -> Result<Winner, TridentError> {
        let ours = self.our_newest()?;
        self.winner_of(ours.as_ref())
    }

    fn winner_of(&self, ours: Option<&OurNewest>) -> Result<Winner, TridentError> {
        let newest = upstream::newest_id(&self.conn)?;
        Ok(Winner::decide(ours.map(|o| o.upstream_id), newest))
    }

    /// What an operator should know of upstream's table: which table the
    /// current status comes from, and what of upstream's newest row our
    /// model does not hold (kept in the file, written back as it was).
    pub fn upstream_notes(&self) -> Result<Vec<String>, TridentError> {
        let mut notes = Vec::new();
        let Some(newest) = upstream::newest_id(&self.conn)? else {
            return Ok(notes);
        };
        let where_ = format!(
            "datastore {}, upstream's table hoststatus, row {newest}",
            self.path.display()
        );
        if let Winner::Upstream(_) = self.winner()? {
            notes.push(format!(
                "The current Host Status is upstream Trident's newest row ({where_}): \
                 upstream's agent wrote it after tridentd's last write, or tridentd never wrote"
            ));
        }
        let decoded = self.upstream_decoded(newest)?;
        if !decoded.kept.is_empty() {
            notes.push(format!(
                "{where_}: {} unknown to tridentd, kept as written (a newer upstream's?)",
                decoded.kept.join(", ")
            ));
        }
        Ok(notes)
    }

    fn upstream_decoded(&self, id: i64) -> Result<upstream::format::Decoded, TridentError> {
        let row = upstream::row(&self.conn, id)?.ok_or_else(|| {
            TridentError::new(
                Subkind::LoadHostStatus,
                format!(
                    "Datastore {}: row {id} of hoststatus is gone",
                    self.path.display()
                ),
            )
        })?;
        upstream::decode_row(&row, &self.path.display().to_string())
    }

    fn our_newest(&self) -> Result<Option<OurNewest>, TridentError> {
        let version = self.schema_version()?;
        if version == 0 {
            return Ok(None);
        }
        let sql = if version >= 3 {
            "SELECT status_json, upstream_id FROM host_status ORDER BY id DESC LIMIT 1"
        } else {
            "SELECT status_json, NULL FROM host_status ORDER BY id DESC LIMIT 1"
        };
        let row: Option<(String, Option<i64>)> = self
            .conn
            .query_row(sql, [], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .structured(Subkind::LoadHostStatus)
            .with_context(|| self.reading_status())?;
        row.map(|(json, upstream_id)| {
            Ok(OurNewest {
                status: HostStatus::from_json(&json).with_context(|| self.reading_status())?,
                upstream_id,
            })
        })
        .transpose()
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

    /// Host Status history, newest first: upstream's table in its order,
    /// each row of ours in place of the upstream row written with it (ours
    /// holds our additions and the operation); a file not yet migrated
    /// gives our rows alone.
    pub fn history(&self, limit: u32) -> Result<Vec<HostStatusRow>, TridentError> {
        let version = self.schema_version()?;
        let ours = self.our_rows(version)?;
        if version < 3 {
            let upstream_rows = upstream::rows(&self.conn, limit)?;
            if ours.is_empty() {
                return self.upstream_history(&upstream_rows, &Default::default());
            }
            return Ok(ours
                .into_iter()
                .take(limit as usize)
                .map(|(_, row)| row)
                .collect());
        }
        let upstream_rows = upstream::rows(&self.conn, limit)?;
        let by_upstream: std::collections::HashMap<i64, HostStatusRow> = ours
            .into_iter()
            .filter_map(|(link, row)| link.map(|l| (l, row)))
            .collect();
        self.upstream_history(&upstream_rows, &by_upstream)
    }

    fn upstream_history(
        &self,
        rows: &[upstream::UpstreamRow],
        ours: &std::collections::HashMap<i64, HostStatusRow>,
    ) -> Result<Vec<HostStatusRow>, TridentError> {
        let path = self.path.display().to_string();
        rows.iter()
            .map(|row| match ours.get(&row.id) {
                Some(our) => Ok(HostStatusRow {
                    id: row.id,
                    ..our.clone()
                }),
                None => Ok(HostStatusRow {
                    id: row.id,
                    recorded_at: row.timestamp.clone().unwrap_or_default(),
                    operation_id: None,
                    writer: Writer::Upstream,
                    status: upstream::decode_row(row, &path)?.status,
                }),
            })
            .collect()
    }

    /// Our rows, newest first, each with the upstream row it names.
    fn our_rows(&self, version: u32) -> Result<Vec<(Option<i64>, HostStatusRow)>, TridentError> {
        if version == 0 {
            return Ok(Vec::new());
        }
        let link = if version >= 3 { "upstream_id" } else { "NULL" };
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT id, recorded_at, operation_id, status_json, {link} FROM host_status \
                 ORDER BY id DESC"
            ))
            .structured(Subkind::DatastoreQuery)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<i64>>(4)?,
                ))
            })
            .structured(Subkind::DatastoreQuery)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, recorded_at, operation_id, json, link) =
                row.structured(Subkind::DatastoreQuery)?;
            out.push((
                link,
                HostStatusRow {
                    id,
                    recorded_at,
                    operation_id,
                    writer: Writer::Tridentd,
                    status: HostStatus::from_json(&json).with_context(|| self.reading_status())?,
                },
            ));
        }
        Ok(out)
    }

    /// Rows of upstream's table `hoststatus` as stored, newest first (at
    /// most `limit`): what upstream's agent put back would read.
    pub fn upstream_rows(&self, limit: u32) -> Result<Vec<upstream::UpstreamRow>, TridentError> {
        upstream::rows(&self.conn, limit)
    }

    /// The manual-rollback chain, newest first, as upstream computes it
    /// from the same history ([`rollback_chain`]): over upstream's table,
    /// where every row of ours is too; a row that cannot be read ends it,
    /// as upstream's does. A file without upstream's rows (not migrated)
    /// gives the chain of our rows, stamped as we would write them there.
    pub fn rollback_chain(&self) -> Result<Vec<RollbackChainItem>, TridentError> {
        let rows = upstream::rows(&self.conn, u32::MAX)?;
        let history: Vec<Option<ChainRow>> = if rows.is_empty() {
            let stamp = upstream::format::stamp(env!("CARGO_PKG_VERSION"));
            self.our_rows(self.schema_version()?)?
                .iter()
                .map(|(_, row)| Some(ChainRow::of(&row.status, &stamp)))
                .collect()
        } else {
            rows.iter()
                .map(|row| {
                    upstream::format::decode(&row.contents)
                        .ok()
                        .map(|d| ChainRow::of(&d.status, &d.trident_version))
                })
                .collect()
        };
        rollback_chain::rollback_chain(&history)
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
            insert_status(&tx, status, operation_id, &now)?;
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

/// Records `status` in both tables, in the caller's transaction: upstream's
/// row first, then ours naming it.
pub(crate) fn insert_status(
    tx: &Connection,
    status: &HostStatus,
    operation_id: Option<&str>,
    now: &str,
) -> Result<(), TridentError> {
    let upstream_id = upstream::insert(tx, status, now)?;
    tx.execute(
        "INSERT INTO host_status (recorded_at, operation_id, servicing_state, ab_active_volume, status_json, upstream_id) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            now,
            operation_id,
            status.servicing_state.kebab_name(),
            status.ab_active_volume.map(KebabName::kebab_name),
            status.to_json()?,
            upstream_id,
        ],
    )
    .structured(Subkind::DatastoreQuery)
    .context("Recording the Host Status")?;
    Ok(())
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
