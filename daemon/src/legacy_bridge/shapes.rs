//! Upstream's legacy reporting JSON, built from bus records. The shapes are
//! upstream's (field names, lower-case levels, kebab-case states) so an
//! orchestrator written for upstream's phonehome/logstream/tracestream
//! receivers keeps working while it migrates.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value, json};
use trident_proto::v1::{Field, LogLevel, LogRecord, SpanRecord, field};

/// Field of an event that makes it a tracestream metric (upstream's rule).
pub const METRIC_NAME_FIELD: &str = "metric_name";

/// Phonehome states, spelled as upstream sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhoneHomeState {
    Started,
    Failed,
    Succeeded,
}

/// One phonehome POST.
#[derive(Debug, Serialize)]
pub struct PhoneHome {
    pub state: PhoneHomeState,
    pub message: String,
    /// The Host Status as YAML; absent on `started`.
    pub host_status: Option<String>,
}

/// One logstream POST: one log record.
#[derive(Debug, Serialize)]
pub struct LogEntry {
    pub level: &'static str,
    pub message: String,
    pub target: String,
    pub module: String,
    pub file: String,
    pub line: u32,
    pub timestamp: String,
}

/// One tracestream POST: one metric.
#[derive(Debug, Serialize)]
pub struct TraceEntry {
    pub timestamp: String,
    pub metric_name: String,
    pub value: Value,
    pub additional_fields: BTreeMap<String, Value>,
    pub platform_info: BTreeMap<String, Value>,
}

/// RFC 3339 (UTC, nanoseconds) of a bus timestamp; now when absent.
pub fn rfc3339(timestamp: Option<&prost_types::Timestamp>) -> String {
    let at = timestamp
        .and_then(|t| {
            let seconds = u64::try_from(t.seconds).ok()?;
            let nanos = u32::try_from(t.nanos).ok()?;
            Some(UNIX_EPOCH + Duration::new(seconds, nanos))
        })
        .unwrap_or_else(SystemTime::now);
    humantime::format_rfc3339_nanos(at).to_string()
}

fn level_name(level: i32) -> &'static str {
    match LogLevel::try_from(level).unwrap_or(LogLevel::Unspecified) {
        LogLevel::Error => "error",
        LogLevel::Warn => "warn",
        LogLevel::Info => "info",
        LogLevel::Debug => "debug",
        LogLevel::Trace | LogLevel::Unspecified => "trace",
    }
}

/// The logstream entry of a log record.
pub fn log_entry(log: &LogRecord, timestamp: String) -> LogEntry {
    let (file, line) = log
        .location
        .as_ref()
        .map(|l| (l.path.clone(), l.line))
        .unwrap_or_default();
    LogEntry {
        level: level_name(log.level),
        message: log.message.clone(),
        target: log.target.clone(),
        module: log.module.clone(),
        file,
        line,
        timestamp,
    }
}

fn field_value(field: &Field) -> Value {
    match &field.value {
        Some(field::Value::Text(t)) => json!(t),
        Some(field::Value::Signed(v)) => json!(v),
        Some(field::Value::Unsigned(v)) => json!(v),
        Some(field::Value::Real(v)) => json!(v),
        Some(field::Value::Boolean(v)) => json!(v),
        None => Value::Null,
    }
}

/// What every metric carries besides its value.
#[derive(Debug, Clone, Default)]
pub struct MetricContext {
    pub additional_fields: BTreeMap<String, Value>,
    pub platform_info: BTreeMap<String, Value>,
}

impl MetricContext {
    fn entry(&self, metric_name: String, value: Value, timestamp: String) -> TraceEntry {
        TraceEntry {
            timestamp,
            metric_name,
            value,
            additional_fields: self.additional_fields.clone(),
            platform_info: self.platform_info.clone(),
        }
    }

    /// The metric of an event with a `metric_name` field: its other fields
    /// as an object, or the lone `value` field (upstream's rule).
    pub fn event_metric(&self, log: &LogRecord, timestamp: String) -> Option<TraceEntry> {
        let name = log.fields.iter().find(|f| f.name == METRIC_NAME_FIELD)?;
        let Some(field::Value::Text(metric_name)) = &name.value else {
            return None;
        };
        let others: Map<String, Value> = log
            .fields
            .iter()
            .filter(|f| f.name != METRIC_NAME_FIELD)
            .map(|f| (f.name.clone(), field_value(f)))
            .collect();
        let value = if others.len() > 1 {
            Value::Object(others)
        } else {
            others.get("value").cloned().unwrap_or(Value::Null)
        };
        Some(self.entry(metric_name.clone(), value, timestamp))
    }

    /// The metric of a closed span: its fields plus `execution_time`
    /// (seconds), named after the span.
    pub fn span_metric(&self, span: &SpanRecord, timestamp: String) -> TraceEntry {
        let mut value: Map<String, Value> = span
            .fields
            .iter()
            .map(|f| (f.name.clone(), field_value(f)))
            .collect();
        let seconds = span
            .duration
            .as_ref()
            .map_or(0.0, |d| d.seconds as f64 + f64::from(d.nanos) / 1e9);
        value.insert("execution_time".into(), json!(seconds));
        self.entry(span.name.clone(), Value::Object(value), timestamp)
    }
}
