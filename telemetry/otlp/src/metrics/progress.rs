//! Gauges of the overall progress of the daemon's newest operation, read
//! at collection time from the last `OverallProgress` record the bus
//! derived (the figures the CLI and the Python client show). The record is
//! kept after the operation finished (its final figures) until the next
//! operation's first one; a figure the daemon does not know (no byte total,
//! no measured rate, no honest ETA, no step plan) is not observed, so the
//! dashboards show no value rather than a made-up one.

use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry::KeyValue;
use opentelemetry::metrics::Meter;
use trident_proto::v1::OverallProgress;

use super::Observer;
use super::names::*;

/// The newest overall record and the servicing kind of its operation.
#[derive(Debug, Clone, Default)]
pub(crate) struct LatestProgress(Arc<Mutex<Option<(String, OverallProgress)>>>);

impl LatestProgress {
    pub(crate) fn set(&self, kind: String, progress: OverallProgress) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((kind, progress));
    }

    /// Reads one figure of the newest record, when it has one.
    fn read<T>(
        &self,
        figure: impl Fn(&OverallProgress) -> Option<T>,
    ) -> Option<(T, [KeyValue; 1])> {
        let latest = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (kind, progress) = latest.as_ref()?;
        Some((figure(progress)?, [KeyValue::new(ATTR_KIND, kind.clone())]))
    }

    /// The observable gauges (keep them alive to keep their callbacks).
    /// All are f64 (Prometheus samples are floats anyway), so one builder
    /// serves bytes, rates, seconds and step counts.
    pub(crate) fn gauges(&self, meter: &Meter) -> Vec<Observer> {
        let gauge = |name: &'static str,
                     unit: &'static str,
                     description: &'static str,
                     figure: fn(&OverallProgress) -> Option<f64>|
         -> Observer {
            let latest = self.clone();
            Box::new(
                meter
                    .f64_observable_gauge(name)
                    .with_unit(unit)
                    .with_description(description)
                    .with_callback(move |observer| {
                        if let Some((value, attrs)) = latest.read(figure) {
                            observer.observe(value, &attrs);
                        }
                    })
                    .build(),
            )
        };
        vec![
            gauge(
                PROGRESS_DONE,
                "By",
                "Bytes done by the newest operation",
                |p| Some(p.bytes_done as f64),
            ),
            gauge(
                PROGRESS_PLANNED,
                "By",
                "Bytes the newest operation moves in all",
                |p| p.bytes_total.map(|b| b as f64),
            ),
            gauge(
                PROGRESS_RATE,
                "By/s",
                "Smoothed transfer rate of the newest operation",
                |p| p.bytes_per_second.filter(|r| r.is_finite()),
            ),
            gauge(
                PROGRESS_ETA,
                "s",
                "Time left of the newest operation (only while honest)",
                |p| {
                    let eta = p.eta.filter(|_| !p.finished)?;
                    std::time::Duration::try_from(eta)
                        .ok()
                        .map(|d| d.as_secs_f64())
                },
            ),
            gauge(
                PROGRESS_STEPS_DONE,
                "{step}",
                "Top-level phases the newest operation finished",
                |p| Some(f64::from(p.steps_done)),
            ),
            gauge(
                PROGRESS_STEPS_PLANNED,
                "{step}",
                "Top-level phases the newest operation planned",
                |p| (p.steps_planned > 0).then_some(f64::from(p.steps_planned)),
            ),
        ]
    }
}
