//! One line of upstream Trident's full log. Upstream's `BackgroundLog`
//! (crates/trident/src/logging/background_log.rs and `LogEntry` in
//! logging/mod.rs, v0.27.0) writes every `log` record as one JSON object
//! on one line, its fields in this order:
//! `{"level":"info","message":"…","target":"…","module":"…","file":"…",
//! "line":42,"timestamp":"2026-01-02T03:04:05.123456789Z"}` (level in
//! lower case, timestamp chrono's RFC 3339 in UTC). A multi-line message
//! stays on one line (JSON escapes its newlines).

use prost_types::Timestamp;
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use trident_proto::v1::{
    Field, FileLocation, LogLevel, LogOrigin, LogRecord, Record, field, record,
};

/// Upstream's `LogEntry`. Only level, message and timestamp are required,
/// so a future upstream that drops or adds a field still parses.
#[derive(Debug, Deserialize)]
struct Entry {
    level: String,
    message: String,
    #[serde(default)]
    target: String,
    #[serde(default)]
    module: String,
    #[serde(default)]
    file: String,
    #[serde(default)]
    line: u32,
    timestamp: String,
}

/// The record of upstream's line `text`, or None when it is not one of
/// upstream's records (not JSON, not UTF-8, cut, missing a field).
pub(crate) fn parse(text: &[u8]) -> Option<Record> {
    let entry: Entry = serde_json::from_slice(text).ok()?;
    let at = OffsetDateTime::parse(&entry.timestamp, &Rfc3339).ok()?;
    let location = (!entry.file.is_empty()).then_some(FileLocation {
        path: entry.file,
        line: entry.line,
    });
    Some(upstream_record(
        Some(timestamp(at)),
        LogRecord {
            level: level(&entry.level) as i32,
            message: entry.message,
            target: entry.target,
            module: entry.module,
            location,
            ..LogRecord::default()
        },
    ))
}

/// A line that is not one of upstream's records, kept as it is (invalid
/// UTF-8 replaced) so a support engineer still sees it: no level, no time,
/// its line number in field `unparsed_line`.
pub(crate) fn unparsed(text: &[u8], number: u64) -> Record {
    let message = String::from_utf8_lossy(text).trim_end().to_owned();
    upstream_record(
        None,
        LogRecord {
            message,
            fields: vec![Field {
                name: UNPARSED_LINE_FIELD.to_owned(),
                value: Some(field::Value::Unsigned(number)),
            }],
            ..LogRecord::default()
        },
    )
}

/// Field of a record made of a line that did not parse: its line number.
pub const UNPARSED_LINE_FIELD: &str = "unparsed_line";

fn upstream_record(timestamp: Option<Timestamp>, log: LogRecord) -> Record {
    Record {
        timestamp,
        record: Some(record::Record::Log(LogRecord {
            origin: LogOrigin::Upstream as i32,
            ..log
        })),
        ..Record::default()
    }
}

/// Upstream's level names (`log::Level`, lower case); another one (a newer
/// upstream's) is unspecified.
fn level(name: &str) -> LogLevel {
    match name.to_ascii_lowercase().as_str() {
        "error" => LogLevel::Error,
        "warn" => LogLevel::Warn,
        "info" => LogLevel::Info,
        "debug" => LogLevel::Debug,
        "trace" => LogLevel::Trace,
        _ => LogLevel::Unspecified,
    }
}

fn timestamp(at: OffsetDateTime) -> Timestamp {
    Timestamp {
        seconds: at.unix_timestamp(),
        nanos: i32::try_from(at.nanosecond()).unwrap_or(0),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn log_of(record: &Record) -> &LogRecord {
        match &record.record {
            Some(record::Record::Log(log)) => log,
            other => panic!("not a log record: {other:?}"),
        }
    }

    #[test]
    fn an_upstream_line_is_a_log_record_marked_upstream() {
        let line = br#"{"level":"warn","message":"two\nlines","target":"trident::engine","module":"trident::engine::boot","file":"crates/trident/src/engine/boot.rs","line":42,"timestamp":"2026-01-02T03:04:05.123456789Z"}"#;
        let record = parse(line).unwrap();
        assert_eq!(
            record.timestamp,
            Some(Timestamp {
                seconds: 1_767_323_045,
                nanos: 123_456_789
            })
        );
        let log = log_of(&record);
        assert_eq!(log.level(), LogLevel::Warn);
        assert_eq!(log.origin(), LogOrigin::Upstream);
        assert_eq!(log.message, "two\nlines");
        assert_eq!(log.target, "trident::engine");
        assert_eq!(log.module, "trident::engine::boot");
        let location = log.location.as_ref().unwrap();
        assert_eq!(
            (location.path.as_str(), location.line),
            ("crates/trident/src/engine/boot.rs", 42)
        );
        assert!(record.cursor.is_none() && log.operation_id.is_empty());
    }

    #[test]
    fn lines_that_are_not_upstream_records_do_not_parse() {
        for line in [
            &b"plain text"[..],
            br#"{"level":"info","message":"cut"#,
            br#"{"level":"info","message":"no time"}"#,
            br#"{"level":"info","message":"bad time","timestamp":"yesterday"}"#,
            b"{\"level\":\"info\",\"message\":\"\xff\",\"timestamp\":\"2026-01-02T03:04:05Z\"}",
            b"",
        ] {
            assert!(parse(line).is_none(), "{line:?}");
        }
    }

    #[test]
    fn an_unparsed_line_keeps_its_text_and_number() {
        let record = unparsed(b"garbage \xff\xfe here\r", 7);
        let log = log_of(&record);
        assert_eq!(log.message, "garbage \u{fffd}\u{fffd} here");
        assert_eq!(log.level(), LogLevel::Unspecified);
        assert_eq!(log.origin(), LogOrigin::Upstream);
        assert_eq!(log.fields[0].name, UNPARSED_LINE_FIELD);
        assert_eq!(log.fields[0].value, Some(field::Value::Unsigned(7)));
        assert!(record.timestamp.is_none());
    }
}
