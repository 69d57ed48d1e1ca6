//! Structured error reports for the bus, built from the wire error.
//!
//! Publish one with [`Bus::report_error`](crate::Bus::report_error) on the
//! bus the daemon passes around:
//!
//! ```no_run
//! use trident_proto::v1::{ErrorReport, TridentErrorKind};
//! # let bus = trident_telemetry::Bus::in_memory(Default::default());
//! bus.report_error(ErrorReport {
//!     category: TridentErrorKind::ServicingError as i32,
//!     subkind: "write-image".into(),
//!     message: "writing root-a failed".into(),
//!     ..ErrorReport::default()
//! });
//! ```

use trident_proto::v1::{ErrorReport, TridentError};

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
