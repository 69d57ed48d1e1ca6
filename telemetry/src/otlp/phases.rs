//! Exported child spans for servicing phases.
//!
//! Phases are progress records on the bus, not tracing spans; for the
//! export they become spans under the operation's root span (nested phases
//! under their parent phase), with the phase's own start and end times, so
//! a trace shows where an operation spent its time. Built from the same
//! bus subscription that feeds the metrics.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{Span, Tracer};
use trident_proto::v1::{self, record::Record as Body};

/// Exported root span of each running operation, by operation id
/// (registered by [`super::link_operation_span`]).
static OPERATION_ROOTS: LazyLock<Mutex<HashMap<String, SpanContext>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

pub(super) fn register_operation(operation_id: &str, root: SpanContext) {
    if let Ok(mut roots) = OPERATION_ROOTS.lock() {
        roots.insert(operation_id.to_string(), root);
    }
}

fn operation_root(operation_id: &str) -> Option<SpanContext> {
    OPERATION_ROOTS.lock().ok()?.get(operation_id).cloned()
}

fn forget_operation(operation_id: &str) {
    if let Ok(mut roots) = OPERATION_ROOTS.lock() {
        roots.remove(operation_id);
    }
}

/// Open phase spans.
#[derive(Debug)]
pub struct PhaseSpans {
    tracer: Tracer,
    open: HashMap<(String, String), Span>,
}

impl PhaseSpans {
    pub fn new(tracer: Tracer) -> Self {
        Self {
            tracer,
            open: HashMap::new(),
        }
    }

    /// Opens, updates and ends phase spans from one bus record.
    pub fn observe(&mut self, record: &v1::Record) {
        match &record.record {
            Some(Body::Progress(progress)) if !progress.operation_id.is_empty() => {
                self.progress(progress);
            }
            Some(Body::Operation(op)) if op.event == v1::OperationEvent::Completed as i32 => {
                // Phases left open (abandoned) end with the operation, as failed.
                let at = record.timestamp.as_ref().and_then(to_system_time);
                let open: Vec<_> = self
                    .open
                    .keys()
                    .filter(|(id, _)| id == &op.operation_id)
                    .cloned()
                    .collect();
                for key in open {
                    if let Some(mut span) = self.open.remove(&key) {
                        span.set_status(Status::error("phase did not finish"));
                        end(&mut span, at);
                    }
                }
                forget_operation(&op.operation_id);
            }
            _ => {}
        }
    }

    fn progress(&mut self, progress: &v1::ProgressRecord) {
        let key = (progress.operation_id.clone(), progress.phase_id.clone());
        if !self.open.contains_key(&key) {
            let Some(parent) = self.parent_context(progress) else {
                return;
            };
            let mut attributes = vec![
                KeyValue::new("trident.operation.id", progress.operation_id.clone()),
                KeyValue::new("trident.phase.id", progress.phase_id.clone()),
                KeyValue::new("trident.phase.name", progress.name.clone()),
            ];
            if let Some(total) = progress.total {
                attributes.push(KeyValue::new("trident.phase.total", clamp(total)));
            }
            let mut builder = self
                .tracer
                .span_builder(format!("phase {}", progress.phase_id))
                .with_kind(SpanKind::Internal)
                .with_attributes(attributes);
            if let Some(started) = progress.started.as_ref().and_then(to_system_time) {
                builder = builder.with_start_time(started);
            }
            let span = builder.start_with_context(&self.tracer, &parent);
            self.open.insert(key.clone(), span);
        }
        let state = v1::PhaseState::try_from(progress.state).unwrap_or(v1::PhaseState::Unspecified);
        if matches!(state, v1::PhaseState::Done | v1::PhaseState::Failed)
            && let Some(mut span) = self.open.remove(&key)
        {
            span.set_attribute(KeyValue::new(
                "trident.phase.current",
                clamp(progress.current),
            ));
            span.set_status(if state == v1::PhaseState::Done {
                Status::Ok
            } else {
                Status::error("phase failed")
            });
            end(
                &mut span,
                progress.updated.as_ref().and_then(to_system_time),
            );
        }
    }

    /// The parent phase's span, or the operation's root span.
    fn parent_context(&self, progress: &v1::ProgressRecord) -> Option<Context> {
        if !progress.parent_phase_id.is_empty()
            && let Some(parent) = self.open.get(&(
                progress.operation_id.clone(),
                progress.parent_phase_id.clone(),
            ))
        {
            return Some(Context::new().with_remote_span_context(parent.span_context().clone()));
        }
        let root = operation_root(&progress.operation_id)?;
        Some(Context::new().with_remote_span_context(root))
    }
}

fn end(span: &mut Span, at: Option<SystemTime>) {
    match at {
        Some(at) => span.end_with_timestamp(at),
        None => span.end(),
    }
}

fn clamp(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn to_system_time(ts: &prost_types::Timestamp) -> Option<SystemTime> {
    let secs = u64::try_from(ts.seconds).ok()?;
    let nanos = u32::try_from(ts.nanos).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}
