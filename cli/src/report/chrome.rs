//! Chrome trace-event JSON ("JSON Object Format") of an operation's spans,
//! loadable in Perfetto or chrome://tracing: one complete event (`"ph":
//! "X"`) per span with `ts`/`dur` in microseconds, all on one pid/tid so
//! the viewer nests children inside their parent by time, and the span's
//! fields, ids, boot and status in `args`. A trace that crosses a reboot
//! (an operation and the commit that settled it) gets one more complete
//! event per reboot, `reboot`, spanning the time without records, with both
//! boot ids.

use serde_json::{Map, Value, json};

use super::spans::{Span, horizon, reboots};

/// The process id every event carries (one operation, one track).
const PID: u32 = 1;
/// The thread id every event carries.
const TID: u32 = 1;

/// The trace document for `spans` of `operation_id`. A span without a
/// close record ends at the latest time seen, with `args.status = running`.
pub fn trace(operation_id: &str, spans: &[Span]) -> Value {
    let until = horizon(spans);
    let mut events = vec![
        json!({ "name": "process_name", "ph": "M", "pid": PID, "tid": TID,
                "args": { "name": format!("tridentd operation {operation_id}") } }),
        json!({ "name": "thread_name", "ph": "M", "pid": PID, "tid": TID,
                "args": { "name": "servicing" } }),
    ];
    events.extend(spans.iter().map(|span| complete_event(span, until)));
    events.extend(reboots(spans).iter().map(|reboot| {
        json!({
            "name": "reboot",
            "cat": "reboot",
            "ph": "X",
            "ts": reboot.from_us,
            "dur": reboot.gap_us(),
            "pid": PID,
            "tid": TID,
            "args": { "from_boot": reboot.from_boot, "to_boot": reboot.to_boot },
        })
    }));
    json!({ "traceEvents": events, "displayTimeUnit": "ms",
            "otherData": { "operation_id": operation_id } })
}

fn complete_event(span: &Span, until: u64) -> Value {
    let mut args = Map::new();
    for (name, value) in &span.fields {
        args.insert(name.clone(), Value::String(value.clone()));
    }
    args.insert("span_id".into(), json!(span.span_id));
    args.insert("parent_span_id".into(), json!(span.parent_span_id));
    args.insert("target".into(), json!(span.target));
    args.insert("status".into(), json!(span.status));
    if !span.boot_id.is_empty() {
        args.insert("boot_id".into(), json!(span.boot_id));
    }
    json!({
        "name": span.name,
        "cat": span.target,
        "ph": "X",
        "ts": span.start_us,
        "dur": span.end_or(until) - span.start_us,
        "pid": PID,
        "tid": TID,
        "args": args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(name: &str, id: &str, parent: &str, start: u64, end: Option<u64>) -> Span {
        Span {
            name: name.into(),
            span_id: id.into(),
            parent_span_id: parent.into(),
            target: "tridentd".into(),
            start_us: start,
            end_us: end,
            status: if end.is_some() { "ok" } else { "running" },
            fields: vec![("kind".into(), "clean-install".into())],
            depth: usize::from(!parent.is_empty()),
            boot_id: String::new(),
        }
    }

    #[test]
    fn spans_become_complete_events_with_fields_and_an_open_one_ends_at_the_horizon() {
        let spans = [
            span("servicing_operation", "a", "", 1_000, Some(9_000)),
            span("phase write", "b", "a", 2_000, Some(5_000)),
            span("phase verify", "c", "a", 5_000, None),
        ];
        let doc = trace("op-1", &spans);
        let events: Vec<&Value> = doc["traceEvents"]
            .as_array()
            .expect("traceEvents is an array")
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(events.len(), 3);
        assert_eq!(events[1]["ts"], 2_000);
        assert_eq!(events[1]["dur"], 3_000);
        assert_eq!(events[1]["args"]["kind"], "clean-install");
        assert_eq!(events[1]["args"]["parent_span_id"], "a");
        assert_eq!(events[2]["dur"], 4_000);
        assert_eq!(events[2]["args"]["status"], "running");
    }

    #[test]
    fn a_trace_across_a_reboot_has_a_reboot_event_with_both_boots() {
        let mut spans = [
            span("servicing_operation", "a", "", 1_000, Some(9_000)),
            span("phase finalize", "b", "a", 2_000, Some(8_000)),
            span("servicing_operation", "c", "a", 50_000, Some(60_000)),
        ];
        for (span, boot) in spans.iter_mut().zip(["boot-a", "boot-a", "boot-b"]) {
            span.boot_id = boot.into();
        }
        let doc = trace("op-1", &spans);
        let events = doc["traceEvents"]
            .as_array()
            .expect("traceEvents is an array");
        let reboot: Vec<&Value> = events.iter().filter(|e| e["name"] == "reboot").collect();
        assert_eq!(reboot.len(), 1);
        assert_eq!(reboot[0]["ts"], 9_000);
        assert_eq!(reboot[0]["dur"], 41_000);
        assert_eq!(reboot[0]["args"]["from_boot"], "boot-a");
        assert_eq!(reboot[0]["args"]["to_boot"], "boot-b");
        let commit = events
            .iter()
            .find(|e| e["args"]["span_id"] == "c")
            .expect("commit span");
        assert_eq!(commit["args"]["boot_id"], "boot-b");
    }
}
