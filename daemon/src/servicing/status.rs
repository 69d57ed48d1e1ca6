//! The one place where servicing errors become gRPC statuses (errors
//! returned outside a servicing stream). Inside a stream, errors travel in
//! `Completed.error` instead.

use tonic::Status;
use trident_host::TridentError;

use super::locks::RunningOperation;

/// Category → code per the wire doc (invalid-input → INVALID_ARGUMENT,
/// internal → INTERNAL, execution-environment / initialization /
/// unsupported-configuration → FAILED_PRECONDITION, servicing /
/// health-checks → UNKNOWN).
pub fn to_status(error: TridentError) -> Status {
    Status::from(error)
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
