//! Building and encoding bus records: timestamps, levels, fields, and the
//! metadata the ring keeps beside each encoded record.

pub(crate) mod fields;
pub(crate) mod log_encoder;
pub(crate) mod wire;

use std::time::SystemTime;

use bytes::Bytes;
use prost::Message;
use trident_proto::v1::{LogLevel, Record, RecordKind};

/// A protobuf timestamp of a moment.
pub fn timestamp(at: SystemTime) -> prost_types::Timestamp {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    prost_types::Timestamp {
        seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(since.subsec_nanos()).unwrap_or(0),
    }
}

/// A protobuf timestamp of now.
pub fn now() -> prost_types::Timestamp {
    timestamp(SystemTime::now())
}

/// The bus level of a tracing level.
pub fn log_level(level: &tracing::Level) -> LogLevel {
    match *level {
        tracing::Level::ERROR => LogLevel::Error,
        tracing::Level::WARN => LogLevel::Warn,
        tracing::Level::INFO => LogLevel::Info,
        tracing::Level::DEBUG => LogLevel::Debug,
        tracing::Level::TRACE => LogLevel::Trace,
    }
}

/// Encodes a record (without its cursor, which the bus adds on delivery).
pub(crate) fn encode(record: &Record) -> Bytes {
    let mut buf = Vec::with_capacity(record.encoded_len());
    // Encoding into a Vec sized by encoded_len cannot run out of space.
    let _ = record.encode(&mut buf);
    Bytes::from(buf)
}

/// The kind of a record, from its content.
pub fn kind_of(record: &Record) -> RecordKind {
    use trident_proto::v1::record::Record as R;
    match record.record {
        Some(R::Log(_)) => RecordKind::Log,
        Some(R::Span(_)) => RecordKind::Span,
        Some(R::Progress(_) | R::OverallProgress(_)) => RecordKind::Progress,
        Some(R::Error(_)) => RecordKind::Error,
        Some(R::Operation(_)) => RecordKind::Operation,
        None => RecordKind::Unspecified,
    }
}

/// The servicing operation a record belongs to ("" when none).
pub fn operation_of(record: &Record) -> &str {
    use trident_proto::v1::record::Record as R;
    match &record.record {
        Some(R::Log(r)) => &r.operation_id,
        Some(R::Span(r)) => &r.operation_id,
        Some(R::Progress(r)) => &r.operation_id,
        Some(R::OverallProgress(r)) => &r.operation_id,
        Some(R::Error(r)) => &r.operation_id,
        Some(R::Operation(r)) => &r.operation_id,
        None => "",
    }
}
