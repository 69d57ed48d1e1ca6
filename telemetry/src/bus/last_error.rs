//! Error reports: published with their context, kept as the last error.

use std::sync::Arc;

use prost::Message;
use trident_proto::v1::{Cursor, ErrorReport, LogRecord, Record, RecordKind, record};

use super::ring::Entry;
use super::{Bus, Effect};

impl Bus {
    /// Publishes a structured error report: fills its timestamp, its
    /// operation and trace ids from the current span when empty, and its
    /// recent log lines from the ring; keeps it as the last error. Returns
    /// the report's cursor.
    pub fn report_error(&self, mut report: ErrorReport) -> Cursor {
        let timestamp = crate::record::now();
        report.timestamp.get_or_insert(timestamp);
        let report = self.fill_report(report);
        let operation: Option<Arc<str>> =
            (!report.operation_id.is_empty()).then(|| Arc::from(report.operation_id.as_str()));
        let record = Record {
            cursor: None,
            boot_id: String::new(),
            timestamp: Some(timestamp),
            record: Some(record::Record::Error(report.clone())),
        };
        let entry = Entry {
            kind: RecordKind::Error as u8,
            level: 0,
            operation,
            bytes: crate::record::encode(&record),
        };
        let seq = self.publish(entry, Effect::None);
        *self
            .inner
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(report);
        self.cursor(seq)
    }

    /// A report as `report_error` publishes it: timestamp, operation and
    /// trace ids (from the current span when empty), recent log lines.
    pub(crate) fn fill_report(&self, mut report: ErrorReport) -> ErrorReport {
        if (report.operation_id.is_empty() || report.trace_id.is_empty())
            && let Some(context) = crate::layer::current_context()
        {
            if report.operation_id.is_empty() {
                report.operation_id = context
                    .operation_id
                    .map(|o| o.to_string())
                    .unwrap_or_default();
            }
            if report.trace_id.is_empty() {
                report.trace_id = crate::ids::trace_id_hex(context.trace_id);
            }
        }
        if report.timestamp.is_none() {
            report.timestamp = Some(crate::record::now());
        }
        if report.recent_logs.is_empty() && !report.operation_id.is_empty() {
            report.recent_logs = self.recent_logs(&report.operation_id);
        }
        report
    }

    /// The last log records of an operation still in the ring, oldest first.
    fn recent_logs(&self, operation_id: &str) -> Vec<LogRecord> {
        let wanted = self.inner.config.error_recent_logs;
        let mut found = Vec::new();
        {
            let state = self.lock();
            state.ring.visit_newest_first(|_, entry| {
                if entry.kind == RecordKind::Log as u8
                    && entry.operation.as_deref() == Some(operation_id)
                {
                    found.push(entry.bytes.clone());
                }
                found.len() < wanted
            });
        }
        found
            .iter()
            .rev()
            .filter_map(|bytes| match Record::decode(bytes.clone()).ok()?.record {
                Some(record::Record::Log(log)) => Some(log),
                _ => None,
            })
            .collect()
    }

    /// The last error report of this run, or of an earlier one (journal).
    pub fn last_error(&self) -> Option<ErrorReport> {
        self.inner
            .last_error
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
