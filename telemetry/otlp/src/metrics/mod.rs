//! The daemon's metrics, derived in one place from the records that flow
//! over the bus (operation, progress and error records), plus observable
//! gauges of the bus and of the export itself.
//!
//! Engine code never calls a metric: it emits operations, phases and errors
//! through the telemetry API, and [`ServicingMetrics::observe`] turns each
//! record into instrument updates.

pub mod bus_observer;
pub mod names;
mod progress;
mod state;

use std::sync::{Arc, Mutex};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{
    Counter, Histogram, Meter, ObservableCounter, ObservableUpDownCounter, UpDownCounter,
};
use trident_proto::v1;

use crate::{DropReason, ExportHealth, Signal};
use names::*;
use state::{Observation, OperationTracker};

/// Histogram bucket bounds (seconds) for operation durations: 1 s to 2 h.
const OPERATION_BUCKETS: &[f64] = &[
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0, 7200.0,
];
/// Histogram bucket bounds (seconds) for phase durations: 10 ms to 1 h.
const PHASE_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

/// The bus's counters the gauges read at collection time.
#[derive(Debug, Clone, Default)]
pub struct BusGauges {
    pub drops: v1::DropCounters,
    pub subscribers: u32,
}

/// Reads the bus's current counters (the bus's status accessor).
pub type BusGaugeSource = Arc<dyn Fn() -> BusGauges + Send + Sync>;

/// Instruments fed from bus records.
pub struct ServicingMetrics {
    operations: Counter<u64>,
    operations_active: UpDownCounter<i64>,
    operation_duration: Histogram<f64>,
    phase_duration: Histogram<f64>,
    bytes_written: Counter<u64>,
    image_bytes_read: Counter<u64>,
    errors: Counter<u64>,
    bus_records: Counter<u64>,
    progress: progress::LatestProgress,
    tracker: Mutex<OperationTracker>,
    _observers: Vec<Observer>,
}

impl std::fmt::Debug for ServicingMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServicingMetrics").finish_non_exhaustive()
    }
}

impl ServicingMetrics {
    /// Creates every instrument on `meter`; `bus` and `export` feed the
    /// observable ones when given.
    pub fn new(
        meter: &Meter,
        bus: Option<BusGaugeSource>,
        export: Option<Arc<ExportHealth>>,
    ) -> Self {
        let mut observers = bus.map(|bus| bus_gauges(meter, bus)).unwrap_or_default();
        observers.extend(export.map(|health| export_drops(meter, health)));
        let progress = progress::LatestProgress::default();
        observers.extend(progress.gauges(meter));
        Self {
            operations: meter
                .u64_counter(OPERATIONS)
                .with_unit("{operation}")
                .with_description("Completed servicing operations by kind and result")
                .build(),
            operations_active: meter
                .i64_up_down_counter(OPERATIONS_ACTIVE)
                .with_unit("{operation}")
                .with_description("Servicing operations running now")
                .build(),
            operation_duration: meter
                .f64_histogram(OPERATION_DURATION)
                .with_unit("s")
                .with_description("Wall time of servicing operations")
                .with_boundaries(OPERATION_BUCKETS.to_vec())
                .build(),
            phase_duration: meter
                .f64_histogram(PHASE_DURATION)
                .with_unit("s")
                .with_description("Wall time of finished servicing phases")
                .with_boundaries(PHASE_BUCKETS.to_vec())
                .build(),
            bytes_written: meter
                .u64_counter(BYTES_WRITTEN)
                .with_unit("By")
                .with_description("Bytes servicing wrote to disks")
                .build(),
            image_bytes_read: meter
                .u64_counter(IMAGE_BYTES_READ)
                .with_unit("By")
                .with_description("Bytes of OS images read")
                .build(),
            errors: meter
                .u64_counter(ERRORS)
                .with_unit("{error}")
                .with_description("Error reports by category")
                .build(),
            bus_records: meter
                .u64_counter(BUS_RECORDS)
                .with_unit("{record}")
                .with_description("Records published on the telemetry bus by kind")
                .build(),
            progress,
            tracker: Mutex::new(OperationTracker::default()),
            _observers: observers,
        }
    }

    /// Turns one bus record into instrument updates. Cheap; never blocks on I/O.
    pub fn observe(&self, record: &v1::Record) {
        let observations = match self.tracker.lock() {
            Ok(mut tracker) => tracker.observe(record),
            Err(poisoned) => poisoned.into_inner().observe(record),
        };
        for observation in observations {
            self.apply(observation);
        }
    }

    fn apply(&self, observation: Observation) {
        match observation {
            Observation::Record { kind } => {
                self.bus_records.add(1, &[KeyValue::new(ATTR_KIND, kind)]);
            }
            Observation::OperationStarted { kind } => {
                self.operations_active
                    .add(1, &[KeyValue::new(ATTR_KIND, kind)]);
            }
            Observation::OperationCompleted {
                kind,
                result,
                seconds,
            } => {
                self.operations_active
                    .add(-1, &[KeyValue::new(ATTR_KIND, kind.clone())]);
                let attrs = [
                    KeyValue::new(ATTR_KIND, kind),
                    KeyValue::new(ATTR_RESULT, result),
                ];
                self.operations.add(1, &attrs);
                if let Some(seconds) = seconds {
                    self.operation_duration.record(seconds, &attrs);
                }
            }
            Observation::PhaseFinished {
                phase,
                state,
                seconds,
            } => {
                self.phase_duration.record(
                    seconds,
                    &[
                        KeyValue::new(ATTR_PHASE, phase),
                        KeyValue::new(ATTR_STATE, state),
                    ],
                );
            }
            Observation::BytesWritten(bytes) => self.bytes_written.add(bytes, &[]),
            Observation::ImageBytesRead(bytes) => self.image_bytes_read.add(bytes, &[]),
            Observation::Error { category } => {
                self.errors
                    .add(1, &[KeyValue::new(ATTR_CATEGORY, category)]);
            }
            Observation::Overall { kind, progress } => self.progress.set(kind, progress),
        }
    }
}

/// Keeps an observable instrument (and so its callback) registered.
pub(crate) type Observer = Box<dyn std::any::Any + Send + Sync>;

/// The bus's drops by record kind and its subscriber count, read from `bus`
/// at collection time.
fn bus_gauges(meter: &Meter, bus: BusGaugeSource) -> Vec<Observer> {
    let drops_source = Arc::clone(&bus);
    let drops: ObservableCounter<u64> = meter
        .u64_observable_counter(BUS_DROPS)
        .with_unit("{record}")
        .with_description("Records the telemetry bus dropped, by record kind")
        .with_callback(move |observer| {
            let d = drops_source().drops;
            for (kind, value) in [
                ("log", d.logs),
                ("span", d.spans),
                ("progress", d.progress),
                ("error", d.errors),
                ("operation", d.operations),
            ] {
                observer.observe(value, &[KeyValue::new(ATTR_KIND, kind)]);
            }
        })
        .build();
    let subscribers: ObservableUpDownCounter<i64> = meter
        .i64_observable_up_down_counter(BUS_SUBSCRIBERS)
        .with_unit("{subscriber}")
        .with_description("Subscribers of the telemetry bus now")
        .with_callback(move |observer| observer.observe(i64::from(bus().subscribers), &[]))
        .build();
    vec![Box::new(drops), Box::new(subscribers)]
}

/// What the export itself lost, by signal and reason.
fn export_drops(meter: &Meter, health: Arc<ExportHealth>) -> Observer {
    let drops: ObservableCounter<u64> = meter
        .u64_observable_counter(EXPORT_DROPS)
        .with_unit("{record}")
        .with_description("Telemetry the OTLP export lost (metrics: failed collections)")
        .with_callback(move |observer| {
            for signal in Signal::ALL {
                for reason in DropReason::ALL {
                    observer.observe(
                        health.dropped_count(signal, reason),
                        &[
                            KeyValue::new(ATTR_SIGNAL, signal.as_str()),
                            KeyValue::new(ATTR_REASON, reason.as_str()),
                        ],
                    );
                }
            }
        })
        .build();
    Box::new(drops)
}
