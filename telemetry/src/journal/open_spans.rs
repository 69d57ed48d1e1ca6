//! The spans of a handed operation that are still open at the handover
//! (its root span and the phases around the handover): the handed journal
//! closes them where the handover stands, so the volume that boots shows
//! the operation's whole span tree, not spans running forever. Their real
//! close records stay in the journal of the volume left behind.

use std::collections::HashMap;
use std::time::SystemTime;

use trident_proto::v1::{Record, SpanEvent, SpanRecord, SpanStatus, record};

/// Close records, ended now, for the spans of `operation_id` that `records`
/// open and never close; `failed` marks them failed.
pub(super) fn closing(
    records: impl Iterator<Item = Record>,
    operation_id: &str,
    failed: bool,
) -> Vec<SpanRecord> {
    let mut open: Vec<SpanRecord> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for rec in records {
        let Some(record::Record::Span(span)) = rec.record else {
            continue;
        };
        if span.operation_id != operation_id {
            continue;
        }
        if span.event == SpanEvent::Opened as i32 {
            index.insert(span.span_id.clone(), open.len());
            open.push(span);
        } else if let Some(at) = index.remove(&span.span_id) {
            open[at].span_id.clear();
        }
    }
    let now = SystemTime::now();
    let status = if failed {
        SpanStatus::Error
    } else {
        SpanStatus::Ok
    };
    open.into_iter()
        .filter(|span| !span.span_id.is_empty())
        .rev()
        .map(|span| {
            let duration = span
                .start
                .and_then(|s| SystemTime::try_from(s).ok())
                .and_then(|s| now.duration_since(s).ok())
                .and_then(|d| prost_types::Duration::try_from(d).ok());
            SpanRecord {
                event: SpanEvent::Closed as i32,
                end: Some(crate::record::timestamp(now)),
                duration,
                status: status as i32,
                ..span
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: &str, event: SpanEvent, operation: &str) -> Record {
        Record {
            record: Some(record::Record::Span(SpanRecord {
                event: event as i32,
                span_id: id.into(),
                name: format!("span {id}"),
                operation_id: operation.into(),
                start: Some(crate::record::now()),
                ..SpanRecord::default()
            })),
            ..Record::default()
        }
    }

    #[test]
    fn the_operations_spans_left_open_are_closed_innermost_first() {
        let records = vec![
            span("root", SpanEvent::Opened, "op"),
            span("stage", SpanEvent::Opened, "op"),
            span("stage", SpanEvent::Closed, "op"),
            span("finalize", SpanEvent::Opened, "op"),
            span("other", SpanEvent::Opened, "another-op"),
        ];
        let closed = closing(records.into_iter(), "op", true);
        let ids: Vec<&str> = closed.iter().map(|s| s.span_id.as_str()).collect();
        assert_eq!(ids, ["finalize", "root"]);
        assert!(closed.iter().all(|s| s.event == SpanEvent::Closed as i32
            && s.status == SpanStatus::Error as i32
            && s.end.is_some()
            && s.name.starts_with("span ")));
    }
}
