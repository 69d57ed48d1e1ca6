//! The persistable form of an error ([`ErrorRecord`]): stored as the Host
//! Status `lastError`, sent as `trident.v1.TridentError` / `ErrorReport`
//! (conversions in `wire.rs`), printed by `trident get last-error`.

use std::fmt;
use std::panic::Location as CallerLocation;

use serde::{Deserialize, Serialize};

use super::Category;
use crate::time_util;

/// `file:line` in the daemon's source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    pub file: String,
    pub line: u32,
}

impl SourceLocation {
    pub(crate) fn from_caller(caller: &'static CallerLocation<'static>) -> Self {
        Self {
            file: caller.file().to_owned(),
            line: caller.line(),
        }
    }
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One context message with the place that added it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextEntry {
    pub message: String,
    pub location: SourceLocation,
}

/// A structured error as data (no live cause objects).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorRecord {
    pub category: Category,
    /// Kebab-case subkind name.
    pub subkind: String,
    /// The short message.
    pub message: String,
    pub location: SourceLocation,
    /// Outermost first.
    #[serde(default)]
    pub context: Vec<ContextEntry>,
    /// Outermost first.
    #[serde(default)]
    pub causes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl ErrorRecord {
    /// Full human-readable report, e.g.
    /// `Failed to stage update: Image hash does not match (src/x.rs:10)
    ///   caused by: ...`.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for ctx in &self.context {
            out.push_str(&format!("{} (at {})\n  ", ctx.message, ctx.location));
        }
        out.push_str(&format!(
            "[{}/{}] {} (at {})",
            self.category, self.subkind, self.message, self.location
        ));
        for cause in &self.causes {
            out.push_str(&format!("\n  caused by: {cause}"));
        }
        out
    }

    /// Stamps the operation, trace and time the error belongs to.
    pub fn stamped(mut self, operation_id: &str, trace_id: &str) -> Self {
        if !operation_id.is_empty() {
            self.operation_id = Some(operation_id.to_owned());
        }
        if !trace_id.is_empty() {
            self.trace_id = Some(trace_id.to_owned());
        }
        self.timestamp = Some(time_util::now_rfc3339());
        self
    }
}

/// The upstream `get last-error` YAML shape: keys `message`, `error`
/// (subkind), `category`, `location`, `cause`, followed by our additions
/// (`context`, `causes`, `operationId`, `traceId`, `timestamp`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LastErrorYaml<'a> {
    message: &'a str,
    error: &'a str,
    category: Category,
    location: String,
    cause: Option<&'a str>,
    context: Vec<String>,
    causes: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    operation_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<&'a str>,
}

/// Renders the last error as `trident get last-error` prints it; `null`
/// when there is none.
pub fn last_error_yaml(record: Option<&ErrorRecord>) -> String {
    let Some(r) = record else {
        return "null\n".to_owned();
    };
    let doc = LastErrorYaml {
        message: &r.message,
        error: &r.subkind,
        category: r.category,
        location: r.location.to_string(),
        cause: r.causes.first().map(String::as_str),
        context: r
            .context
            .iter()
            .map(|c| format!("{} ({})", c.message, c.location))
            .collect(),
        causes: &r.causes,
        operation_id: r.operation_id.as_deref(),
        trace_id: r.trace_id.as_deref(),
        timestamp: r.timestamp.as_deref(),
    };
    // Serializing plain strings cannot fail; fall back to the report if it does.
    serde_saphyr::to_string(&doc).unwrap_or_else(|_| r.report())
}
