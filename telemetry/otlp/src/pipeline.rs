//! Bounded, accounted export pipelines around the SDK's batch processors.
//!
//! The SDK's batch processors already run their exports on their own
//! threads and drop on a full queue, but they only say so in their internal
//! log. So a thin front counts what is queued and drops (and counts) at the
//! bound itself, and a thin exporter wrapper counts what each export took out
//! and whether it went through. The instrumented thread only ever does an
//! atomic add and a non-blocking channel send.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogExporter, LogProcessor, SdkLogRecord};
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use super::delivery::{self, DeliveryCursor};
use super::health::{DropReason, ExportHealth, Signal};

/// Records handed to a batch processor and not yet through an export.
#[derive(Debug, Clone)]
pub struct QueueGauge {
    queued: Arc<AtomicUsize>,
    capacity: usize,
}

impl QueueGauge {
    pub fn new(capacity: usize) -> Self {
        Self {
            queued: Arc::new(AtomicUsize::new(0)),
            capacity,
        }
    }

    /// Takes a slot; false when the queue is full.
    fn try_enqueue(&self) -> bool {
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.capacity {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    fn release(&self, count: usize) {
        // Saturating: an export after shutdown may release what was never taken.
        let _ = self
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                Some(q.saturating_sub(count))
            });
    }
}

/// Tells the delivery cursor (when there is one) what is queued.
fn note_queued(cursor: Option<&DeliveryCursor>, queued: bool) {
    match (cursor, queued) {
        (Some(cursor), true) => cursor.queued(delivery::sequence_being_queued()),
        (Some(cursor), false) => cursor.stop(),
        (None, _) => {}
    }
}

/// Span processor that drops (and counts) at the bound before the batch processor.
#[derive(Debug)]
pub struct BoundedSpanProcessor<P> {
    pub inner: P,
    pub queue: QueueGauge,
    pub health: Arc<ExportHealth>,
    pub cursor: Option<Arc<DeliveryCursor>>,
}

impl<P: SpanProcessor> SpanProcessor for BoundedSpanProcessor<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let queued = self.queue.try_enqueue();
        // Before the batch processor has it: its export takes the sequence.
        note_queued(self.cursor.as_deref(), queued);
        if queued {
            self.inner.on_end(span);
        } else {
            self.health
                .dropped(Signal::Traces, DropReason::QueueFull, 1, &|| {
                    "export queue full".into()
                });
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Log processor that drops (and counts) at the bound before the batch processor.
#[derive(Debug)]
pub struct BoundedLogProcessor<P> {
    pub inner: P,
    pub queue: QueueGauge,
    pub health: Arc<ExportHealth>,
    pub cursor: Option<Arc<DeliveryCursor>>,
}

impl<P: LogProcessor> LogProcessor for BoundedLogProcessor<P> {
    fn emit(&self, data: &mut SdkLogRecord, instrumentation: &InstrumentationScope) {
        let queued = self.queue.try_enqueue();
        note_queued(self.cursor.as_deref(), queued);
        if queued {
            self.inner.emit(data, instrumentation);
        } else {
            self.health
                .dropped(Signal::Logs, DropReason::QueueFull, 1, &|| {
                    "export queue full".into()
                });
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// Exporter wrapper: frees queue slots and records the outcome of each
/// export (and moves the delivery cursor).
#[derive(Debug)]
pub struct AccountedExporter<E> {
    pub inner: E,
    pub queue: Option<QueueGauge>,
    pub health: Arc<ExportHealth>,
    pub signal: Signal,
    pub cursor: Option<Arc<DeliveryCursor>>,
}

impl<E> AccountedExporter<E> {
    fn settle(&self, count: usize, result: &OTelSdkResult) {
        if let Some(queue) = &self.queue {
            queue.release(count);
        }
        if let Some(cursor) = &self.cursor {
            cursor.exported(count, result.is_ok());
        }
        match result {
            Ok(()) => self.health.exported(),
            Err(error) => {
                self.health
                    .dropped(self.signal, DropReason::ExportFailed, count as u64, &|| {
                        error.to_string()
                    })
            }
        }
    }
}

impl<E: SpanExporter> SpanExporter for AccountedExporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let count = batch.len();
        let result = self.inner.export(batch).await;
        self.settle(count, &result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: LogExporter> LogExporter for AccountedExporter<E> {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        let count = batch.iter().count();
        let result = self.inner.export(batch).await;
        self.settle(count, &result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for AccountedExporter<E> {
    /// A failed metrics export loses one collection (counted as 1).
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.settle(1, &result);
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn queue_gauge_refuses_beyond_capacity_and_frees_on_release() {
        let queue = QueueGauge::new(2);
        assert!(queue.try_enqueue());
        assert!(queue.try_enqueue());
        assert!(!queue.try_enqueue());
        queue.release(1);
        assert!(queue.try_enqueue());
        queue.release(10);
        assert!(queue.try_enqueue());
    }
}
