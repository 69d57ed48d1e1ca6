//! [`ErrorRecord`] on the wire: `trident.v1.TridentError` (servicing
//! streams, GetLastError of v1preview) and `trident.v1.ErrorReport` (the
//! bus). Each conversion destructures every field of its source, so a field
//! added on either side is a compile error here until it is mapped.

use trident_proto::v1;

use super::{Category, ContextEntry, ErrorRecord, SourceLocation};
use crate::convert::{InvalidMessage, host_enum};
use crate::time_util;

impl From<&SourceLocation> for v1::FileLocation {
    fn from(location: &SourceLocation) -> Self {
        let SourceLocation { file, line } = location;
        v1::FileLocation {
            path: file.clone(),
            line: *line,
        }
    }
}

impl From<&v1::FileLocation> for SourceLocation {
    fn from(location: &v1::FileLocation) -> Self {
        let v1::FileLocation { path, line } = location;
        SourceLocation {
            file: path.clone(),
            line: *line,
        }
    }
}

impl From<&ContextEntry> for v1::ErrorContext {
    fn from(entry: &ContextEntry) -> Self {
        let ContextEntry { message, location } = entry;
        v1::ErrorContext {
            message: message.clone(),
            location: Some(location.into()),
        }
    }
}

impl TryFrom<&v1::ErrorContext> for ContextEntry {
    type Error = InvalidMessage;
    fn try_from(entry: &v1::ErrorContext) -> Result<Self, InvalidMessage> {
        let v1::ErrorContext { message, location } = entry;
        Ok(ContextEntry {
            message: message.clone(),
            location: required_location("context.location", location.as_ref())?,
        })
    }
}

impl From<&ErrorRecord> for v1::TridentError {
    fn from(record: &ErrorRecord) -> Self {
        let ErrorRecord {
            category,
            subkind,
            message,
            location,
            context,
            causes,
            operation_id,
            trace_id,
            timestamp,
        } = record;
        v1::TridentError {
            kind: v1::TridentErrorKind::from(*category) as i32,
            subkind: subkind.clone(),
            message: record.report(),
            error_message: message.clone(),
            location: Some(location.into()),
            context: context.iter().map(Into::into).collect(),
            causes: causes.clone(),
            operation_id: operation_id.clone().unwrap_or_default(),
            trace_id: trace_id.clone().unwrap_or_default(),
            timestamp: timestamp.as_deref().and_then(time_util::parse_to_proto),
        }
    }
}

/// The bus record (`errors::report`); recent logs and cursor are filled
/// by the bus.
impl From<&ErrorRecord> for v1::ErrorReport {
    fn from(record: &ErrorRecord) -> Self {
        let ErrorRecord {
            category,
            subkind,
            message,
            location,
            context,
            causes,
            operation_id,
            trace_id,
            timestamp,
        } = record;
        v1::ErrorReport {
            category: v1::TridentErrorKind::from(*category) as i32,
            subkind: subkind.clone(),
            message: message.clone(),
            location: Some(location.into()),
            context: context.iter().map(Into::into).collect(),
            causes: causes.clone(),
            operation_id: operation_id.clone().unwrap_or_default(),
            trace_id: trace_id.clone().unwrap_or_default(),
            timestamp: timestamp.as_deref().and_then(time_util::parse_to_proto),
            recent_logs: Vec::new(),
            report: record.report(),
        }
    }
}

/// Rebuilds a record from the wire form. The category must be one of the
/// seven (not UNSPECIFIED, not an unknown number) and the location set.
impl TryFrom<&v1::TridentError> for ErrorRecord {
    type Error = InvalidMessage;
    fn try_from(err: &v1::TridentError) -> Result<Self, InvalidMessage> {
        let v1::TridentError {
            kind,
            subkind,
            // The report is derived from the other fields.
            message: report,
            error_message,
            location,
            context,
            causes,
            operation_id,
            trace_id,
            timestamp,
        } = err;
        Ok(ErrorRecord {
            category: host_enum::<v1::TridentErrorKind, Category>("kind", *kind)?,
            subkind: subkind.clone(),
            // An upstream server fills only `message`.
            message: if error_message.is_empty() {
                report.clone()
            } else {
                error_message.clone()
            },
            location: required_location("location", location.as_ref())?,
            context: context
                .iter()
                .map(ContextEntry::try_from)
                .collect::<Result<_, _>>()?,
            causes: causes.clone(),
            operation_id: non_empty(operation_id),
            trace_id: non_empty(trace_id),
            timestamp: timestamp
                .as_ref()
                .map(|t| {
                    time_util::proto_to_rfc3339(t)
                        .ok_or(InvalidMessage::OutOfRange { field: "timestamp" })
                })
                .transpose()?,
        })
    }
}

fn required_location(
    field: &'static str,
    location: Option<&v1::FileLocation>,
) -> Result<SourceLocation, InvalidMessage> {
    location
        .map(SourceLocation::from)
        .ok_or(InvalidMessage::Missing { field })
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

impl ErrorRecord {
    /// Thin wrapper of `v1::TridentError::from`, kept for the daemon's
    /// handlers and runner (owned by the daemon's restructuring).
    pub fn to_proto(&self) -> v1::TridentError {
        self.into()
    }

    /// Thin wrapper of `v1::ErrorReport::from`, kept for the daemon's runner.
    pub fn to_report(&self) -> v1::ErrorReport {
        self.into()
    }
}
