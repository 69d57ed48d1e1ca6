//! One view of a structured error, built from a `TridentError` (servicing
//! streams, GetLastError of v1preview) or an `ErrorReport` (the bus), and
//! printed as YAML/JSON (`get last-error`, `-e FILE`) or as a text block.

use serde::Serialize;
use trident_host::KebabName;
use trident_proto::v1::{ErrorContext, ErrorReport, LogRecord, TridentError};

use super::event::system_time;
use super::format;

/// Upstream keys (message, error, category, location, cause) first, ours after.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ErrorView {
    pub message: String,
    /// The subkind.
    pub error: String,
    pub category: String,
    pub location: String,
    /// The innermost cause, like upstream; the whole chain is in `causes`.
    pub cause: Option<String>,
    pub causes: Vec<String>,
    pub context: Vec<ContextView>,
    pub operation_id: Option<String>,
    pub trace_id: Option<String>,
    pub timestamp: Option<String>,
    pub recent_logs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextView {
    pub message: String,
    pub location: String,
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn contexts(context: &[ErrorContext]) -> Vec<ContextView> {
    context
        .iter()
        .map(|c| ContextView {
            message: c.message.clone(),
            location: format::location(c.location.as_ref()),
        })
        .collect()
}

/// "2026-11-21T13:00:00.000Z info target: message".
pub fn log_text(log: &LogRecord, at: Option<&prost_types::Timestamp>) -> String {
    let when = system_time(at).map(|t| format!("{} ", format::timestamp(t)));
    format!(
        "{}{} {}: {}",
        when.unwrap_or_default(),
        format::level(log.level()),
        log.target,
        log.message
    )
}

impl From<&TridentError> for ErrorView {
    fn from(e: &TridentError) -> Self {
        let message = if e.error_message.is_empty() {
            e.message.clone()
        } else {
            e.error_message.clone()
        };
        ErrorView {
            message,
            error: e.subkind.clone(),
            category: e.kind().kebab_name().to_string(),
            location: format::location(e.location.as_ref()),
            cause: e.causes.last().cloned(),
            causes: e.causes.clone(),
            context: contexts(&e.context),
            operation_id: non_empty(&e.operation_id),
            trace_id: non_empty(&e.trace_id),
            timestamp: system_time(e.timestamp.as_ref()).map(format::timestamp),
            recent_logs: Vec::new(),
        }
    }
}

impl From<&ErrorReport> for ErrorView {
    fn from(e: &ErrorReport) -> Self {
        ErrorView {
            message: e.message.clone(),
            error: e.subkind.clone(),
            category: e.category().kebab_name().to_string(),
            location: format::location(e.location.as_ref()),
            cause: e.causes.last().cloned(),
            causes: e.causes.clone(),
            context: contexts(&e.context),
            operation_id: non_empty(&e.operation_id),
            trace_id: non_empty(&e.trace_id),
            timestamp: system_time(e.timestamp.as_ref()).map(format::timestamp),
            recent_logs: e.recent_logs.iter().map(|l| log_text(l, None)).collect(),
        }
    }
}

impl ErrorView {
    /// The error as indented text lines (category, subkind, message,
    /// location, context chain, causes, ids).
    pub fn text_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "error: {} ({}/{})",
            self.message, self.category, self.error
        )];
        if !self.location.is_empty() {
            lines.push(format!("  at {}", self.location));
        }
        for c in &self.context {
            if c.location.is_empty() {
                lines.push(format!("  while: {}", c.message));
            } else {
                lines.push(format!("  while: {} (at {})", c.message, c.location));
            }
        }
        for cause in &self.causes {
            lines.push(format!("  caused by: {cause}"));
        }
        if let Some(op) = &self.operation_id {
            let trace = self
                .trace_id
                .as_deref()
                .map(|t| format!(", trace {t}"))
                .unwrap_or_default();
            lines.push(format!("  operation {op}{trace}"));
        }
        lines
    }
}
