//! The `tracing` layer that turns the daemon's spans and events into typed
//! bus records. It never blocks: each record is built, encoded and appended
//! to the ring under a short lock; nothing waits for a subscriber.

mod filter;
mod published;
mod span_data;

pub use filter::{INTERNAL_TARGETS, InternalTargets, is_internal};
pub use published::take_published_sequence;
pub use span_data::SpanContext;

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tracing::span::{Attributes, Id, Record as SpanValues};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Filtered;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::{LookupSpan, SpanRef};
use trident_proto::v1::{
    FileLocation, LogLevel, PhaseState, ProgressRecord, ProgressUnit, Record, RecordKind,
    SpanEvent, SpanRecord, SpanStatus, record,
};

use crate::bus::ring::Entry;
use crate::bus::{Bus, Effect};
use crate::ids::{self, TraceParent};
use crate::progress::fields as pf;
use crate::record::fields::{Collected, merge};
use crate::record::log_encoder::{EventContext, encode_event};
use span_data::SpanData;

/// Span field naming the servicing operation (and making the span its root).
pub const OPERATION_ID_FIELD: &str = "operation_id";
/// Span field carrying a trace id (32 hex) to use instead of inheriting one.
pub const TRACE_ID_FIELD: &str = "trace_id";
/// Span field carrying a remote parent span id (16 hex), with `trace_id`.
pub const PARENT_SPAN_ID_FIELD: &str = "parent_span_id";
/// Span field carrying the span's own id (16 hex) instead of a random one:
/// an operation's root span, whose id the datastore keeps so the operation
/// that settles it after the reboot can continue its trace.
pub const SPAN_ID_FIELD: &str = "span_id";
/// Span field carrying a whole W3C `traceparent` value.
pub const TRACEPARENT_FIELD: &str = "traceparent";
/// Span field (OpenTelemetry convention) that marks a span failed when "ERROR".
pub const STATUS_FIELD: &str = "otel.status_code";
/// Span field (OpenTelemetry convention) naming a span at run time, for
/// spans whose static name is generic (e.g. each servicing phase).
pub const SPAN_NAME_FIELD: &str = "otel.name";

/// The layer; build it with [`Bus::layer`].
#[derive(Clone, Debug)]
pub struct BusLayer {
    bus: Bus,
}

impl BusLayer {
    /// The bus this layer feeds.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }
}

impl Bus {
    /// The layer feeding this bus, filtered so our own transport and export
    /// internals ([`INTERNAL_TARGETS`]) never reach it.
    pub fn layer<S>(&self) -> Filtered<BusLayer, InternalTargets, S>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        BusLayer { bus: self.clone() }.with_filter(InternalTargets)
    }

    /// A registry with only this bus's layer, e.g. for tests and benchmarks.
    pub fn subscriber(&self) -> impl Subscriber + Send + Sync + 'static {
        tracing_subscriber::registry().with(self.layer())
    }
}

/// The ids of the current span (of the current dispatcher), if it is known
/// to the bus layer.
pub fn current_context() -> Option<SpanContext> {
    tracing::dispatcher::get_default(|dispatch| {
        let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
        let id = dispatch.current_span().id()?.clone();
        let span = registry.span(&id)?;
        span.scope().find_map(|s| {
            s.extensions().get::<SpanData>().map(|d| SpanContext {
                trace_id: d.trace_id,
                span_id: d.span_id,
                operation_id: d.operation.clone(),
            })
        })
    })
}

/// The servicing operation a span belongs to, as the bus layer recorded it
/// (None for spans outside operations, or that the bus layer filtered out).
/// For log formatters that name the operation without repeating span fields.
pub fn span_operation_id<S>(span: &SpanRef<'_, S>) -> Option<Arc<str>>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    span.extensions()
        .get::<SpanData>()
        .and_then(|d| d.operation.clone())
}

fn location(file: Option<&str>, line: Option<u32>) -> Option<FileLocation> {
    file.map(|path| FileLocation {
        path: path.to_owned(),
        line: line.unwrap_or(0),
    })
}

impl<S> Layer<S> for BusLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let meta = attrs.metadata();
        let mut collected = Collected::default();
        attrs.record(&mut collected);

        let parent = span.parent();
        let inherited = parent.as_ref().and_then(|p| {
            p.extensions()
                .get::<SpanData>()
                .map(|d| (d.trace_id, d.span_id, d.operation.clone()))
        });
        let remote = remote_parent(&collected);
        let (trace_id, parent_span_id) = match (remote, &inherited) {
            (Some((trace, parent)), _) => (trace, parent),
            (None, Some((trace, parent, _))) => (*trace, *parent),
            (None, None) => (ids::new_trace_id(), 0),
        };
        let operation = collected
            .text(OPERATION_ID_FIELD)
            .filter(|o| !o.is_empty())
            .map(Arc::<str>::from)
            .or_else(|| inherited.and_then(|(_, _, op)| op));
        let span_id = collected
            .text(SPAN_ID_FIELD)
            .and_then(|id| ids::parse_span_id(&id))
            .unwrap_or_else(ids::new_span_id);
        let data = SpanData {
            trace_id,
            span_id,
            parent_span_id,
            operation,
            target: collected
                .target
                .take()
                .unwrap_or_else(|| meta.target().to_owned()),
            error: collected
                .text(STATUS_FIELD)
                .is_some_and(|s| s.eq_ignore_ascii_case("error")),
            name: collected.text(SPAN_NAME_FIELD).filter(|n| !n.is_empty()),
            fields: collected.fields,
            start: SystemTime::now(),
            start_instant: Instant::now(),
            location: location(meta.file(), meta.line()),
        };
        self.publish_span(&span, &data, SpanEvent::Opened, None);
        span.extensions_mut().insert(data);
    }

    fn on_record(&self, id: &Id, values: &SpanValues<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut collected = Collected::default();
        values.record(&mut collected);
        let mut extensions = span.extensions_mut();
        if let Some(data) = extensions.get_mut::<SpanData>() {
            if collected
                .text(STATUS_FIELD)
                .is_some_and(|s| s.eq_ignore_ascii_case("error"))
            {
                data.error = true;
            }
            merge(&mut data.fields, collected.fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let span = ctx.event_span(event);
        let (trace_id, span_id, operation) = span
            .as_ref()
            .and_then(|s| {
                s.extensions()
                    .get::<SpanData>()
                    .map(|d| (d.trace_id, d.span_id, d.operation.clone()))
            })
            .unwrap_or((0, 0, None));

        if meta.target() == crate::progress::PROGRESS_TARGET {
            let mut collected = Collected::default();
            event.record(&mut collected);
            self.publish_progress(collected, operation);
            return;
        }
        if meta.target() == crate::overall::PLAN_TARGET {
            let mut collected = Collected::default();
            event.record(&mut collected);
            self.plan_overall(&collected, operation);
            return;
        }
        let level = crate::record::log_level(meta.level());
        if level == LogLevel::Error
            && let Some(span) = &span
            && let Some(data) = span.extensions_mut().get_mut::<SpanData>()
        {
            data.error = true;
        }
        let context = EventContext {
            trace_id,
            span_id,
            operation_id: operation.as_deref().unwrap_or_default(),
        };
        let bytes = encode_event(event, level as i32, context, SystemTime::now());
        let sequence = self.bus.publish(
            Entry {
                kind: RecordKind::Log as u8,
                level: level as u8,
                operation,
                bytes: bytes.into(),
            },
            Effect::None,
        );
        published::set(sequence);
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let extensions = span.extensions();
        if let Some(data) = extensions.get::<SpanData>() {
            self.publish_span(
                &span,
                data,
                SpanEvent::Closed,
                Some(data.start_instant.elapsed()),
            );
        }
    }
}

/// A remote parent from the span's own fields (`traceparent`, or
/// `trace_id` with an optional `parent_span_id`).
fn remote_parent(collected: &Collected) -> Option<(u128, u64)> {
    if let Some(parent) = collected
        .text(TRACEPARENT_FIELD)
        .and_then(|t| TraceParent::parse(&t))
    {
        return Some((parent.trace_id, parent.parent_span_id));
    }
    let trace = collected
        .text(TRACE_ID_FIELD)
        .and_then(|t| ids::parse_trace_id(&t))?;
    let parent = collected
        .text(PARENT_SPAN_ID_FIELD)
        .and_then(|p| ids::parse_span_id(&p))
        .unwrap_or(0);
    Some((trace, parent))
}

impl BusLayer {
    fn publish_span<S>(
        &self,
        span: &SpanRef<'_, S>,
        data: &SpanData,
        event: SpanEvent,
        duration: Option<std::time::Duration>,
    ) where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        let closed = event == SpanEvent::Closed;
        let status = match (closed, data.error) {
            (false, _) => SpanStatus::Unspecified,
            (true, false) => SpanStatus::Ok,
            (true, true) => SpanStatus::Error,
        };
        let record = SpanRecord {
            event: event as i32,
            trace_id: ids::trace_id_hex(data.trace_id),
            span_id: ids::span_id_hex(data.span_id),
            parent_span_id: if data.parent_span_id == 0 {
                String::new()
            } else {
                ids::span_id_hex(data.parent_span_id)
            },
            name: data.name.clone().unwrap_or_else(|| span.name().to_owned()),
            target: data.target.clone(),
            fields: data.fields.clone(),
            start: Some(crate::record::timestamp(data.start)),
            end: closed.then(crate::record::now),
            duration: duration.and_then(|d| prost_types::Duration::try_from(d).ok()),
            status: status as i32,
            operation_id: data.operation.as_deref().unwrap_or_default().to_owned(),
            location: data.location.clone(),
        };
        let record = Record {
            cursor: None,
            boot_id: String::new(),
            timestamp: Some(crate::record::now()),
            record: Some(record::Record::Span(record)),
        };
        let sequence = self.bus.publish(
            Entry {
                kind: RecordKind::Span as u8,
                level: 0,
                operation: data.operation.clone(),
                bytes: crate::record::encode(&record),
            },
            Effect::None,
        );
        if closed {
            published::set(sequence);
        }
    }

    fn publish_progress(&self, collected: Collected, operation: Option<Arc<str>>) {
        let phase_id = collected.text(pf::PHASE_ID).unwrap_or_default();
        let started = collected
            .unsigned(pf::STARTED_UNIX_NANOS)
            .map(|ns| SystemTime::UNIX_EPOCH + std::time::Duration::from_nanos(ns));
        let progress = ProgressRecord {
            operation_id: operation.as_deref().unwrap_or_default().to_owned(),
            phase_id: phase_id.clone(),
            parent_phase_id: collected.text(pf::PARENT_PHASE_ID).unwrap_or_default(),
            name: collected.text(pf::NAME).unwrap_or_default(),
            unit: collected
                .unsigned(pf::UNIT)
                .and_then(|u| i32::try_from(u).ok())
                .unwrap_or(ProgressUnit::Unspecified as i32),
            current: collected.unsigned(pf::CURRENT).unwrap_or(0),
            total: collected.unsigned(pf::TOTAL),
            state: collected
                .unsigned(pf::STATE)
                .and_then(|s| i32::try_from(s).ok())
                .unwrap_or(PhaseState::Unspecified as i32),
            started: started.map(crate::record::timestamp),
            updated: Some(crate::record::now()),
        };
        let overall = operation.clone().map(|op| (op, progress.clone()));
        let record = Record {
            cursor: None,
            boot_id: String::new(),
            timestamp: progress.updated,
            record: Some(record::Record::Progress(progress)),
        };
        self.bus.publish(
            Entry {
                kind: RecordKind::Progress as u8,
                level: 0,
                operation,
                bytes: crate::record::encode(&record),
            },
            Effect::Progress {
                phase_id: &phase_id,
            },
        );
        if let Some((operation, progress)) = overall {
            self.bus.derive_overall(&operation, |tracker, now| {
                Some(tracker.phase(&operation, &progress, now))
            });
        }
    }

    /// The operation's plan (byte total and/or step count): an overall
    /// record.
    fn plan_overall(&self, collected: &Collected, operation: Option<Arc<str>>) {
        use crate::overall::fields;
        let bytes = collected.unsigned(fields::BYTES_TOTAL);
        let steps = collected
            .unsigned(fields::STEPS_PLANNED)
            .and_then(|s| u32::try_from(s).ok());
        let Some(operation) = operation.filter(|_| bytes.is_some() || steps.is_some()) else {
            return;
        };
        self.bus.derive_overall(&operation, |tracker, now| {
            Some(tracker.plan(&operation, bytes, steps, now))
        });
    }
}
