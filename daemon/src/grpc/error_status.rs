//! The one place where the daemon's errors become gRPC statuses (errors
//! returned outside a servicing stream). Inside a stream, errors travel in
//! `Completed.error` (and, for clients that opted in, `error_report`).

use tonic::Status;
use trident_engine::locks::RunningOperation;
use trident_host::{Subkind, TridentError};

/// Category → code per the wire doc (invalid-input → INVALID_ARGUMENT,
/// internal → INTERNAL, execution-environment / initialization /
/// unsupported-configuration → FAILED_PRECONDITION, servicing /
/// health-checks → UNKNOWN); the message is the full report.
pub fn to_status(error: TridentError) -> Status {
    Status::new(error.category().grpc_code(), error.report())
}

/// A second servicing request while one runs: UNAVAILABLE, naming it.
pub fn busy(running: &RunningOperation) -> Status {
    Status::unavailable(format!(
        "busy: servicing operation {} ({}) is running; retry when it has completed",
        if running.operation_id.is_empty() {
            "(starting)"
        } else {
            running.operation_id.as_str()
        },
        running.rpc
    ))
}

/// An enum value in a request that this daemon does not know:
/// INVALID_ARGUMENT naming the field, never a silent default.
pub fn invalid_enum(field: &str, enum_name: &str, value: i32) -> Status {
    to_status(TridentError::new(
        Subkind::InvalidRequest,
        format!("{field}: {value} is not a known {enum_name} value"),
    ))
}
