//! A redacted copy of the datastore, for a diagnose bundle. Copying the
//! file's bytes would ship every secret of every Host Status row, and the
//! WAL and free pages hold old row versions too. So the copy is made by
//! SQLite itself (`VACUUM INTO`: one consistent snapshot, WAL content
//! included, no free pages) into a private temporary directory; its rows
//! are redacted there (never the live file), and a second `VACUUM` with
//! `secure_delete` drops the pages that held the original text. Upstream's
//! table `hoststatus` (YAML rows) is redacted the same way.

use std::path::Path;

use rusqlite::{Connection, params};
use serde_json::Value;

use super::Datastore;
use crate::error::{ContextExt, ResultExt, Subkind, TridentError};
use crate::redact::Secrets;
use crate::redact::document::{Scope, redact_value};
use crate::status::HostStatus;

impl Datastore {
    /// The bytes of a redacted copy of this datastore (a self-contained
    /// SQLite file in rollback-journal mode: no `-wal` to ship with it).
    pub fn export_redacted(&self) -> Result<Vec<u8>, TridentError> {
        let dir = tempfile::Builder::new()
            .prefix("trident-datastore-export")
            .tempdir()
            .structured(Subkind::DatastoreQuery)?;
        let copy = dir.path().join("datastore.sqlite");
        let copy_name = copy.to_str().ok_or_else(|| {
            TridentError::new(
                Subkind::DatastoreQuery,
                format!("temporary path {} is not UTF-8", copy.display()),
            )
        })?;
        self.conn
            .execute("VACUUM INTO ?1", [copy_name])
            .structured(Subkind::DatastoreQuery)
            .with_context(|| format!("Copying datastore {}", self.path.display()))?;
        redact_copy(&copy)?;
        std::fs::read(&copy).structured(Subkind::DatastoreQuery)
    }
}

/// Redacts every Host Status row and operation error of the copy at `path`.
fn redact_copy(path: &Path) -> Result<(), TridentError> {
    let mut conn = Connection::open(path).structured(Subkind::DatastoreQuery)?;
    conn.pragma_update(None, "journal_mode", "DELETE")
        .structured(Subkind::DatastoreQuery)?;
    conn.pragma_update(None, "secure_delete", "ON")
        .structured(Subkind::DatastoreQuery)?;
    let ours = super::schema::current_version(&conn)? > 0;
    let theirs = super::upstream::has_table(&conn)?;
    if !ours && !theirs {
        return Ok(());
    }
    let statuses = if ours {
        text_column(&conn, "SELECT id, status_json FROM host_status")?
    } else {
        Vec::new()
    };
    let errors = if ours {
        text_column(
            &conn,
            "SELECT rowid, error_json FROM operations WHERE error_json IS NOT NULL",
        )?
    } else {
        Vec::new()
    };
    let upstream_rows = if theirs {
        text_column(&conn, "SELECT id, contents FROM hoststatus")?
    } else {
        Vec::new()
    };
    // Every row's secrets redact every row: an old secret may sit in a
    // newer row's last error.
    let mut secrets = Secrets::default();
    for (_, json) in &statuses {
        if let Ok(status) = HostStatus::from_json(json) {
            secrets.extend(&status.secrets());
        }
    }
    for (_, yaml) in &upstream_rows {
        if let Ok(decoded) = super::upstream::format::decode(yaml) {
            secrets.extend(&decoded.status.secrets());
        }
    }
    let tx = conn.transaction().structured(Subkind::DatastoreQuery)?;
    for (id, yaml) in &upstream_rows {
        tx.execute(
            "UPDATE hoststatus SET contents = ?1 WHERE id = ?2",
            params![redact_yaml_text(yaml, &secrets), id],
        )
        .structured(Subkind::DatastoreQuery)?;
    }
    for (id, json) in &statuses {
        tx.execute(
            "UPDATE host_status SET status_json = ?1 WHERE id = ?2",
            params![redact_json_text(json, &secrets), id],
        )
        .structured(Subkind::DatastoreQuery)?;
    }
    for (rowid, json) in &errors {
        tx.execute(
            "UPDATE operations SET error_json = ?1 WHERE rowid = ?2",
            params![redact_json_text(json, &secrets), rowid],
        )
        .structured(Subkind::DatastoreQuery)?;
    }
    tx.commit().structured(Subkind::DatastoreQuery)?;
    conn.execute_batch("VACUUM")
        .structured(Subkind::DatastoreQuery)
}

fn text_column(conn: &Connection, sql: &str) -> Result<Vec<(i64, String)>, TridentError> {
    let mut stmt = conn.prepare(sql).structured(Subkind::DatastoreQuery)?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .structured(Subkind::DatastoreQuery)?;
    rows.collect::<Result<Vec<_>, _>>()
        .structured(Subkind::DatastoreQuery)
}

/// A YAML row redacted as a document (free text only, as
/// [`redact_json_text`]); text that is not YAML is redacted as text.
fn redact_yaml_text(text: &str, secrets: &Secrets) -> String {
    match serde_saphyr::from_str::<Value>(text) {
        Ok(mut value) => {
            redact_value(&mut value, secrets, Scope::FreeText);
            serde_saphyr::to_string(&value).unwrap_or_else(|_| secrets.redact(text).into_owned())
        }
        Err(_) => secrets.redact(text).into_owned(),
    }
}

/// A JSON document redacted as a document (free text only: the copy must
/// still load); text that is not JSON is redacted as text.
fn redact_json_text(text: &str, secrets: &Secrets) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(mut value) => {
            redact_value(&mut value, secrets, Scope::FreeText);
            value.to_string()
        }
        Err(_) => secrets.redact(text).into_owned(),
    }
}
