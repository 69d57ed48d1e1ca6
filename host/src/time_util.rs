//! Timestamps as RFC 3339 text (datastore, YAML) and as protobuf Timestamps.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Now, RFC 3339 in UTC with nanoseconds.
pub fn now_rfc3339() -> String {
    to_rfc3339(OffsetDateTime::now_utc())
}

pub fn to_rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339)
        .unwrap_or_else(|_| t.unix_timestamp().to_string())
}

/// An RFC 3339 text (as [`to_rfc3339`] writes it) as a system time.
pub fn parse_system_time(text: &str) -> Option<std::time::SystemTime> {
    OffsetDateTime::parse(text, &Rfc3339).ok().map(Into::into)
}

pub fn parse_to_proto(text: &str) -> Option<prost_types::Timestamp> {
    let t = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    Some(prost_types::Timestamp {
        seconds: t.unix_timestamp(),
        nanos: i32::try_from(t.nanosecond()).unwrap_or(0),
    })
}

/// `None` when the timestamp is outside what RFC 3339 can write.
pub fn proto_to_rfc3339(ts: &prost_types::Timestamp) -> Option<String> {
    let nanos = i128::from(ts.seconds) * 1_000_000_000 + i128::from(ts.nanos);
    OffsetDateTime::from_unix_timestamp_nanos(nanos)
        .ok()
        .map(to_rfc3339)
}

/// Now, as a protobuf Timestamp.
pub fn now_proto() -> prost_types::Timestamp {
    let now = OffsetDateTime::now_utc();
    prost_types::Timestamp {
        seconds: now.unix_timestamp(),
        nanos: i32::try_from(now.nanosecond()).unwrap_or(0),
    }
}
