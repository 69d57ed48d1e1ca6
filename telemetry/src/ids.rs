//! W3C trace-context ids: trace ids (32 hex digits), span ids (16 hex
//! digits) and the `traceparent` header that carries them across calls.

use std::fmt;

/// The gRPC metadata key of the W3C trace-context header.
pub const TRACEPARENT_HEADER: &str = "traceparent";

/// Version `00` of the W3C `traceparent` format, the only one we emit.
const TRACEPARENT_VERSION: &str = "00";

/// A fresh random trace id; never zero (zero is invalid in W3C).
pub fn new_trace_id() -> u128 {
    loop {
        let id = fastrand::u128(..);
        if id != 0 {
            return id;
        }
    }
}

/// A fresh random span id; never zero (zero is invalid in W3C).
pub fn new_span_id() -> u64 {
    loop {
        let id = fastrand::u64(..);
        if id != 0 {
            return id;
        }
    }
}

/// A trace id as 32 lowercase hex digits.
pub fn trace_id_hex(id: u128) -> String {
    format!("{id:032x}")
}

/// A span id as 16 lowercase hex digits.
pub fn span_id_hex(id: u64) -> String {
    format!("{id:016x}")
}

/// Parses a 32-hex-digit trace id; `None` when malformed or zero.
pub fn parse_trace_id(text: &str) -> Option<u128> {
    if text.len() != 32 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u128::from_str_radix(text, 16).ok().filter(|id| *id != 0)
}

/// Parses a 16-hex-digit span id; `None` when malformed or zero.
pub fn parse_span_id(text: &str) -> Option<u64> {
    if text.len() != 16 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(text, 16).ok().filter(|id| *id != 0)
}

/// The caller's position in a distributed trace, from a W3C `traceparent`
/// header (`version-traceid-parentid-flags`). A servicing operation started
/// with one becomes a child of the caller's span.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// Trace id shared by the whole distributed trace.
    pub trace_id: u128,
    /// Span id of the caller's span: the parent of our root span.
    pub parent_span_id: u64,
    /// Trace flags (bit 0 = sampled).
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` header value. Accepts any version except the
    /// invalid `ff`; per the spec, versions above `00` may carry extra
    /// `-`-separated fields, which are ignored. `None` when malformed.
    pub fn parse(header: &str) -> Option<TraceParent> {
        let mut parts = header.trim().split('-');
        let version = parts.next()?;
        let trace = parts.next()?;
        let parent = parts.next()?;
        let flags = parts.next()?;
        let has_extra = parts.next().is_some();
        if version.len() != 2
            || !version.bytes().all(|b| b.is_ascii_hexdigit())
            || version.eq_ignore_ascii_case("ff")
            || (version == TRACEPARENT_VERSION && has_extra)
            || flags.len() != 2
        {
            return None;
        }
        Some(TraceParent {
            trace_id: parse_trace_id(trace)?,
            parent_span_id: parse_span_id(parent)?,
            flags: u8::from_str_radix(flags, 16).ok()?,
        })
    }

    /// The `traceparent` of incoming gRPC metadata, if present and valid.
    pub fn from_metadata(metadata: &tonic::metadata::MetadataMap) -> Option<TraceParent> {
        let value = metadata.get(TRACEPARENT_HEADER)?.to_str().ok()?;
        TraceParent::parse(value)
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id_hex(&self) -> String {
        trace_id_hex(self.trace_id)
    }

    /// The parent span id as 16 lowercase hex digits.
    pub fn parent_span_id_hex(&self) -> String {
        span_id_hex(self.parent_span_id)
    }
}

impl fmt::Display for TraceParent {
    /// Formats as a version-00 `traceparent` header value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{TRACEPARENT_VERSION}-{:032x}-{:016x}-{:02x}",
            self.trace_id, self.parent_span_id, self.flags
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_round_trips_through_its_header_text() {
        let text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let parsed = TraceParent::parse(text).expect("valid header");
        assert_eq!(parsed.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(parsed.parent_span_id_hex(), "00f067aa0ba902b7");
        assert_eq!(parsed.flags, 1);
        assert_eq!(parsed.to_string(), text);
    }

    #[test]
    fn traceparent_rejects_zero_ids_bad_lengths_and_version_ff() {
        for bad in [
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "garbage",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn traceparent_is_read_from_grpc_metadata() {
        let mut metadata = tonic::metadata::MetadataMap::new();
        metadata.insert(
            TRACEPARENT_HEADER,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
                .parse()
                .expect("ascii"),
        );
        let parsed = TraceParent::from_metadata(&metadata).expect("present");
        assert_eq!(parsed.flags, 0);
    }
}
