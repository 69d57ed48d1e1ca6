//! Per-span data the layer keeps in the span's extensions.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use trident_proto::v1::{Field, FileLocation};

/// What the bus knows about a live span.
#[derive(Debug)]
pub(crate) struct SpanData {
    pub trace_id: u128,
    pub span_id: u64,
    /// 0 for a root span.
    pub parent_span_id: u64,
    /// The nearest enclosing span with an `operation_id` field.
    pub operation: Option<Arc<str>>,
    pub target: String,
    /// Run-time name (`otel.name`), replacing the static one when set.
    pub name: Option<String>,
    pub fields: Vec<Field>,
    pub start: SystemTime,
    pub start_instant: Instant,
    pub location: Option<FileLocation>,
    /// An ERROR event happened inside, or `otel.status_code = "ERROR"`.
    pub error: bool,
}

/// The ids of the span a caller is in.
#[derive(Clone, Debug)]
pub struct SpanContext {
    /// W3C trace id.
    pub trace_id: u128,
    /// W3C span id.
    pub span_id: u64,
    /// Servicing operation, if inside one.
    pub operation_id: Option<Arc<str>>,
}
