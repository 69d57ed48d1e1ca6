//! One trace for the bus and the export.
//!
//! A servicing operation's root span is exported with the ids its bus
//! records carry: its span id (handed to the SDK's id generator), its trace
//! id (the generator's for a root span, else its parent's) and its parent,
//! the caller's W3C trace or the root span of the operation it continues
//! across a reboot (kept in the datastore), so a commit after the reboot is
//! a child of its update's root span in one exported trace. When it
//! continues an operation, the caller's span is a span link (OpenTelemetry's
//! way to relate a span to a trace it is not part of).

use std::cell::Cell;

use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use trident_telemetry::TraceParent;
use trident_telemetry::span_link::RootSpanIds;

thread_local! {
    /// Trace id the next root span built on this thread takes (consumed once).
    static NEXT_TRACE_ID: Cell<Option<TraceId>> = const { Cell::new(None) };
    /// Span id the next span built on this thread takes (consumed once).
    static NEXT_SPAN_ID: Cell<Option<SpanId>> = const { Cell::new(None) };
}

/// Random ids, except an operation root span's ids that
/// [`link_operation_span`] chose.
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
        NEXT_SPAN_ID
            .with(|hint| hint.take())
            .unwrap_or_else(|| self.random.new_span_id())
    }
}

/// Ties an operation's root span to the export. Call right after the span
/// is created, before it is entered or gets children or events: the
/// exported span takes `ids.span_id`; with `ids.parent` it becomes a child
/// of that span (in its trace), otherwise the root of trace `ids.trace_id`;
/// `ids.link` becomes a span link.
///
/// Returns the exported trace id when export is on, `None` when it is off.
pub fn link_operation_span(span: &tracing::Span, ids: &RootSpanIds) -> Option<TraceId> {
    if let Some(parent) = &ids.parent {
        span.set_parent(Context::new().with_remote_span_context(remote(parent)))
            .ok()?;
    } else {
        // The empty context makes it a root span: the generator is asked for a trace id.
        span.set_parent(Context::new()).ok()?;
        NEXT_TRACE_ID.with(|hint| hint.set(Some(TraceId::from(ids.trace_id))));
    }
    if let Some(link) = &ids.link {
        span.add_link(remote(link));
    }
    NEXT_SPAN_ID.with(|hint| hint.set(Some(SpanId::from(ids.span_id))));
    // Builds the exported span now, on this thread, consuming the hints.
    let root = span.context().span().span_context().clone();
    NEXT_TRACE_ID.with(|hint| hint.set(None));
    NEXT_SPAN_ID.with(|hint| hint.set(None));
    if !root.is_valid() {
        return None;
    }
    Some(root.trace_id())
}

/// Runs `build`, which builds one span, with its ids chosen: span id
/// `span`, and trace id `trace` when it is a root span (a child takes its
/// parent's).
pub(crate) fn hint_ids<R>(trace: Option<TraceId>, span: SpanId, build: impl FnOnce() -> R) -> R {
    NEXT_SPAN_ID.with(|hint| hint.set(Some(span)));
    NEXT_TRACE_ID.with(|hint| hint.set(trace));
    let built = build();
    NEXT_TRACE_ID.with(|hint| hint.set(None));
    NEXT_SPAN_ID.with(|hint| hint.set(None));
    built
}

/// A span of another process (or another boot) as a remote span context.
fn remote(position: &TraceParent) -> SpanContext {
    SpanContext::new(
        TraceId::from(position.trace_id),
        SpanId::from(position.parent_span_id),
        TraceFlags::new(position.flags),
        true,
        TraceState::default(),
    )
}
