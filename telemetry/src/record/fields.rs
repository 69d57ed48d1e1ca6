//! Collects a span's or event's fields into bus `Field`s, picking out the
//! ones with a meaning of their own (message, `log.*` overrides).

use std::fmt::{self, Write as _};

use tracing::field::{Field as TracingField, Visit};
use trident_proto::v1::{Field, field::Value};

/// Field whose value overrides a record's target (script output lines).
pub const LOG_TARGET_FIELD: &str = "log.target";
/// Fields set by `tracing-log` for records bridged from the `log` crate.
const LOG_MODULE_FIELD: &str = "log.module_path";
const LOG_FILE_FIELD: &str = "log.file";
const LOG_LINE_FIELD: &str = "log.line";
/// The formatted message of an event.
const MESSAGE_FIELD: &str = "message";

/// What a field visitor found.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub message: String,
    pub fields: Vec<Field>,
    pub target: Option<String>,
    pub module: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl Collected {
    /// Value of a collected text-or-number field, as text.
    pub fn text(&self, name: &str) -> Option<String> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| match &f.value {
                Some(Value::Text(t)) => Some(t.clone()),
                Some(Value::Signed(v)) => Some(v.to_string()),
                Some(Value::Unsigned(v)) => Some(v.to_string()),
                Some(Value::Real(v)) => Some(v.to_string()),
                Some(Value::Boolean(v)) => Some(v.to_string()),
                None => None,
            })
    }

    /// Value of a collected unsigned (or non-negative signed) field.
    pub fn unsigned(&self, name: &str) -> Option<u64> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| match &f.value {
                Some(Value::Unsigned(v)) => Some(*v),
                Some(Value::Signed(v)) => u64::try_from(*v).ok(),
                Some(Value::Text(t)) => t.parse().ok(),
                _ => None,
            })
    }

    fn push(&mut self, field: &TracingField, value: Value) {
        self.fields.push(Field {
            name: field.name().to_owned(),
            value: Some(value),
        });
    }

    fn special_text(&mut self, field: &TracingField, text: String) -> Option<String> {
        match field.name() {
            MESSAGE_FIELD => self.message = text,
            LOG_TARGET_FIELD => self.target = Some(text),
            LOG_MODULE_FIELD => self.module = Some(text),
            LOG_FILE_FIELD => self.file = Some(text),
            _ => return Some(text),
        }
        None
    }
}

impl Visit for Collected {
    fn record_str(&mut self, field: &TracingField, value: &str) {
        if let Some(text) = self.special_text(field, value.to_owned()) {
            self.push(field, Value::Text(text));
        }
    }

    fn record_debug(&mut self, field: &TracingField, value: &dyn fmt::Debug) {
        let mut text = String::new();
        let _ = write!(text, "{value:?}");
        if let Some(text) = self.special_text(field, text) {
            self.push(field, Value::Text(text));
        }
    }

    fn record_i64(&mut self, field: &TracingField, value: i64) {
        self.push(field, Value::Signed(value));
    }

    fn record_u64(&mut self, field: &TracingField, value: u64) {
        if field.name() == LOG_LINE_FIELD {
            self.line = u32::try_from(value).ok();
        } else {
            self.push(field, Value::Unsigned(value));
        }
    }

    fn record_f64(&mut self, field: &TracingField, value: f64) {
        self.push(field, Value::Real(value));
    }

    fn record_bool(&mut self, field: &TracingField, value: bool) {
        self.push(field, Value::Boolean(value));
    }

    fn record_error(&mut self, field: &TracingField, value: &(dyn std::error::Error + 'static)) {
        self.push(field, Value::Text(value.to_string()));
    }
}

/// Replaces or appends fields recorded later on a span.
pub(crate) fn merge(into: &mut Vec<Field>, update: Vec<Field>) {
    for field in update {
        match into.iter_mut().find(|f| f.name == field.name) {
            Some(slot) => *slot = field,
            None => into.push(field),
        }
    }
}
