//! Operations a previous daemon run never completed (it was killed or lost
//! power in the middle). When the bus opens on the journal it publishes,
//! for each, the completed record (failed, with an end time) and an
//! `interrupted` error report, so `ListOperations`, `GetLastError`,
//! `trident get last-error`, a diagnose bundle and the journal itself all
//! say the operation failed, when it started and the last phase it reached.
//! The datastore marks the same operations (`recover_interrupted`) for the
//! StatusService view.

use std::sync::Arc;

use trident_proto::v1::{
    ErrorReport, FileLocation, OperationEvent, OperationRecord, OperationSummary, RebootStatus,
    Record, RecordKind, StatusCode, TridentError, TridentErrorKind, record,
};

use crate::bus::ring::Entry;
use crate::bus::{Bus, Effect};
use crate::journal::InterruptedOperation;

/// Subkind of the error (the same as the datastore's `Interrupted`).
pub const INTERRUPTED_SUBKIND: &str = "interrupted";

/// Publishes the end of `op` and its error report on `bus`.
pub fn mark(bus: &Bus, op: &InterruptedOperation) {
    let summary = &op.summary;
    let short = "The operation was interrupted (daemon stopped before it completed)";
    let started = summary
        .started
        .as_ref()
        .map_or_else(|| "an unknown time".to_owned(), ToString::to_string);
    let message = format!(
        "{short}: operation {} ({}), started {started}, last phase reached: {}",
        summary.operation_id,
        summary.rpc,
        op.last_phase.as_deref().unwrap_or("none")
    );
    let location = FileLocation {
        path: file!().to_owned(),
        line: line!(),
    };
    let now = crate::record::now();
    let error = TridentError {
        kind: TridentErrorKind::InternalError as i32,
        subkind: INTERRUPTED_SUBKIND.to_owned(),
        // The full report, as `ErrorRecord::report` writes it.
        message: format!(
            "[internal/{INTERRUPTED_SUBKIND}] {message} (at {}:{})",
            location.path, location.line
        ),
        error_message: message.clone(),
        location: Some(location.clone()),
        operation_id: summary.operation_id.clone(),
        trace_id: summary.trace_id.clone(),
        timestamp: Some(now),
        ..TridentError::default()
    };
    publish_completed(bus, summary, error.clone());
    bus.report_error(ErrorReport {
        category: error.kind,
        subkind: error.subkind,
        message,
        location: Some(location),
        operation_id: error.operation_id,
        trace_id: error.trace_id,
        timestamp: Some(now),
        report: error.message,
        ..ErrorReport::default()
    });
}

/// The operation's completed record: failed, ended now.
fn publish_completed(bus: &Bus, summary: &OperationSummary, error: TridentError) {
    let record = OperationRecord {
        event: OperationEvent::Completed as i32,
        operation_id: summary.operation_id.clone(),
        kind: summary.kind,
        rpc: summary.rpc.clone(),
        result: StatusCode::Failure as i32,
        reboot_status: RebootStatus::Unspecified as i32,
        trace_id: summary.trace_id.clone(),
        error: Some(error),
        image_hash: None,
        servicing_kind: None,
        reboot_action: None,
        continues_operation_id: String::new(),
    };
    let update = OperationSummary {
        operation_id: summary.operation_id.clone(),
        running: false,
        result: StatusCode::Failure as i32,
        reboot_status: RebootStatus::Unspecified as i32,
        completed: Some(crate::record::now()),
        ..OperationSummary::default()
    };
    let record = Record {
        cursor: None,
        boot_id: String::new(),
        timestamp: update.completed,
        record: Some(record::Record::Operation(record)),
    };
    let entry = Entry {
        kind: RecordKind::Operation as u8,
        level: 0,
        operation: Some(Arc::from(summary.operation_id.as_str())),
        bytes: crate::record::encode(&record),
    };
    bus.publish(entry, Effect::Completed(update));
}
