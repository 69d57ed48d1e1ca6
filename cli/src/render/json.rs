//! The JSON view: one object per record, one per line, stable field names
//! (keys sorted; "type" says which record). Pure: a function of one event.

use serde_json::{Value, json};
use trident_host::KebabName;

use super::error::ErrorView;
use super::event::Event;
use super::format;
use crate::cursor;

/// The JSON line of an event (no trailing newline).
pub fn line(event: &Event) -> String {
    value(event).to_string()
}

fn opt_time(t: Option<std::time::SystemTime>) -> Value {
    t.map_or(Value::Null, |t| Value::String(format::timestamp(t)))
}

fn opt_cursor(c: Option<&trident_proto::v1::Cursor>) -> Value {
    c.map_or(Value::Null, |c| Value::String(cursor::format(c)))
}

/// The JSON value of an event.
pub fn value(event: &Event) -> Value {
    let cursor = opt_cursor(event.cursor());
    match event {
        Event::Started {
            timestamp,
            operation_id,
            trace_id,
            kind,
            rpc,
            ..
        } => json!({
            "type": "started", "cursor": cursor, "timestamp": opt_time(*timestamp),
            "operation_id": operation_id, "trace_id": trace_id,
            "kind": kind.kebab_name(), "rpc": rpc,
        }),
        Event::Log(log) => json!({
            "type": "log", "cursor": cursor, "timestamp": opt_time(log.timestamp),
            "level": format::level(log.level), "target": log.target, "message": log.message,
        }),
        Event::Progress {
            timestamp, record, ..
        } => json!({
            "type": "progress", "cursor": cursor, "timestamp": opt_time(*timestamp),
            "operation_id": record.operation_id, "phase_id": record.phase_id,
            "parent_phase_id": record.parent_phase_id, "name": record.name,
            "unit": format::unit(record.unit()), "current": record.current,
            "total": record.total, "state": format::phase_state(record.state()),
        }),
        Event::Overall {
            timestamp, record, ..
        } => json!({
            "type": "overall", "cursor": cursor, "timestamp": opt_time(*timestamp),
            "operation_id": record.operation_id,
            "bytes_total": record.bytes_total, "bytes_done": record.bytes_done,
            "steps_done": record.steps_done, "steps_planned": record.steps_planned,
            "bytes_per_second": record.bytes_per_second,
            "eta_seconds": seconds(record.eta.as_ref()),
            "elapsed_seconds": seconds(record.elapsed.as_ref()),
            "current_step": record.current_step, "finished": record.finished,
        }),
        Event::Error { report, .. } => json!({
            "type": "error", "cursor": cursor, "error": ErrorView::from(report.as_ref()),
        }),
        Event::Completed {
            timestamp,
            status,
            reboot_status,
            reboot_action,
            error,
            ..
        } => {
            let mut line = json!({
                "type": "completed", "cursor": cursor, "timestamp": opt_time(*timestamp),
                "status": format::status(*status), "reboot_status": format::reboot_status(*reboot_status),
                "error": error.as_deref().map(ErrorView::from),
            });
            // Only when the daemon said it: older lines stay as they were.
            if let Some(action) = reboot_action {
                line["reboot_action"] = json!(format::reboot_action(*action));
            }
            line
        }
        Event::Gap(gap) => json!({
            "type": "gap",
            "first_missing": opt_cursor(gap.first_missing.as_ref()),
            "last_missing": opt_cursor(gap.last_missing.as_ref()),
            "count": gap.count,
            "reason": gap_reason(gap.reason()),
        }),
        Event::RunChange(change) => json!({
            "type": "run_change", "previous_run_id": change.previous_run_id,
            "current_run_id": change.current_run_id,
        }),
        Event::Drops { total } => json!({ "type": "drops", "total": total }),
        Event::StreamDrops { logs } => json!({ "type": "stream-drops", "logs": logs }),
        Event::Reconnecting { attempt, reason } => json!({
            "type": "reconnecting", "attempt": attempt, "reason": reason,
        }),
        Event::Resumed { after } => json!({
            "type": "resumed", "after": opt_cursor(after.as_ref()),
        }),
    }
}

/// A protobuf duration in seconds (null when absent).
fn seconds(d: Option<&prost_types::Duration>) -> Value {
    d.and_then(|d| std::time::Duration::try_from(*d).ok())
        .map_or(Value::Null, |d| json!(d.as_secs_f64()))
}

fn gap_reason(reason: trident_proto::v1::GapReason) -> &'static str {
    match reason {
        trident_proto::v1::GapReason::SubscriberLagged => "subscriber-lagged",
        trident_proto::v1::GapReason::Evicted => "evicted",
        trident_proto::v1::GapReason::PreviousRun => "previous-run",
        trident_proto::v1::GapReason::Unspecified => "unspecified",
    }
}
