//! Building the three SDK providers of an export: one OTLP exporter per
//! signal (gRPC or HTTP/protobuf), each wrapped so its losses are counted,
//! behind a bounded batch processor (traces, logs) or a periodic reader
//! (metrics). Traces and logs pass the redaction boundary ([`crate::redact`])
//! before anything else.

use std::sync::Arc;

use opentelemetry_otlp::{
    LogExporter, MetricExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{BatchLogProcessor, SdkLoggerProvider};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

use crate::OtlpError;
use crate::config::{OtlpConfig, OtlpProtocol};
use crate::delivery::DeliveryCursor;
use crate::health::{ExportHealth, Signal};
use crate::http_client::RuntimeHttpClient;
use crate::ids::HintedIdGenerator;
use crate::pipeline::{AccountedExporter, BoundedLogProcessor, BoundedSpanProcessor, QueueGauge};
use crate::redact::{Redact, RedactingLogProcessor, RedactingSpanProcessor};

pub(crate) type Providers = (SdkTracerProvider, SdkLoggerProvider, SdkMeterProvider);

/// The delivery cursors of traces and logs, when the export keeps them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Cursors {
    pub traces: Option<Arc<DeliveryCursor>>,
    pub logs: Option<Arc<DeliveryCursor>>,
}

/// The providers of traces, logs and metrics per `config`. Call inside the
/// export runtime's context: channels and clients bind to it.
pub(crate) fn build_providers(
    config: &OtlpConfig,
    resource: Resource,
    health: &Arc<ExportHealth>,
    runtime: &tokio::runtime::Handle,
    redact: Redact,
    cursors: &Cursors,
) -> Result<Providers, OtlpError> {
    // Every exporter first: a bad setting fails before any pipeline starts.
    let exporters = Exporters { config, runtime };
    let (spans, logs, metrics) = (exporters.spans()?, exporters.logs()?, exporters.metrics()?);
    let tracer_provider = tracer_provider(
        config,
        spans,
        resource.clone(),
        health,
        (redact, cursors.traces.clone()),
    );
    let logger_provider = logger_provider(
        config,
        logs,
        resource.clone(),
        health,
        (redact, cursors.logs.clone()),
    );
    let meter_provider = meter_provider(config, metrics, resource, health);
    Ok((tracer_provider, logger_provider, meter_provider))
}

/// Builds each signal's OTLP exporter for the configured protocol.
struct Exporters<'a> {
    config: &'a OtlpConfig,
    runtime: &'a tokio::runtime::Handle,
}

impl Exporters<'_> {
    /// The HTTP client of the `http/protobuf` exporters, doing its I/O on
    /// the export runtime.
    fn http_client(&self) -> RuntimeHttpClient {
        RuntimeHttpClient::new(
            opentelemetry_http::hyper::HyperClient::with_default_connector(
                self.config.timeout,
                None,
            ),
            self.runtime.clone(),
        )
    }

    fn spans(&self) -> Result<SpanExporter, OtlpError> {
        let config = self.config;
        match config.protocol {
            OtlpProtocol::Grpc => SpanExporter::builder()
                .with_tonic()
                .with_endpoint(config.signal_url("traces"))
                .with_timeout(config.timeout)
                .build(),
            OtlpProtocol::HttpProtobuf => SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(self.http_client())
                .with_endpoint(config.signal_url("traces"))
                .with_timeout(config.timeout)
                .build(),
        }
        .map_err(exporter_error("traces"))
    }

    fn logs(&self) -> Result<LogExporter, OtlpError> {
        let config = self.config;
        match config.protocol {
            OtlpProtocol::Grpc => LogExporter::builder()
                .with_tonic()
                .with_endpoint(config.signal_url("logs"))
                .with_timeout(config.timeout)
                .build(),
            OtlpProtocol::HttpProtobuf => LogExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(self.http_client())
                .with_endpoint(config.signal_url("logs"))
                .with_timeout(config.timeout)
                .build(),
        }
        .map_err(exporter_error("logs"))
    }

    fn metrics(&self) -> Result<MetricExporter, OtlpError> {
        let config = self.config;
        match config.protocol {
            OtlpProtocol::Grpc => MetricExporter::builder()
                .with_tonic()
                .with_endpoint(config.signal_url("metrics"))
                .with_timeout(config.timeout)
                .with_temporality(Temporality::Cumulative)
                .build(),
            OtlpProtocol::HttpProtobuf => MetricExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_http_client(self.http_client())
                .with_endpoint(config.signal_url("metrics"))
                .with_timeout(config.timeout)
                .with_temporality(Temporality::Cumulative)
                .build(),
        }
        .map_err(exporter_error("metrics"))
    }
}

fn exporter_error(
    signal: &'static str,
) -> impl FnOnce(opentelemetry_otlp::ExporterBuildError) -> OtlpError {
    move |source| OtlpError::Exporter { signal, source }
}

/// Spans: a bounded batch processor (drops counted) with the configured
/// sampler and the id generator that lets bus and export share trace ids.
fn tracer_provider(
    config: &OtlpConfig,
    exporter: SpanExporter,
    resource: Resource,
    health: &Arc<ExportHealth>,
    (redact, cursor): (Redact, Option<Arc<DeliveryCursor>>),
) -> SdkTracerProvider {
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(config.span_queue)
        .with_max_export_batch_size(config.max_batch.min(config.span_queue))
        .with_scheduled_delay(config.span_delay)
        .build();
    let queue = QueueGauge::new(config.span_queue);
    let processor = BoundedSpanProcessor {
        inner: BatchSpanProcessor::builder(AccountedExporter {
            inner: exporter,
            queue: Some(queue.clone()),
            health: Arc::clone(health),
            signal: Signal::Traces,
            cursor: cursor.clone(),
        })
        .with_batch_config(batch)
        .build(),
        queue,
        health: Arc::clone(health),
        cursor,
    };
    let processor = RedactingSpanProcessor {
        inner: processor,
        redact,
    };
    SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(config.sampler.to_sampler())
        .with_id_generator(HintedIdGenerator::default())
        .with_resource(resource)
        .build()
}

/// Log records: a bounded batch processor (drops counted).
fn logger_provider(
    config: &OtlpConfig,
    exporter: LogExporter,
    resource: Resource,
    health: &Arc<ExportHealth>,
    (redact, cursor): (Redact, Option<Arc<DeliveryCursor>>),
) -> SdkLoggerProvider {
    let queue = QueueGauge::new(config.log_queue);
    let batch = opentelemetry_sdk::logs::BatchConfigBuilder::default()
        .with_max_queue_size(config.log_queue)
        .with_max_export_batch_size(config.max_batch.min(config.log_queue))
        .with_scheduled_delay(config.log_delay)
        .build();
    let processor = BoundedLogProcessor {
        inner: BatchLogProcessor::builder(AccountedExporter {
            inner: exporter,
            queue: Some(queue.clone()),
            health: Arc::clone(health),
            signal: Signal::Logs,
            cursor: cursor.clone(),
        })
        .with_batch_config(batch)
        .build(),
        queue,
        health: Arc::clone(health),
        cursor,
    };
    let processor = RedactingLogProcessor::new(processor, redact);
    SdkLoggerProvider::builder()
        .with_log_processor(processor)
        .with_resource(resource)
        .build()
}

/// Metrics: collected and exported every `metrics_interval` (failed
/// collections counted).
fn meter_provider(
    config: &OtlpConfig,
    exporter: MetricExporter,
    resource: Resource,
    health: &Arc<ExportHealth>,
) -> SdkMeterProvider {
    let reader = PeriodicReader::builder(AccountedExporter {
        inner: exporter,
        queue: None,
        health: Arc::clone(health),
        signal: Signal::Metrics,
        cursor: None,
    })
    .with_interval(config.metrics_interval)
    .build();
    SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource)
        .build()
}
