//! Trace correlation of exported log records.
//!
//! The log bridge takes a record's trace and span ids from the current
//! OpenTelemetry context, which is the entered span. Events with an
//! explicit parent (`info!(parent: &span, ..)`, as the operation and
//! progress API emit them) are not inside that span; this wrapper makes the
//! parent's context current while the bridge handles such an event.

use opentelemetry::Context;
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context as LayerContext;
use tracing_subscriber::registry::LookupSpan;

/// Wraps the log bridge `L`.
#[derive(Debug)]
pub struct ParentCorrelated<L> {
    pub inner: L,
}

impl<S, L> Layer<S> for ParentCorrelated<L>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
    L: Layer<S>,
{
    fn on_event(&self, event: &Event<'_>, ctx: LayerContext<'_, S>) {
        let parent_cx: Option<Context> = event.parent().and_then(|parent| {
            tracing::dispatcher::get_default(|dispatch| {
                tracing_opentelemetry::get_otel_context(parent, dispatch)
            })
        });
        match parent_cx {
            Some(cx) => {
                let _current = cx.attach();
                self.inner.on_event(event, ctx);
            }
            None => self.inner.on_event(event, ctx),
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        self.inner.on_new_span(attrs, id, ctx);
    }

    fn on_record(&self, span: &Id, values: &Record<'_>, ctx: LayerContext<'_, S>) {
        self.inner.on_record(span, values, ctx);
    }
}
