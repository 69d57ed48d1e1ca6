//! The OTLP export's redaction boundary: every string that leaves through
//! OTLP (span names, attributes, event names and attributes, status
//! descriptions, log bodies and attributes) passes through the export's
//! [`Redact`] function first. The daemon passes one that replaces the
//! secrets it knows of and PEM private key bodies; this crate knows nothing
//! of what a secret is.
//!
//! Spans are owned by the processor when they end, so they are redacted in
//! place. A log record's attributes cannot be removed from an SDK record,
//! so a record that needs it is rebuilt (a fresh record from a logger that
//! has no processor, every field copied, strings redacted); records that
//! need nothing (nearly all) pass untouched.

use std::borrow::Cow;
use std::time::Duration;

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _};
use opentelemetry::trace::Status;
use opentelemetry::{Array, Context, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogProcessor, SdkLogRecord, SdkLogger, SdkLoggerProvider};
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

/// Redacts one string (borrowed back when there is nothing to redact).
pub type Redact = fn(&str) -> Cow<'_, str>;

/// The [`Redact`] of an export that has nothing to redact (benchmarks,
/// tests): every string as it is.
pub fn nothing(text: &str) -> Cow<'_, str> {
    Cow::Borrowed(text)
}

/// `text` redacted, `None` when it is unchanged.
fn changed(redact: Redact, text: &str) -> Option<String> {
    match redact(text) {
        Cow::Borrowed(_) => None,
        Cow::Owned(redacted) => Some(redacted),
    }
}

fn redact_cow(redact: Redact, text: &mut Cow<'static, str>) {
    if let Some(redacted) = changed(redact, text) {
        *text = Cow::Owned(redacted);
    }
}

fn redact_string_value(redact: Redact, value: &mut StringValue) -> bool {
    match changed(redact, value.as_str()) {
        Some(redacted) => {
            *value = StringValue::from(redacted);
            true
        }
        None => false,
    }
}

fn redact_attribute(redact: Redact, kv: &mut KeyValue) {
    match &mut kv.value {
        Value::String(text) => {
            redact_string_value(redact, text);
        }
        Value::Array(Array::String(items)) => {
            for item in items {
                redact_string_value(redact, item);
            }
        }
        _ => {}
    }
}

/// Redacts a finished span in place.
fn redact_span(redact: Redact, span: &mut SpanData) {
    redact_cow(redact, &mut span.name);
    span.attributes
        .iter_mut()
        .for_each(|kv| redact_attribute(redact, kv));
    for event in &mut span.events.events {
        redact_cow(redact, &mut event.name);
        event
            .attributes
            .iter_mut()
            .for_each(|kv| redact_attribute(redact, kv));
    }
    if let Status::Error { description } = &mut span.status {
        redact_cow(redact, description);
    }
}

/// `value` redacted, `None` when unchanged.
fn redacted_any(redact: Redact, value: &AnyValue) -> Option<AnyValue> {
    match value {
        AnyValue::String(text) => {
            changed(redact, text.as_str()).map(|r| AnyValue::String(r.into()))
        }
        AnyValue::ListAny(items) => {
            let redacted: Vec<Option<AnyValue>> =
                items.iter().map(|i| redacted_any(redact, i)).collect();
            redacted.iter().any(Option::is_some).then(|| {
                let list = redacted
                    .into_iter()
                    .zip(items.iter())
                    .map(|(r, original)| r.unwrap_or_else(|| original.clone()))
                    .collect();
                AnyValue::ListAny(Box::new(list))
            })
        }
        AnyValue::Map(map) => {
            let mut any = false;
            let out = map
                .iter()
                .map(|(key, item)| {
                    let item = redacted_any(redact, item).inspect(|_| any = true);
                    (key.clone(), item.unwrap_or_else(|| map[key].clone()))
                })
                .collect();
            any.then(|| AnyValue::Map(Box::new(out)))
        }
        _ => None,
    }
}

/// Span processor that redacts each finished span, then hands it on.
#[derive(Debug)]
pub struct RedactingSpanProcessor<P> {
    pub inner: P,
    pub redact: Redact,
}

impl<P: SpanProcessor> SpanProcessor for RedactingSpanProcessor<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        redact_span(self.redact, &mut span);
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Log processor that redacts each record, then hands it on.
#[derive(Debug)]
pub struct RedactingLogProcessor<P> {
    inner: P,
    redact: Redact,
    /// Mints the fresh records that replace ones whose attributes need
    /// redacting (its provider has no processor: nothing is emitted).
    minter: SdkLogger,
}

impl<P> RedactingLogProcessor<P> {
    pub fn new(inner: P, redact: Redact) -> Self {
        Self {
            inner,
            redact,
            minter: SdkLoggerProvider::builder().build().logger("redact"),
        }
    }

    fn redact_record(&self, record: &mut SdkLogRecord) {
        let body = record.body().and_then(|b| redacted_any(self.redact, b));
        let attributes: Vec<Option<AnyValue>> = record
            .attributes_iter()
            .map(|(_, value)| redacted_any(self.redact, value))
            .collect();
        if attributes.iter().all(Option::is_none) {
            if let Some(body) = body {
                record.set_body(body);
            }
            return;
        }
        let mut fresh = self.minter.create_log_record();
        if let Some(name) = record.event_name() {
            fresh.set_event_name(name);
        }
        if let Some(target) = record.target() {
            fresh.set_target(target.clone());
        }
        if let Some(time) = record.timestamp() {
            fresh.set_timestamp(time);
        }
        if let Some(time) = record.observed_timestamp() {
            fresh.set_observed_timestamp(time);
        }
        if let Some(text) = record.severity_text() {
            fresh.set_severity_text(text);
        }
        if let Some(number) = record.severity_number() {
            fresh.set_severity_number(number);
        }
        if let Some(body) = body.or_else(|| record.body().cloned()) {
            fresh.set_body(body);
        }
        if let Some(cx) = record.trace_context() {
            fresh.set_trace_context(cx.trace_id, cx.span_id, cx.trace_flags);
        }
        for ((key, value), redacted) in record.attributes_iter().zip(attributes) {
            fresh.add_attribute(key.clone(), redacted.unwrap_or_else(|| value.clone()));
        }
        *record = fresh;
    }
}

impl<P: LogProcessor> LogProcessor for RedactingLogProcessor<P> {
    fn emit(&self, data: &mut SdkLogRecord, instrumentation: &InstrumentationScope) {
        self.redact_record(data);
        self.inner.emit(data, instrumentation);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn no_hunter(text: &str) -> Cow<'_, str> {
        if text.contains("hunter2") {
            Cow::Owned(text.replace("hunter2", "[REDACTED]"))
        } else {
            Cow::Borrowed(text)
        }
    }

    #[test]
    fn log_attributes_and_body_are_redacted_and_other_fields_kept() {
        let processor = RedactingLogProcessor::new((), no_hunter);
        let mut record = processor.minter.create_log_record();
        record.set_body(AnyValue::from("pw=hunter2".to_owned()));
        record.set_severity_text("WARN");
        record.add_attribute("error", "bad hunter2");
        record.add_attribute("count", 3_i64);
        processor.redact_record(&mut record);
        assert_eq!(
            record.body(),
            Some(&AnyValue::from("pw=[REDACTED]".to_owned()))
        );
        assert_eq!(record.severity_text(), Some("WARN"));
        let attributes: Vec<_> = record.attributes_iter().cloned().collect();
        assert_eq!(attributes.len(), 2);
        assert_eq!(attributes[0].1, AnyValue::from("bad [REDACTED]".to_owned()));
        assert_eq!(attributes[1].1, AnyValue::Int(3));
    }
}
