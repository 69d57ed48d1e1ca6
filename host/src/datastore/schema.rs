//! Schema migrations. `schema_version` holds the number of applied
//! migrations; each migration runs in the same transaction as its version
//! bump, so a crash leaves the schema at a whole version.

use rusqlite::{Connection, OptionalExtension, Transaction};

use super::upstream;
use crate::error::{ResultExt, Subkind, TridentError};
use crate::status::HostStatus;

/// Migration N (1-based) is `MIGRATIONS[N - 1]`. Append only; never edit.
const MIGRATIONS: &[&str] = &[
    // 1: Host Status history and operation history.
    r"
    CREATE TABLE host_status (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        recorded_at      TEXT NOT NULL,
        operation_id     TEXT,
        servicing_state  TEXT NOT NULL,
        ab_active_volume TEXT,
        status_json      TEXT NOT NULL
    );
    CREATE TABLE operations (
        id         TEXT PRIMARY KEY,
        kind       TEXT NOT NULL,
        rpc        TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at   TEXT,
        result     TEXT NOT NULL,
        trace_id   TEXT NOT NULL,
        error_json TEXT
    );
    CREATE INDEX operations_started ON operations(started_at);
    ",
    // 2: each operation's root span id (16 hex), so the operation that
    // settles it after the reboot continues its trace.
    r"
    ALTER TABLE operations ADD COLUMN root_span_id TEXT;
    ",
    // 3: upstream Trident's table `hoststatus` beside ours (created with
    // upstream's own statement when upstream has not: [`after`] below),
    // and each of our Host Status rows names the row of upstream's written
    // with it. Rows of ours from before are copied there ([`after`]).
    r"
    ALTER TABLE host_status ADD COLUMN upstream_id INTEGER;
    ",
];

/// What migration `n` does beyond its SQL, in the same transaction.
fn after(n: u32, tx: &Transaction<'_>) -> Result<(), TridentError> {
    if n != 3 {
        return Ok(());
    }
    tx.execute_batch(upstream::CREATE_TABLE)
        .structured(Subkind::DatastoreMigration)?;
    // Our rows from before, oldest first, each also written in upstream's
    // format (after any rows upstream had: ours are the newer).
    let ours: Vec<(i64, String, String)> = {
        let mut stmt = tx
            .prepare("SELECT id, recorded_at, status_json FROM host_status ORDER BY id")
            .structured(Subkind::DatastoreMigration)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .structured(Subkind::DatastoreMigration)?;
        rows.collect::<Result<_, _>>()
            .structured(Subkind::DatastoreMigration)?
    };
    for (id, recorded_at, json) in ours {
        let status = HostStatus::from_json(&json)?;
        let upstream_id = upstream::insert(tx, &status, &recorded_at)?;
        tx.execute(
            "UPDATE host_status SET upstream_id = ?1 WHERE id = ?2",
            [upstream_id, id],
        )
        .structured(Subkind::DatastoreMigration)?;
    }
    Ok(())
}

/// Number of the newest schema this build knows.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

pub(super) fn current_version(conn: &Connection) -> Result<u32, TridentError> {
    let has_table: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .structured(Subkind::DatastoreMigration)?;
    if has_table.is_none() {
        return Ok(0);
    }
    conn.query_row("SELECT version FROM schema_version", [], |r| r.get(0))
        .optional()
        .structured(Subkind::DatastoreMigration)
        .map(Option::unwrap_or_default)
}

pub(super) fn migrate(conn: &mut Connection) -> Result<(), TridentError> {
    let mut version = current_version(conn)?;
    if version > SCHEMA_VERSION {
        return Err(TridentError::new(
            Subkind::DatastoreMigration,
            format!(
                "Datastore schema version {version} is newer than this build supports ({SCHEMA_VERSION})"
            ),
        ));
    }
    while version < SCHEMA_VERSION {
        let tx = conn.transaction().structured(Subkind::DatastoreMigration)?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            .structured(Subkind::DatastoreMigration)?;
        tx.execute_batch(MIGRATIONS[version as usize])
            .structured_msg(
                Subkind::DatastoreMigration,
                format!("Migration {} failed", version + 1),
            )?;
        after(version + 1, &tx)
            .map_err(|e| e.context(format!("Migration {} failed", version + 1)))?;
        tx.execute("DELETE FROM schema_version", [])
            .structured(Subkind::DatastoreMigration)?;
        tx.execute(
            "INSERT INTO schema_version (version) VALUES (?1)",
            [version + 1],
        )
        .structured(Subkind::DatastoreMigration)?;
        tx.commit().structured(Subkind::DatastoreMigration)?;
        version += 1;
    }
    Ok(())
}
