//! Upstream Trident's own table in the same file: `hoststatus`, one YAML
//! Host Status per row, the newest row current (v0.27.0,
//! `crates/trident/src/datastore.rs`).
//!
//! tridentd reads it (a host upstream serviced is taken over as upstream
//! left it) and writes it (every Host Status row of ours is also a row
//! there, in the same transaction, so upstream's agent put back finds the
//! host as tridentd left it). Each row of our `host_status` table names
//! the upstream row written with it (`upstream_id`); which table holds the
//! current status is decided by [`Winner::decide`].

pub mod format;
pub mod last_error;

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use crate::error::{ResultExt, Subkind, TridentError};
use crate::status::HostStatus;

/// Upstream's own statement, byte for byte (its `timestamp` default is
/// misspelt, so upstream leaves the column empty; ours carry the time):
/// the table is the same whichever agent created it.
pub const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS hoststatus (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                timestamp DATETIME DEFALUT CURRENT_TIMESTAMP,
                contents TEXT NOT NULL
            )";

/// One row of upstream's table.
#[derive(Debug, Clone)]
pub struct UpstreamRow {
    pub id: i64,
    /// Upstream leaves it empty; ours hold the RFC 3339 time.
    pub timestamp: Option<String>,
    pub contents: String,
}

/// Whether the file has upstream's table.
pub fn has_table(conn: &Connection) -> Result<bool, TridentError> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hoststatus'",
        [],
        |_| Ok(()),
    )
    .optional()
    .structured(Subkind::DatastoreQuery)
    .map(|found| found.is_some())
}

/// The newest row's id.
pub fn newest_id(conn: &Connection) -> Result<Option<i64>, TridentError> {
    if !has_table(conn)? {
        return Ok(None);
    }
    conn.query_row("SELECT max(id) FROM hoststatus", [], |r| r.get(0))
        .structured(Subkind::DatastoreQuery)
}

/// Rows, newest first.
pub fn rows(conn: &Connection, limit: u32) -> Result<Vec<UpstreamRow>, TridentError> {
    if !has_table(conn)? {
        return Ok(Vec::new());
    }
    let mut stmt = conn
        .prepare(
            "SELECT id, CAST(timestamp AS TEXT), contents FROM hoststatus ORDER BY id DESC LIMIT ?1",
        )
        .structured(Subkind::DatastoreQuery)?;
    let rows = stmt
        .query_map([limit], |r| {
            Ok(UpstreamRow {
                id: r.get(0)?,
                timestamp: r.get(1)?,
                contents: r.get(2)?,
            })
        })
        .structured(Subkind::DatastoreQuery)?;
    rows.collect::<Result<_, _>>()
        .structured(Subkind::DatastoreQuery)
}

/// One row by id.
pub fn row(conn: &Connection, id: i64) -> Result<Option<UpstreamRow>, TridentError> {
    conn.query_row(
        "SELECT id, CAST(timestamp AS TEXT), contents FROM hoststatus WHERE id = ?1",
        [id],
        |r| {
            Ok(UpstreamRow {
                id: r.get(0)?,
                timestamp: r.get(1)?,
                contents: r.get(2)?,
            })
        },
    )
    .optional()
    .structured(Subkind::DatastoreQuery)
}

/// Reads a row, or fails naming the datastore and the row.
pub fn decode_row(row: &UpstreamRow, datastore: &str) -> Result<format::Decoded, TridentError> {
    format::decode(&row.contents).map_err(|e| {
        TridentError::new(
            Subkind::LoadHostStatus,
            format!(
                "Datastore {datastore}: row {} of upstream's table hoststatus is {e}",
                row.id
            ),
        )
    })
}

/// Inserts `status` as upstream's newest row (in the caller's
/// transaction); returns its id.
pub fn insert(conn: &Connection, status: &HostStatus, now: &str) -> Result<i64, TridentError> {
    let previous: Option<Value> = match newest_id(conn)? {
        Some(id) => row(conn, id)?
            .and_then(|r| format::decode(&r.contents).ok())
            .map(|d| d.document),
        None => None,
    };
    let stamp = format::stamp(env!("CARGO_PKG_VERSION"));
    let contents = format::encode(status, previous.as_ref(), &stamp)
        .structured(Subkind::SerializeHostStatus)?;
    conn.execute(
        "INSERT INTO hoststatus (timestamp, contents) VALUES (?1, ?2)",
        params![now, contents],
    )
    .structured(Subkind::DatastoreQuery)
    .map_err(|e| e.context("Recording the Host Status in upstream's table hoststatus"))?;
    Ok(conn.last_insert_rowid())
}

/// Which table holds the current Host Status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Winner {
    /// Neither has a row: not provisioned.
    Neither,
    /// Ours (its newest row is the one written with upstream's newest, or
    /// upstream's table is empty).
    Ours,
    /// Upstream's newest row, of this id: upstream's agent wrote after
    /// our last write (or tridentd never wrote: a takeover).
    Upstream(i64),
}

impl Winner {
    /// Both tables are written together by tridentd, so they disagree only
    /// when upstream's agent ran after tridentd's last write: upstream's
    /// newest row is then newer than the one our newest row names, and it
    /// wins: the most recently written state is the host's. `ours` is our
    /// newest row's `upstream_id` (`None` for no row, `Some(None)` for a
    /// row from before the link: ours wins).
    pub fn decide(ours: Option<Option<i64>>, upstream_newest: Option<i64>) -> Self {
        match (ours, upstream_newest) {
            (None, None) => Self::Neither,
            (None, Some(id)) => Self::Upstream(id),
            (Some(Some(linked)), Some(id)) if id > linked => Self::Upstream(id),
            (Some(_), _) => Self::Ours,
        }
    }
}

/// The current status when upstream's row wins over our (older) newest
/// row: upstream's fields from its row; of our additions, what describes
/// the storage install created is kept while the install is the same
/// (upstream's updates do not repartition), and what describes images
/// (hashes, verity root hashes) is dropped: upstream may have replaced
/// them.
pub fn adopt(upstream: HostStatus, ours: Option<&HostStatus>) -> HostStatus {
    let mut status = upstream;
    if let Some(ours) = ours.filter(|o| o.install_index == status.install_index) {
        status.layout = ours.layout.clone();
        status.raid_arrays = ours.raid_arrays.clone();
        status.encrypted_volumes = ours.encrypted_volumes.clone();
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_recently_written_table_wins() {
        assert_eq!(Winner::decide(None, None), Winner::Neither);
        assert_eq!(Winner::decide(None, Some(3)), Winner::Upstream(3));
        assert_eq!(Winner::decide(Some(Some(3)), Some(3)), Winner::Ours);
        assert_eq!(Winner::decide(Some(Some(3)), Some(5)), Winner::Upstream(5));
        assert_eq!(Winner::decide(Some(None), Some(5)), Winner::Ours);
        assert_eq!(Winner::decide(Some(Some(3)), None), Winner::Ours);
    }
}
