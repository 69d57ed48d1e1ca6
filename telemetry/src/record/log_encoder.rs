//! The hot path: encodes a `tracing` event straight into the bytes of a
//! `Record { timestamp, log: LogRecord }` (no cursor; the bus adds it),
//! reusing per-thread scratch buffers, so an event costs one allocation.

use std::cell::RefCell;
use std::fmt::{self, Write as _};
use std::time::SystemTime;

use tracing::Event;
use tracing::field::{Field, Visit};

use super::fields::LOG_TARGET_FIELD;
use super::wire::*;

/// Tags of `Record` and `LogRecord` (see telemetry_records.proto).
mod tag {
    pub const RECORD_TIMESTAMP: u32 = 2;
    pub const RECORD_LOG: u32 = 10;
    pub const TIMESTAMP_SECONDS: u32 = 1;
    pub const TIMESTAMP_NANOS: u32 = 2;
    pub const LOG_LEVEL: u32 = 1;
    pub const LOG_MESSAGE: u32 = 2;
    pub const LOG_TARGET: u32 = 3;
    pub const LOG_MODULE: u32 = 4;
    pub const LOG_LOCATION: u32 = 5;
    pub const LOG_FIELDS: u32 = 6;
    pub const LOG_TRACE_ID: u32 = 7;
    pub const LOG_SPAN_ID: u32 = 8;
    pub const LOG_OPERATION_ID: u32 = 9;
    pub const LOCATION_PATH: u32 = 1;
    pub const LOCATION_LINE: u32 = 2;
    pub const FIELD_NAME: u32 = 1;
    pub const FIELD_TEXT: u32 = 2;
    pub const FIELD_SIGNED: u32 = 3;
    pub const FIELD_UNSIGNED: u32 = 4;
    pub const FIELD_REAL: u32 = 5;
    pub const FIELD_BOOLEAN: u32 = 6;
}

/// `tracing-log` fields of events bridged from the `log` crate.
const LOG_MODULE_FIELD: &str = "log.module_path";
const LOG_FILE_FIELD: &str = "log.file";
const LOG_LINE_FIELD: &str = "log.line";
const MESSAGE_FIELD: &str = "message";

/// Per-thread buffers reused by every event.
#[derive(Debug, Default)]
struct Scratch {
    message: String,
    /// Encoded `Field` entries (tag 6 of LogRecord), ready to copy.
    fields: Vec<u8>,
    text: String,
    target: Option<String>,
    module: Option<String>,
    file: Option<String>,
    line: Option<u32>,
}

impl Scratch {
    fn clear(&mut self) {
        self.message.clear();
        self.fields.clear();
        self.target = None;
        self.module = None;
        self.file = None;
        self.line = None;
    }

    fn put_field(&mut self, name: &str, value_len: usize, value: impl FnOnce(&mut Vec<u8>)) {
        let body = len_delimited_len(tag::FIELD_NAME, name.len()) + value_len;
        put_len_delimited(tag::LOG_FIELDS, body, &mut self.fields);
        put_len_delimited(tag::FIELD_NAME, name.len(), &mut self.fields);
        self.fields.extend_from_slice(name.as_bytes());
        value(&mut self.fields);
    }

    fn put_text_field(&mut self, name: &str, text: &str) {
        let len = len_delimited_len(tag::FIELD_TEXT, text.len());
        self.put_field(name, len, |buf| {
            put_len_delimited(tag::FIELD_TEXT, text.len(), buf);
            buf.extend_from_slice(text.as_bytes());
        });
    }

    fn put_varint_field(&mut self, name: &str, field_tag: u32, value: u64) {
        let len = prost::encoding::key_len(field_tag) + prost::encoding::encoded_len_varint(value);
        self.put_field(name, len, |buf| put_varint_always(field_tag, value, buf));
    }

    /// Handles the fields with a meaning of their own; false for others.
    fn special(&mut self, name: &str, text: &str) -> bool {
        match name {
            MESSAGE_FIELD => self.message.push_str(text),
            LOG_TARGET_FIELD => self.target = Some(text.to_owned()),
            LOG_MODULE_FIELD => self.module = Some(text.to_owned()),
            LOG_FILE_FIELD => self.file = Some(text.to_owned()),
            _ => return false,
        }
        true
    }
}

impl Visit for Scratch {
    fn record_str(&mut self, field: &Field, value: &str) {
        if !self.special(field.name(), value) {
            self.put_text_field(field.name(), value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == MESSAGE_FIELD {
            let _ = write!(self.message, "{value:?}");
            return;
        }
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let _ = write!(text, "{value:?}");
        if !self.special(field.name(), &text) {
            self.put_text_field(field.name(), &text);
        }
        self.text = text;
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        // int64 on the wire: two's complement as u64.
        self.put_varint_field(field.name(), tag::FIELD_SIGNED, value as u64);
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == LOG_LINE_FIELD {
            self.line = u32::try_from(value).ok();
        } else {
            self.put_varint_field(field.name(), tag::FIELD_UNSIGNED, value);
        }
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        let len = prost::encoding::key_len(tag::FIELD_REAL) + 8;
        self.put_field(field.name(), len, |buf| {
            put_double_always(tag::FIELD_REAL, value, buf)
        });
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put_varint_field(field.name(), tag::FIELD_BOOLEAN, u64::from(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let mut text = std::mem::take(&mut self.text);
        text.clear();
        let _ = write!(text, "{value}");
        self.put_text_field(field.name(), &text);
        self.text = text;
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Where an event happened, from its span context.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct EventContext<'a> {
    /// 0: none.
    pub trace_id: u128,
    /// 0: none.
    pub span_id: u64,
    pub operation_id: &'a str,
}

/// Encodes an event as a `Record` with a `LogRecord`.
pub(crate) fn encode_event(
    event: &Event<'_>,
    level: i32,
    context: EventContext<'_>,
    at: SystemTime,
) -> Vec<u8> {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => encode_with(&mut scratch, event, level, context, at),
        // Re-entered (an event while formatting a field): fresh buffers.
        Err(_) => encode_with(&mut Scratch::default(), event, level, context, at),
    })
}

fn encode_with(
    scratch: &mut Scratch,
    event: &Event<'_>,
    level: i32,
    context: EventContext<'_>,
    at: SystemTime,
) -> Vec<u8> {
    scratch.clear();
    event.record(scratch);
    let log = LogParts::new(scratch, event.metadata(), level, context);
    let log_len = log.encoded_len();
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let (seconds, nanos) = (since.as_secs(), u64::from(since.subsec_nanos()));
    let timestamp_len =
        varint_len(tag::TIMESTAMP_SECONDS, seconds) + varint_len(tag::TIMESTAMP_NANOS, nanos);
    let total = len_delimited_len(tag::RECORD_TIMESTAMP, timestamp_len)
        + len_delimited_len(tag::RECORD_LOG, log_len);

    let mut out = Vec::with_capacity(total);
    put_len_delimited(tag::RECORD_TIMESTAMP, timestamp_len, &mut out);
    put_varint(tag::TIMESTAMP_SECONDS, seconds, &mut out);
    put_varint(tag::TIMESTAMP_NANOS, nanos, &mut out);
    put_len_delimited(tag::RECORD_LOG, log_len, &mut out);
    log.put(&mut out);
    debug_assert_eq!(out.len(), total);
    out
}

/// The fields of one `LogRecord`, ready to measure and write: what the
/// event's own fields say (a `log.target` field, `log` crate locations)
/// wins over its callsite's metadata.
struct LogParts<'a> {
    level: u64,
    message: &'a [u8],
    target: &'a [u8],
    module: &'a [u8],
    /// Source path and line, when known.
    location: Option<(&'a str, u32)>,
    /// Encoded `Field` entries.
    fields: &'a [u8],
    trace: Option<[u8; 32]>,
    span: Option<[u8; 16]>,
    operation_id: &'a [u8],
}

impl<'a> LogParts<'a> {
    #[inline]
    fn new(
        scratch: &'a Scratch,
        meta: &'static tracing::Metadata<'static>,
        level: i32,
        context: EventContext<'a>,
    ) -> Self {
        let file = scratch.file.as_deref().or(meta.file());
        let line = scratch.line.or(meta.line()).unwrap_or(0);
        LogParts {
            level: level as u64,
            message: scratch.message.as_bytes(),
            target: scratch
                .target
                .as_deref()
                .unwrap_or(meta.target())
                .as_bytes(),
            module: scratch
                .module
                .as_deref()
                .or(meta.module_path())
                .unwrap_or("")
                .as_bytes(),
            location: file.map(|path| (path, line)),
            fields: &scratch.fields,
            trace: (context.trace_id != 0).then(|| hex128(context.trace_id)),
            span: (context.span_id != 0).then(|| hex64(context.span_id)),
            operation_id: context.operation_id.as_bytes(),
        }
    }

    #[inline]
    fn trace(&self) -> &[u8] {
        self.trace.as_ref().map_or(&[][..], |t| &t[..])
    }

    #[inline]
    fn span(&self) -> &[u8] {
        self.span.as_ref().map_or(&[][..], |s| &s[..])
    }

    #[inline]
    fn location_len(&self) -> Option<usize> {
        self.location.map(|(path, line)| {
            str_len(tag::LOCATION_PATH, path.as_bytes())
                + varint_len(tag::LOCATION_LINE, u64::from(line))
        })
    }

    /// Length of the `LogRecord` body.
    #[inline]
    fn encoded_len(&self) -> usize {
        varint_len(tag::LOG_LEVEL, self.level)
            + str_len(tag::LOG_MESSAGE, self.message)
            + str_len(tag::LOG_TARGET, self.target)
            + str_len(tag::LOG_MODULE, self.module)
            + self
                .location_len()
                .map_or(0, |len| len_delimited_len(tag::LOG_LOCATION, len))
            + self.fields.len()
            + str_len(tag::LOG_TRACE_ID, self.trace())
            + str_len(tag::LOG_SPAN_ID, self.span())
            + str_len(tag::LOG_OPERATION_ID, self.operation_id)
    }

    /// Writes the `LogRecord` body (its framing is the caller's).
    #[inline]
    fn put(&self, out: &mut Vec<u8>) {
        put_varint(tag::LOG_LEVEL, self.level, out);
        put_str(tag::LOG_MESSAGE, self.message, out);
        put_str(tag::LOG_TARGET, self.target, out);
        put_str(tag::LOG_MODULE, self.module, out);
        if let (Some((path, line)), Some(len)) = (self.location, self.location_len()) {
            put_len_delimited(tag::LOG_LOCATION, len, out);
            put_str(tag::LOCATION_PATH, path.as_bytes(), out);
            put_varint(tag::LOCATION_LINE, u64::from(line), out);
        }
        out.extend_from_slice(self.fields);
        put_str(tag::LOG_TRACE_ID, self.trace(), out);
        put_str(tag::LOG_SPAN_ID, self.span(), out);
        put_str(tag::LOG_OPERATION_ID, self.operation_id, out);
    }
}
