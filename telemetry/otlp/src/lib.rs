//! Optional OTLP export of the daemon's traces, logs and metrics, beside
//! the telemetry bus (`trident-telemetry`), which knows nothing of it.
//!
//! Off unless an endpoint is configured. When on:
//! - spans go through `tracing-opentelemetry`, events through
//!   `opentelemetry-appender-tracing`; metrics are derived from the bus's
//!   records by a bus observer (one in-process subscription, [`metrics`]);
//! - each signal has a bounded queue drained by the SDK's own threads; the
//!   network I/O runs on a dedicated one-thread Tokio runtime, so a collector
//!   that is down or slow never touches the servicing path;
//! - losses are counted (`trident.export.drops`) and told once per outage;
//! - every string of a span or log record passes the export's [`Redact`]
//!   function before it is queued ([`redact`]);
//! - shutdown flushes from a helper thread with a bounded wait.
//!
//! Integration: [`OtlpExport::from_flags`] once at startup (it attaches the
//! bus observer), add [`OtlpExport::layer`] to the subscriber (it carries
//! the bus's [`OperationSpanLink`] hook, so each operation root span is tied
//! to the exported trace by [`ids::link_operation_span`]), and
//! [`OtlpExport::shutdown`] on exit.

pub mod config;
pub mod delivery;
pub mod filter;
pub mod health;
mod http_client;
pub mod ids;
mod logs;
pub mod metrics;
mod pipeline;
mod providers;
pub mod redact;
mod replay;
pub mod resource;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge;
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{FilterExt, LevelFilter, filter_fn};
use tracing_subscriber::registry::LookupSpan;

pub use config::{OtlpConfig, OtlpFlags, OtlpProtocol};
pub use health::{DropReason, ExportHealth, Signal};
pub use ids::link_operation_span;
pub use redact::Redact;
pub use replay::Replayed;
pub use resource::ServiceIdentity;

use trident_telemetry::{Bus, OperationSpanLink};

use delivery::DeliveryCursor;
use metrics::{ServicingMetrics, bus_observer};
use providers::{Cursors, build_providers};
use replay::Previous;

/// Instrumentation scope name of everything the daemon exports.
pub const SCOPE_NAME: &str = "tridentd";
/// How often the watcher turns outage state changes into log lines.
const NOTICE_INTERVAL: Duration = Duration::from_millis(500);

/// Export could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("cannot start the export runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot build the OTLP {signal} exporter: {source}")]
    Exporter {
        signal: &'static str,
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// A running export: providers, its runtime, its health.
#[derive(Debug)]
pub struct OtlpExport {
    config: OtlpConfig,
    tracer_provider: SdkTracerProvider,
    logger_provider: SdkLoggerProvider,
    meter_provider: SdkMeterProvider,
    health: Arc<ExportHealth>,
    runtime: Option<tokio::runtime::Runtime>,
    metrics: Option<Arc<ServicingMetrics>>,
    /// What [`Self::replay_undelivered`] reads: the journal, this run's id
    /// and the cursors the previous run left (taken once).
    undelivered: Option<(PathBuf, String, Previous)>,
}

impl OtlpExport {
    /// Starts exporting per `config`, redacting nothing. Nothing is sent
    /// until the subscriber carries [`Self::layer`]; connections are made
    /// lazily, so a collector that is down does not fail the start.
    pub fn start(config: OtlpConfig, identity: &ServiceIdentity) -> Result<Self, OtlpError> {
        Self::start_redacted(config, identity, redact::nothing)
    }

    /// [`Self::start`], with every exported string passed through `redact`.
    pub fn start_redacted(
        config: OtlpConfig,
        identity: &ServiceIdentity,
        redact: Redact,
    ) -> Result<Self, OtlpError> {
        Self::start_with(config, identity, redact, Cursors::default())
    }

    fn start_with(
        config: OtlpConfig,
        identity: &ServiceIdentity,
        redact: Redact,
        cursors: Cursors,
    ) -> Result<Self, OtlpError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp-export")
            .enable_all()
            .build()
            .map_err(OtlpError::Runtime)?;
        let health = Arc::new(ExportHealth::default());
        let resource = resource::build_resource(identity, &config.extra_resource);
        // Channels and clients bind to the runtime they are built in.
        let built = {
            let _context = runtime.enter();
            build_providers(
                &config,
                resource,
                &health,
                runtime.handle(),
                redact,
                &cursors,
            )
        };
        let (tracer_provider, logger_provider, meter_provider) = match built {
            Ok(providers) => providers,
            Err(error) => {
                runtime.shutdown_background();
                return Err(error);
            }
        };
        let watcher_health = Arc::clone(&health);
        let endpoint = config.endpoint.clone();
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(NOTICE_INTERVAL);
            loop {
                tick.tick().await;
                watcher_health.announce(&endpoint);
            }
        });
        Ok(Self {
            config,
            tracer_provider,
            logger_provider,
            meter_provider,
            health,
            runtime: Some(runtime),
            metrics: None,
            undelivered: None,
        })
    }

    /// What the daemon does at startup: settings from its flags and the
    /// process environment; when an endpoint is set, starts the export with
    /// the bus's run id as `service.instance.id` and metrics fed from `bus`,
    /// every exported string passed through `redact`. With a journaling bus,
    /// traces and logs keep delivery cursors beside the journal
    /// (`STATE_DIR/otlp/`), and [`Self::replay_undelivered`] exports what
    /// the previous runs did not deliver.
    /// `Ok(None)`: export is off.
    pub fn from_flags(
        flags: &OtlpFlags,
        service_version: &str,
        bus: &Bus,
        redact: Redact,
    ) -> Result<Option<Self>, OtlpError> {
        let Some(config) = OtlpConfig::resolve(flags, |name| std::env::var(name).ok())? else {
            return Ok(None);
        };
        let identity = ServiceIdentity {
            service_name: config.service_name.clone(),
            service_version: service_version.to_string(),
            instance_id: bus.run_id().to_string(),
        };
        let journal = bus.config().journal_dir.clone();
        let (cursors, previous) = match journal.as_deref() {
            Some(dir) => {
                let (traces, traces_before) =
                    DeliveryCursor::open(dir, Signal::Traces, bus.run_id(), config.span_queue);
                let (logs, logs_before) =
                    DeliveryCursor::open(dir, Signal::Logs, bus.run_id(), config.log_queue);
                let cursors = Cursors {
                    traces: Some(Arc::new(traces)),
                    logs: Some(Arc::new(logs)),
                };
                let previous = Previous {
                    traces: traces_before,
                    logs: logs_before,
                };
                (cursors, Some(previous))
            }
            None => (Cursors::default(), None),
        };
        let mut export = Self::start_with(config, &identity, redact, cursors)?;
        export.attach_bus(bus);
        // The cursors go with the journal to the volume that boots next:
        // delivered first, so they say what was delivered by then.
        let (tracer, logger) = (
            export.tracer_provider.clone(),
            export.logger_provider.clone(),
        );
        bus.before_journal_handover(Arc::new(move || {
            let _ = tracer.force_flush();
            let _ = logger.force_flush();
        }));
        export.undelivered = journal
            .zip(previous)
            .map(|(journal, previous)| (journal, bus.run_id().to_owned(), previous));
        Ok(Some(export))
    }

    /// Exports from the journal the spans and logs earlier runs queued and
    /// did not deliver (a reboot or a collector outage cut them short), once:
    /// call after the stored secrets are known to the redaction, before
    /// servicing starts. `None`: nothing to replay from (no journal, or
    /// already called).
    pub fn replay_undelivered(
        &mut self,
    ) -> Option<Result<Replayed, trident_telemetry::TelemetryError>> {
        let (journal, run, previous) = self.undelivered.take()?;
        // Half of each queue: live records keep room.
        let bound = self.config.span_queue.min(self.config.log_queue) / 2;
        let providers = (&self.tracer_provider, &self.logger_provider);
        let replayed = replay::replay(&journal, &run, &previous, providers, bound);
        if let Ok(done) = &replayed {
            for (signal, count) in [
                (Signal::Traces, done.left_out.0),
                (Signal::Logs, done.left_out.1),
            ] {
                if count > 0 {
                    self.health
                        .dropped(signal, DropReason::QueueFull, count as u64, &|| {
                            "undelivered records past the replay bound".into()
                        });
                }
            }
        }
        Some(replayed)
    }

    /// The exporting layers (spans and events), filtered: internals never,
    /// events at INFO and above, progress updates as phase spans only; plus
    /// the hook that ties operation root spans to the exported trace.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let tracer = self.tracer_provider.tracer(SCOPE_NAME);
        let spans = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_threads(false)
            .with_filter(filter_fn(filter::exportable));
        let logs = logs::ParentCorrelated {
            inner: OpenTelemetryTracingBridge::new(&self.logger_provider),
        }
        .with_filter(filter_fn(filter::exportable_log).and(LevelFilter::INFO));
        let link = OperationSpanLink::new(|span, root| {
            ids::link_operation_span(span, root);
        });
        spans.and_then(logs).and_then(link)
    }

    /// Starts the daemon's metrics and phase spans: instruments on this
    /// export's meter and spans for servicing phases, both fed from every
    /// record of `bus` by one subscription read on the export runtime, plus
    /// the bus's and the export's own drop gauges.
    pub fn attach_bus(&mut self, bus: &Bus) {
        let meter = self.meter_provider.meter(SCOPE_NAME);
        let metrics = Arc::new(ServicingMetrics::new(
            &meter,
            Some(bus_observer::bus_gauges(bus)),
            Some(Arc::clone(&self.health)),
        ));
        if let Some(runtime) = &self.runtime {
            bus_observer::spawn(bus, Arc::clone(&metrics), runtime.handle());
        }
        self.metrics = Some(metrics);
    }

    /// The meter provider the daemon's instruments live on.
    pub fn meter_provider(&self) -> &SdkMeterProvider {
        &self.meter_provider
    }

    /// Drop counters and outage state.
    pub fn health(&self) -> &Arc<ExportHealth> {
        &self.health
    }

    /// The resolved settings (for the startup log).
    pub fn config(&self) -> &OtlpConfig {
        &self.config
    }

    /// Flushes and stops, waiting at most the configured shutdown timeout.
    /// The SDK's shutdown blocks (and deadlocks when called from a
    /// current-thread runtime), so it runs on helper threads; past the
    /// bound they are abandoned. Returns false when the bound was hit.
    pub fn shutdown(mut self) -> bool {
        let timeout = self.config.shutdown_timeout;
        let deadline = std::time::Instant::now() + timeout;
        // The three flush side by side (a hung traces export must not eat
        // the logs' and metrics' share), each on its own thread.
        let tracer_provider = self.tracer_provider.clone();
        let logger_provider = self.logger_provider.clone();
        let meter_provider = self.meter_provider.clone();
        let flushes: [Box<dyn FnOnce() + Send>; 3] = [
            Box::new(move || drop(tracer_provider.shutdown_with_timeout(timeout))),
            Box::new(move || drop(logger_provider.shutdown_with_timeout(timeout))),
            Box::new(move || drop(meter_provider.shutdown_with_timeout(timeout))),
        ];
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let mut started = 0;
        for flush in flushes {
            let done_tx = done_tx.clone();
            let spawned = std::thread::Builder::new()
                .name("otlp-shutdown".into())
                .spawn(move || {
                    flush();
                    let _ = done_tx.send(());
                });
            started += usize::from(spawned.is_ok());
        }
        let mut finished = started == 3;
        for _ in 0..started {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            finished &= done_rx.recv_timeout(left).is_ok();
        }
        self.health.announce(&self.config.endpoint);
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        finished
    }
}

impl Drop for OtlpExport {
    fn drop(&mut self) {
        // Dropping a runtime inside async code panics; never wait here.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
