//! Structured error reports on the bus.
//!
//! ```no_run
//! use trident_proto::v1::{ErrorReport, TridentErrorKind};
//! trident_telemetry::errors::report(ErrorReport {
//!     category: TridentErrorKind::ServicingError as i32,
//!     subkind: "write-image".into(),
//!     message: "writing root-a failed".into(),
//!     ..ErrorReport::default()
//! });
//! ```

use trident_proto::v1::{Cursor, ErrorReport, TridentError};

use crate::bus::Bus;

/// Publishes an error report on the bus of the current dispatcher. The bus
/// fills the timestamp, the operation and trace ids from the current span
/// when empty, and `recent_logs` with the operation's last log lines; the
/// report becomes the one `GetLastError` returns. Returns its cursor
/// (`None` when no bus layer is installed).
pub fn report(report: ErrorReport) -> Option<Cursor> {
    Bus::current().map(|bus| bus.report_error(report))
}

/// An error report carrying everything a `TridentError` says.
pub fn report_from(error: &TridentError) -> ErrorReport {
    ErrorReport {
        category: error.kind,
        subkind: error.subkind.clone(),
        message: error.error_message.clone(),
        location: error.location.clone(),
        context: error.context.clone(),
        causes: error.causes.clone(),
        operation_id: error.operation_id.clone(),
        trace_id: error.trace_id.clone(),
        timestamp: error.timestamp,
        recent_logs: Vec::new(),
        report: error.message.clone(),
    }
}
