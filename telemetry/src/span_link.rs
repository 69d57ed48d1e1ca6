//! How an exporter of spans (the OTLP export, in `trident-otlp`) learns of
//! each servicing operation's root span, so the exported trace continues the
//! caller's trace or takes the trace id the bus records carry.
//!
//! The exporter adds an [`OperationSpanLink`] (a layer that does nothing
//! else) to the subscriber; [`crate::operation::Operation::start`] finds it
//! through the root span's own dispatcher, as `tracing-opentelemetry` finds
//! its layer. Without such a layer (export off) nothing happens, and this
//! crate needs no exporter dependency.

use tracing::Subscriber;
use tracing_subscriber::Layer;

use crate::ids::TraceParent;

/// The ids of an operation's root span, as its bus records carry them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootSpanIds {
    /// The trace id of the operation's records.
    pub trace_id: u128,
    /// The root span's own id (the exported span takes it too).
    pub span_id: u64,
    /// Its parent: the caller's span (`traceparent`), or the root span of
    /// the operation it continues across a reboot.
    pub parent: Option<TraceParent>,
    /// A span it is linked to, not a child of: the caller's span when the
    /// operation continues another operation's trace.
    pub link: Option<TraceParent>,
}

/// Ties an operation's root span to an exporter, right after the span is
/// created (before it is entered or gets children).
pub type LinkOperationSpan = fn(&tracing::Span, &RootSpanIds);

/// A layer carrying an exporter's [`LinkOperationSpan`].
#[derive(Clone, Copy, Debug)]
pub struct OperationSpanLink {
    link: LinkOperationSpan,
}

impl OperationSpanLink {
    /// A layer that hands each operation root span to `link`.
    pub fn new(link: LinkOperationSpan) -> Self {
        OperationSpanLink { link }
    }
}

impl<S: Subscriber> Layer<S> for OperationSpanLink {}

/// Hands `span` to the exporter of its dispatcher, if it has one.
pub(crate) fn link_operation_span(span: &tracing::Span, ids: &RootSpanIds) {
    let link = span
        .with_subscriber(|(_, dispatch)| {
            dispatch
                .downcast_ref::<OperationSpanLink>()
                .map(|hook| hook.link)
        })
        .flatten();
    if let Some(link) = link {
        link(span, ids);
    }
}
