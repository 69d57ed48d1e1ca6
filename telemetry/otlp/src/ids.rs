//! One trace id for the bus and the export.
//!
//! A servicing operation's root span continues the caller's W3C trace when
//! there is one; otherwise the operation's trace id (the one its bus records
//! carry) is handed to the SDK's id generator for that root span, so the
//! exported trace has the same id as the bus records.

use std::cell::Cell;

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use trident_telemetry::TraceParent;

thread_local! {
    /// Trace id the next root span built on this thread takes (consumed once).
    static NEXT_TRACE_ID: Cell<Option<TraceId>> = const { Cell::new(None) };
}

/// Random ids, except a root span's trace id that [`link_operation_span`] chose.
#[derive(Debug, Default)]
pub struct HintedIdGenerator {
    random: RandomIdGenerator,
}

impl IdGenerator for HintedIdGenerator {
    fn new_trace_id(&self) -> TraceId {
        NEXT_TRACE_ID
            .with(|hint| hint.take())
            .unwrap_or_else(|| self.random.new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        self.random.new_span_id()
    }
}

/// Ties an operation's root span to the export. Call right after the span
/// is created, before it is entered or gets children or events:
/// - with `parent` (the caller's `traceparent`), the exported span becomes a
///   child of the caller's span, in the caller's trace;
/// - without, the exported trace takes `trace_id` (the bus records' trace id).
///
/// Returns the exported trace id when export is on, `None` when it is off.
pub fn link_operation_span(
    span: &tracing::Span,
    trace_id: u128,
    parent: Option<&TraceParent>,
) -> Option<TraceId> {
    if let Some(parent) = parent {
        let flags = TraceFlags::new(parent.flags);
        let remote = SpanContext::new(
            TraceId::from(parent.trace_id),
            SpanId::from(parent.parent_span_id),
            flags,
            true,
            TraceState::default(),
        );
        span.set_parent(Context::new().with_remote_span_context(remote))
            .ok()?;
    } else {
        // The empty context makes it a root span: the generator is asked for a trace id.
        span.set_parent(Context::new()).ok()?;
        NEXT_TRACE_ID.with(|hint| hint.set(Some(TraceId::from(trace_id))));
    }
    // Builds the exported span now, on this thread, consuming the hint.
    let root = span.context().span().span_context().clone();
    NEXT_TRACE_ID.with(|hint| hint.set(None));
    if !root.is_valid() {
        return None;
    }
    Some(root.trace_id())
}
