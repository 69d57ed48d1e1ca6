//! Exports from the telemetry journal what earlier daemon runs queued and
//! never delivered (see [`crate::delivery`]): closed spans and log records
//! at INFO and above of other runs that lie after the signal's saved cursor,
//! in journal order, through the same processors as live records (redacted,
//! bounded, accounted). A replayed span keeps its bus ids (trace, span,
//! parent; the SDK's id generator takes them as hints), so it joins the
//! trace its operation's other spans were exported in: an operation root
//! span is exported with its bus ids live too.

use std::path::Path;
use std::time::{Duration, SystemTime};

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use trident_proto::v1::{Field, LogLevel, LogRecord, Record, SpanEvent, SpanRecord, SpanStatus};
use trident_proto::v1::{field, record};
use trident_telemetry::ids::{parse_span_id, parse_trace_id};

use crate::delivery::{self, SavedCursor};
use crate::filter::is_internal_target;
use crate::ids::hint_ids;

/// What a replay exported.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    pub spans: usize,
    pub logs: usize,
    /// Undelivered spans and logs past the bound, left out (the newest
    /// are kept).
    pub left_out: (usize, usize),
}

/// The cursors the previous run left, per signal.
#[derive(Debug, Default, Clone)]
pub(crate) struct Previous {
    pub traces: Option<SavedCursor>,
    pub logs: Option<SavedCursor>,
}

/// Replays the undelivered records of `journal` (runs other than
/// `current_run`), at most `bound` per signal.
pub(crate) fn replay(
    journal: &Path,
    current_run: &str,
    previous: &Previous,
    (tracer_provider, logger_provider): (&SdkTracerProvider, &SdkLoggerProvider),
    bound: usize,
) -> Result<Replayed, trident_telemetry::TelemetryError> {
    if previous.traces.is_none() && previous.logs.is_none() {
        return Ok(Replayed::default());
    }
    let records = trident_telemetry::journal::read_records(journal)?;
    let mut spans = Vec::new();
    let mut logs = Vec::new();
    for rec in records {
        let Some(cursor) = rec.cursor.as_ref() else {
            continue;
        };
        if cursor.run_id == current_run {
            continue;
        }
        let after = |saved: &Option<SavedCursor>| {
            saved.as_ref().is_some_and(|saved| {
                saved.is_before(&cursor.run_id, cursor.sequence, unix_ms(&rec))
            })
        };
        match &rec.record {
            Some(record::Record::Span(span))
                if span.event == SpanEvent::Closed as i32
                    && !is_internal_target(&span.target)
                    && after(&previous.traces) =>
            {
                spans.push(span.clone());
            }
            Some(record::Record::Log(log)) if exportable_log(log) && after(&previous.logs) => {
                logs.push((log.clone(), rec.timestamp));
            }
            _ => {}
        }
    }
    let left_out = (
        spans.len().saturating_sub(bound),
        logs.len().saturating_sub(bound),
    );
    let spans = &spans[spans.len().saturating_sub(bound)..];
    let logs = &logs[logs.len().saturating_sub(bound)..];
    delivery::replaying(|| {
        let tracer = tracer_provider.tracer(crate::SCOPE_NAME);
        for span in spans {
            replay_span(&tracer, span);
        }
        // The log bridge's scope (an empty name), as live log records have.
        let logger = logger_provider.logger("");
        for (log, at) in logs {
            let mut out = logger.create_log_record();
            fill_log(&mut out, log, at.as_ref());
            logger.emit(out);
        }
    });
    Ok(Replayed {
        spans: spans.len(),
        logs: logs.len(),
        left_out,
    })
}

/// What the live log export carries: INFO and above, not export internals
/// or progress updates.
fn exportable_log(log: &LogRecord) -> bool {
    (LogLevel::Error as i32..=LogLevel::Info as i32).contains(&log.level)
        && !is_internal_target(&log.target)
        && log.target != trident_telemetry::progress::PROGRESS_TARGET
}

fn unix_ms(rec: &Record) -> u64 {
    rec.timestamp
        .as_ref()
        .and_then(|t| u64::try_from(t.seconds).ok())
        .map_or(0, |s| s * 1000)
        .saturating_add(
            rec.timestamp
                .as_ref()
                .and_then(|t| u64::try_from(t.nanos / 1_000_000).ok())
                .unwrap_or(0),
        )
}

fn time(ts: Option<&prost_types::Timestamp>) -> Option<SystemTime> {
    SystemTime::try_from(*ts?).ok()
}

fn value(field: &Field) -> Option<opentelemetry::Value> {
    Some(match field.value.as_ref()? {
        field::Value::Text(t) => t.clone().into(),
        field::Value::Signed(v) => (*v).into(),
        field::Value::Unsigned(v) => {
            i64::try_from(*v).map_or_else(|_| v.to_string().into(), Into::into)
        }
        field::Value::Real(v) => (*v).into(),
        field::Value::Boolean(v) => (*v).into(),
    })
}

/// Exports one closed span with its bus ids, times, fields and status.
fn replay_span(tracer: &opentelemetry_sdk::trace::SdkTracer, span: &SpanRecord) {
    let (Some(trace_id), Some(span_id)) =
        (parse_trace_id(&span.trace_id), parse_span_id(&span.span_id))
    else {
        return;
    };
    let Some(start) = time(span.start.as_ref()) else {
        return;
    };
    let duration = span
        .duration
        .as_ref()
        .and_then(|d| Duration::try_from(*d).ok())
        .unwrap_or_default();
    let end = time(span.end.as_ref()).unwrap_or(start + duration);
    let mut attributes: Vec<KeyValue> = span
        .fields
        .iter()
        .filter(|f| !f.name.starts_with("otel."))
        .filter_map(|f| Some(KeyValue::new(f.name.clone(), value(f)?)))
        .collect();
    attributes.push(KeyValue::new("target", span.target.clone()));
    if let Some(location) = &span.location {
        attributes.push(KeyValue::new("code.filepath", location.path.clone()));
        attributes.push(KeyValue::new("code.lineno", i64::from(location.line)));
    }
    attributes.push(KeyValue::new("trident.replayed", true));
    let parent = match parse_span_id(&span.parent_span_id) {
        Some(parent) => Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from(trace_id),
            SpanId::from(parent),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        )),
        None => Context::new(),
    };
    let mut exported = hint_ids(Some(TraceId::from(trace_id)), SpanId::from(span_id), || {
        tracer
            .span_builder(span.name.clone())
            .with_kind(SpanKind::Internal)
            .with_start_time(start)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent)
    });
    if span.status == SpanStatus::Error as i32 {
        opentelemetry::trace::Span::set_status(&mut exported, Status::error(""));
    }
    opentelemetry::trace::Span::end_with_timestamp(&mut exported, end);
}

fn severity(level: i32) -> (Severity, &'static str) {
    match LogLevel::try_from(level).unwrap_or(LogLevel::Info) {
        LogLevel::Error => (Severity::Error, "ERROR"),
        LogLevel::Warn => (Severity::Warn, "WARN"),
        LogLevel::Debug => (Severity::Debug, "DEBUG"),
        LogLevel::Trace => (Severity::Trace, "TRACE"),
        _ => (Severity::Info, "INFO"),
    }
}

/// A journaled log record as the log bridge would have exported it.
fn fill_log(
    out: &mut opentelemetry_sdk::logs::SdkLogRecord,
    log: &LogRecord,
    at: Option<&prost_types::Timestamp>,
) {
    let (number, text) = severity(log.level);
    out.set_severity_number(number);
    out.set_severity_text(text);
    out.set_target(log.target.clone());
    out.set_body(AnyValue::from(log.message.clone()));
    if let Some(at) = time(at) {
        out.set_timestamp(at);
        out.set_observed_timestamp(at);
    }
    for field in &log.fields {
        if let Some(value) = value(field) {
            out.add_attribute(field.name.clone(), AnyValue::from(value_text(value)));
        }
    }
    if !log.operation_id.is_empty() {
        out.add_attribute("operation_id", AnyValue::from(log.operation_id.clone()));
    }
    out.add_attribute("trident.replayed", AnyValue::from(true));
    if let (Some(trace_id), Some(span_id)) =
        (parse_trace_id(&log.trace_id), parse_span_id(&log.span_id))
    {
        out.set_trace_context(
            TraceId::from(trace_id),
            SpanId::from(span_id),
            Some(TraceFlags::SAMPLED),
        );
    }
}

fn value_text(value: opentelemetry::Value) -> String {
    value.as_str().into_owned()
}
