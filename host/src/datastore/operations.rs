//! Operation history: one row per servicing operation.

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::Datastore;
use crate::error::{ErrorRecord, ResultExt, Subkind, TridentError};
use crate::time_util;

/// Outcome of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationResult {
    Running,
    Success,
    Failure,
    /// The daemon stopped (crash, SIGKILL) before the operation completed.
    Interrupted,
}

impl OperationResult {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Interrupted => "interrupted",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "running" => Self::Running,
            "success" => Self::Success,
            "failure" => Self::Failure,
            _ => Self::Interrupted,
        }
    }
}

/// How an operation ended.
#[derive(Debug, Clone)]
pub struct OperationEnd {
    pub result: OperationResult,
    pub error: Option<ErrorRecord>,
}

/// One row of the operation history.
#[derive(Debug, Clone)]
pub struct OperationRow {
    pub id: String,
    /// Servicing kind, kebab-case (e.g. `ab-update`).
    pub kind: String,
    /// RPC that started it (e.g. `UpdateStage`).
    pub rpc: String,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub result: OperationResult,
    pub trace_id: String,
    /// Span id (16 hex) of the operation's root span; `None` for operations
    /// recorded before schema 2.
    pub root_span_id: Option<String>,
    pub error: Option<ErrorRecord>,
}

/// The columns of [`from_row`]; a schema-1 file (read-only opens of an old
/// datastore) has no root span ids.
fn columns(schema_version: u32) -> &'static str {
    if schema_version >= 2 {
        "id, kind, rpc, started_at, ended_at, result, trace_id, error_json, root_span_id"
    } else {
        "id, kind, rpc, started_at, ended_at, result, trace_id, error_json, NULL"
    }
}

/// What [`Datastore::operation_started`] records.
#[derive(Debug, Clone, Copy)]
pub struct OperationStart<'a> {
    pub id: &'a str,
    /// Servicing kind, kebab-case.
    pub kind: &'a str,
    pub rpc: &'a str,
    pub trace_id: &'a str,
    /// Span id (16 hex) of the operation's root span.
    pub root_span_id: &'a str,
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<(OperationRow, Option<String>)> {
    Ok((
        OperationRow {
            id: r.get(0)?,
            kind: r.get(1)?,
            rpc: r.get(2)?,
            started_at: r.get(3)?,
            ended_at: r.get(4)?,
            result: OperationResult::parse(&r.get::<_, String>(5)?),
            trace_id: r.get(6)?,
            root_span_id: r.get(8)?,
            error: None,
        },
        r.get(7)?,
    ))
}

fn with_error(
    (mut row, json): (OperationRow, Option<String>),
) -> Result<OperationRow, TridentError> {
    if let Some(json) = json {
        row.error = Some(serde_json::from_str(&json).structured(Subkind::DatastoreQuery)?);
    }
    Ok(row)
}

pub(super) fn finish(
    tx: &Transaction<'_>,
    id: &str,
    end: &OperationEnd,
    now: &str,
) -> Result<(), TridentError> {
    let error_json = match &end.error {
        Some(e) => Some(serde_json::to_string(e).structured(Subkind::DatastoreQuery)?),
        None => None,
    };
    tx.execute(
        "UPDATE operations SET ended_at = ?2, result = ?3, error_json = ?4 WHERE id = ?1",
        params![id, now, end.result.as_str(), error_json],
    )
    .structured(Subkind::DatastoreQuery)?;
    Ok(())
}

impl Datastore {
    /// Records the start of an operation (result `running`).
    pub fn operation_started(&mut self, op: &OperationStart<'_>) -> Result<(), TridentError> {
        self.conn()
            .execute(
                "INSERT INTO operations (id, kind, rpc, started_at, result, trace_id, root_span_id) \
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6)",
                params![
                    op.id,
                    op.kind,
                    op.rpc,
                    time_util::now_rfc3339(),
                    op.trace_id,
                    op.root_span_id
                ],
            )
            .structured(Subkind::DatastoreQuery)?;
        self.verify()
    }

    /// Operation history, newest first.
    pub fn operations(&self, limit: u32) -> Result<Vec<OperationRow>, TridentError> {
        if self.schema_version()? == 0 {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {} FROM operations ORDER BY started_at DESC, rowid DESC LIMIT ?1",
            columns(self.schema_version()?)
        );
        let mut stmt = self
            .conn()
            .prepare(&sql)
            .structured(Subkind::DatastoreQuery)?;
        let rows = stmt
            .query_map([limit], from_row)
            .structured(Subkind::DatastoreQuery)?;
        rows.map(|r| r.structured(Subkind::DatastoreQuery).and_then(with_error))
            .collect()
    }

    pub fn operation(&self, id: &str) -> Result<Option<OperationRow>, TridentError> {
        let sql = format!(
            "SELECT {} FROM operations WHERE id = ?1",
            columns(self.schema_version()?)
        );
        let row = self
            .conn()
            .query_row(&sql, [id], from_row)
            .optional()
            .structured(Subkind::DatastoreQuery)?;
        row.map(with_error).transpose()
    }

    /// The operation that recorded the current Host Status (the newest
    /// status row's), e.g. the finalize a commit after the reboot settles.
    pub fn status_operation(&self) -> Result<Option<OperationRow>, TridentError> {
        if self.schema_version()? == 0 {
            return Ok(None);
        }
        let id: Option<Option<String>> = self
            .conn()
            .query_row(
                "SELECT operation_id FROM host_status ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()
            .structured(Subkind::DatastoreQuery)?;
        match id.flatten() {
            Some(id) => self.operation(&id),
            None => Ok(None),
        }
    }

    /// Marks every `running` operation as interrupted and records the
    /// interruption as the last error, all in one transaction. The
    /// servicing state stays the last committed one. Called at daemon start
    /// (no operation can be running then).
    pub fn recover_interrupted(&mut self) -> Result<Vec<OperationRow>, TridentError> {
        let running: Vec<OperationRow> = {
            let sql = format!(
                "SELECT {} FROM operations WHERE result = 'running'",
                columns(self.schema_version()?)
            );
            let mut stmt = self
                .conn()
                .prepare(&sql)
                .structured(Subkind::DatastoreQuery)?;
            let rows = stmt
                .query_map([], from_row)
                .structured(Subkind::DatastoreQuery)?;
            rows.map(|r| r.structured(Subkind::DatastoreQuery).and_then(with_error))
                .collect::<Result<_, _>>()?
        };
        if running.is_empty() {
            return Ok(running);
        }
        let mut status = self.host_status()?;
        let now = time_util::now_rfc3339();
        let tx = self
            .conn_mut()
            .transaction()
            .structured(Subkind::DatastoreQuery)?;
        for op in &running {
            let error = TridentError::new(
                Subkind::Interrupted,
                format!(
                    "Operation {} ({}) was interrupted: the daemon stopped before it completed",
                    op.id, op.rpc
                ),
            )
            .record()
            .stamped(&op.id, &op.trace_id);
            finish(
                &tx,
                &op.id,
                &OperationEnd {
                    result: OperationResult::Interrupted,
                    error: Some(error.clone()),
                },
                &now,
            )?;
            status.last_error = Some(error);
        }
        let last_id = running.last().map(|op| op.id.as_str());
        super::insert_status(&tx, &status, last_id, &now)?;
        tx.commit().structured(Subkind::DatastoreQuery)?;
        Ok(running)
    }
}
