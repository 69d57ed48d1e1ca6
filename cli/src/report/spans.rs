//! The flat span list of one operation, from its open/close span records:
//! what the Chrome trace and the report's waterfall draw.

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use trident_proto::v1::{Field, SpanEvent, SpanRecord, SpanStatus, field};

/// One span with absolute times in microseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub name: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub target: String,
    pub start_us: u64,
    /// None while the span has no close record (still running, or lost).
    pub end_us: Option<u64>,
    /// "ok", "error" or "running".
    pub status: &'static str,
    /// The span's fields as text, in record order.
    pub fields: Vec<(String, String)>,
    /// Nesting depth (0 for a root).
    pub depth: usize,
    /// The host boot it ran in; empty when not known.
    pub boot_id: String,
}

impl Span {
    /// End, or `until` for a span still open.
    pub fn end_or(&self, until: u64) -> u64 {
        self.end_us.unwrap_or(until).max(self.start_us)
    }
}

/// Microseconds since the epoch of a protobuf timestamp.
pub fn micros(ts: Option<&prost_types::Timestamp>) -> Option<u64> {
    let time = SystemTime::try_from(*ts?).ok()?;
    let since = time.duration_since(UNIX_EPOCH).ok()?;
    u64::try_from(since.as_micros()).ok()
}

/// A field's value as text.
pub fn field_text(field: &Field) -> String {
    match &field.value {
        Some(field::Value::Text(t)) => t.clone(),
        Some(field::Value::Signed(v)) => v.to_string(),
        Some(field::Value::Unsigned(v)) => v.to_string(),
        Some(field::Value::Real(v)) => v.to_string(),
        Some(field::Value::Boolean(v)) => v.to_string(),
        None => String::new(),
    }
}

/// The spans of `records` in opening order, each with its depth. A span
/// whose open record was lost still appears from its close record.
pub fn spans(records: &[SpanRecord]) -> Vec<Span> {
    let mut order: Vec<Span> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for rec in records {
        let at = *index.entry(rec.span_id.clone()).or_insert_with(|| {
            order.push(Span {
                name: rec.name.clone(),
                span_id: rec.span_id.clone(),
                parent_span_id: rec.parent_span_id.clone(),
                target: rec.target.clone(),
                start_us: 0,
                end_us: None,
                status: "running",
                fields: Vec::new(),
                depth: 0,
                boot_id: String::new(),
            });
            order.len() - 1
        });
        let span = &mut order[at];
        if let Some(start) = micros(rec.start.as_ref()) {
            span.start_us = start;
        }
        for f in &rec.fields {
            if !span.fields.iter().any(|(name, _)| *name == f.name) {
                span.fields.push((f.name.clone(), field_text(f)));
            }
        }
        if rec.event() == SpanEvent::Closed {
            let duration = rec.duration.as_ref().and_then(|d| {
                u64::try_from(d.seconds * 1_000_000 + i64::from(d.nanos / 1000)).ok()
            });
            span.end_us = micros(rec.end.as_ref()).or_else(|| duration.map(|d| span.start_us + d));
            span.status = if rec.status() == SpanStatus::Error {
                "error"
            } else {
                "ok"
            };
        }
    }
    for i in 0..order.len() {
        order[i].depth = depth(&order, &index, i);
    }
    order
}

/// Depth of span `i`: parents followed through `index` (bounded, so a
/// cycle in bad records cannot loop).
fn depth(spans: &[Span], index: &HashMap<String, usize>, i: usize) -> usize {
    let mut depth = 0;
    let mut at = i;
    while let Some(&parent) = index.get(&spans[at].parent_span_id) {
        depth += 1;
        at = parent;
        if depth > spans.len() {
            break;
        }
    }
    depth
}

/// The latest time any span reaches (the end of the view for open spans).
pub fn horizon(spans: &[Span]) -> u64 {
    spans
        .iter()
        .map(|s| s.end_us.unwrap_or(s.start_us))
        .max()
        .unwrap_or(0)
}

/// A reboot inside a trace (an operation and the commit that settled it
/// after the reboot): between the last span end of one boot and the first
/// span start of the next.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Reboot {
    pub from_boot: String,
    pub to_boot: String,
    /// Latest end (or start, for an open span) of the earlier boot's spans.
    pub from_us: u64,
    /// Start of the later boot's first span.
    pub to_us: u64,
    /// That first span.
    pub first_span_id: String,
}

impl Reboot {
    /// The time without records (zero when clocks overlap).
    pub fn gap_us(&self) -> u64 {
        self.to_us.saturating_sub(self.from_us)
    }
}

/// The reboots between `spans` of known boots, in time order: each place
/// where the next span (by start) ran in another boot than the one before.
pub fn reboots(spans: &[Span]) -> Vec<Reboot> {
    let mut last_end: HashMap<&str, u64> = HashMap::new();
    for span in spans.iter().filter(|s| !s.boot_id.is_empty()) {
        let end = span.end_us.unwrap_or(span.start_us).max(span.start_us);
        let slot = last_end.entry(span.boot_id.as_str()).or_default();
        *slot = (*slot).max(end);
    }
    let mut by_start: Vec<&Span> = spans.iter().filter(|s| !s.boot_id.is_empty()).collect();
    by_start.sort_by_key(|s| s.start_us);
    let mut found = Vec::new();
    let mut current: Option<&str> = None;
    for span in by_start {
        if let Some(boot) = current.filter(|b| *b != span.boot_id) {
            found.push(Reboot {
                from_boot: boot.to_owned(),
                to_boot: span.boot_id.clone(),
                from_us: last_end.get(boot).copied().unwrap_or_default(),
                to_us: span.start_us,
                first_span_id: span.span_id.clone(),
            });
        }
        current = Some(span.boot_id.as_str());
    }
    found
}
