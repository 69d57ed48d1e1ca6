//! Legacy bridge (migration aid, deprecated on arrival): a Host
//! Configuration that still sets upstream's `trident.phonehome` or
//! `trident.logstream` gets upstream's JSON reports posted to those URLs
//! for the operation that applies it:
//! - phonehome: `started` when the configuration is accepted, then
//!   `succeeded` or `failed` with the Host Status (YAML) when the operation
//!   completes;
//! - logstream: one POST per log record on the bus;
//! - tracestream (upstream derives its URL from the phonehome URL by
//!   replacing `phonehome` with `tracestream`): one POST per closed span and
//!   per event carrying a `metric_name` field.
//!
//! It is an ordinary bus subscriber that lives for that operation, so the
//! servicing path never waits for it: the endpoints are fed through bounded
//! queues (`poster`), and what cannot be posted is dropped and counted.
//! Its own notices (target [`NOTICE_TARGET`]) are on the bus and stderr and
//! are not forwarded to the logstream.

mod platform;
mod poster;
mod shapes;

use std::sync::{Mutex, PoisonError};

use futures::StreamExt;
use tokio::task::AbortHandle;
use trident_engine::config_accepted::ConfigAccepted;
use trident_host::config::HostConfiguration;
use trident_proto::v1::{
    OperationEvent, OperationRecord, Record, SpanEvent, StatusCode, StreamEvent, WatchOptions,
    record, stream_event,
};
use trident_telemetry::{Bus, Subscription};

use poster::{Legacy, Poster};
use shapes::{MetricContext, PhoneHome, PhoneHomeState};

/// Target of the bridge's own records (deprecation, outages, summaries).
pub const NOTICE_TARGET: &str = "tridentd::legacy_bridge";

/// Reads the current Host Status as YAML, for the final phonehome.
pub use trident_engine::config_accepted::HostStatusYaml;

/// The endpoints a Host Configuration asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Endpoints {
    pub phonehome: Option<String>,
    pub logstream: Option<String>,
    pub tracestream: Option<String>,
}

impl Endpoints {
    /// From `trident.phonehome` / `trident.logstream`; `None` when neither
    /// is set (the common case: no bridge at all).
    pub fn of(hc: &HostConfiguration) -> Option<Endpoints> {
        let phonehome = hc.trident.phonehome.clone().filter(|u| !u.is_empty());
        let logstream = hc.trident.logstream.clone().filter(|u| !u.is_empty());
        if phonehome.is_none() && logstream.is_none() {
            return None;
        }
        // Upstream's rule; a URL without "phonehome" gets no tracestream
        // (upstream would post metrics to the phonehome URL itself).
        let tracestream = phonehome
            .as_deref()
            .filter(|u| u.contains("phonehome"))
            .map(|u| u.replace("phonehome", "tracestream"));
        Some(Endpoints {
            phonehome,
            logstream,
            tracestream,
        })
    }
}

/// The bridge of one daemon: at most one operation bridged at a time (one
/// servicing operation runs at a time).
#[derive(Debug)]
pub struct LegacyBridge {
    bus: Bus,
    active: Mutex<Option<AbortHandle>>,
}

impl LegacyBridge {
    pub fn new(bus: Bus) -> LegacyBridge {
        LegacyBridge {
            bus,
            active: Mutex::new(None),
        }
    }

    /// Bridges operation `operation_id` if `hc` asks for it: logs the
    /// deprecation, posts phonehome `started`, and follows the bus until the
    /// operation completes. Must run inside the tokio runtime.
    pub fn activate(
        &self,
        hc: &HostConfiguration,
        operation_id: &str,
        rpc: &str,
        host_status: HostStatusYaml,
    ) {
        let Some(endpoints) = Endpoints::of(hc) else {
            return;
        };
        tracing::warn!(
            target: NOTICE_TARGET,
            phonehome = endpoints.phonehome.as_deref().unwrap_or(""),
            logstream = endpoints.logstream.as_deref().unwrap_or(""),
            tracestream = endpoints.tracestream.as_deref().unwrap_or(""),
            "trident.phonehome and trident.logstream are deprecated and bridged for migration only: \
             follow the servicing stream and TelemetryService.Watch (gRPC) instead, reach hosts \
             through the reverse-connect proxy (trident-rcp, trident rcp-listen), and export \
             metrics and traces with OTLP"
        );
        // Subscribed before `started` is posted and before this returns, so
        // every later record of the operation reaches the bridge.
        let events = self.bus.subscribe(Subscription {
            options: WatchOptions::default(),
            kinds: Vec::new(),
        });
        let bridged = Bridged {
            operation_id: operation_id.to_owned(),
            phonehome: start(Legacy::PhoneHome, endpoints.phonehome),
            logstream: start(Legacy::LogStream, endpoints.logstream),
            tracestream: start(Legacy::TraceStream, endpoints.tracestream),
            metrics: platform::metric_context(),
            host_status,
        };
        bridged.phone_home(
            PhoneHomeState::Started,
            format!("Trident started {rpc} (operation {operation_id})"),
            None,
        );
        let task = tokio::spawn(bridged.follow(events)).abort_handle();
        let previous = self
            .active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(task);
        if let Some(previous) = previous {
            previous.abort();
        }
    }
}

/// The engine tells the bridge each operation's validated configuration.
impl ConfigAccepted for LegacyBridge {
    fn config_accepted(
        &self,
        hc: &HostConfiguration,
        operation_id: &str,
        rpc: &str,
        host_status: HostStatusYaml,
    ) {
        self.activate(hc, operation_id, rpc, host_status);
    }
}

fn start(stream: Legacy, url: Option<String>) -> Option<Poster> {
    let url = url?;
    Poster::start(stream, url.clone())
        .map_err(|error| {
            tracing::warn!(target: NOTICE_TARGET, stream = stream.as_str(), url = %trident_host::redact::url::redact_url(&url), %error, "legacy stream not started");
        })
        .ok()
}

/// One bridged operation: its endpoints and what every metric carries.
struct Bridged {
    operation_id: String,
    phonehome: Option<Poster>,
    logstream: Option<Poster>,
    tracestream: Option<Poster>,
    metrics: MetricContext,
    host_status: HostStatusYaml,
}

impl Bridged {
    /// Follows the bus until the operation completes; dropping `self` then
    /// closes the streams (each reports what it posted and dropped).
    async fn follow(self, events: futures::stream::BoxStream<'static, StreamEvent>) {
        let mut events = std::pin::pin!(events);
        while let Some(StreamEvent { event }) = events.next().await {
            match event {
                Some(stream_event::Event::Record(record)) if self.forward(&record) => return,
                Some(stream_event::Event::Gap(gap)) => {
                    for poster in [&self.logstream, &self.tracestream].into_iter().flatten() {
                        poster.missed(gap.count);
                    }
                }
                _ => {}
            }
        }
    }

    /// Posts what `record` becomes; true once the operation has completed.
    fn forward(&self, record: &Record) -> bool {
        let timestamp = || shapes::rfc3339(record.timestamp.as_ref());
        match &record.record {
            Some(record::Record::Log(log)) if log.target != NOTICE_TARGET => {
                post_json(&self.logstream, || shapes::log_entry(log, timestamp()));
                if let Some(metric) = self.metrics.event_metric(log, timestamp()) {
                    post_json(&self.tracestream, || metric);
                }
            }
            Some(record::Record::Span(span)) if span.event == SpanEvent::Closed as i32 => {
                post_json(&self.tracestream, || {
                    self.metrics.span_metric(span, timestamp())
                });
            }
            Some(record::Record::Operation(operation))
                if operation.event == OperationEvent::Completed as i32
                    && operation.operation_id == self.operation_id =>
            {
                self.completed(operation);
                return true;
            }
            _ => {}
        }
        false
    }

    fn completed(&self, operation: &OperationRecord) {
        let status = (self.host_status)();
        if operation.result == StatusCode::Success as i32 {
            let message = format!("{} succeeded", operation.rpc);
            self.phone_home(PhoneHomeState::Succeeded, message, status);
        } else {
            let message = operation
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_else(|| format!("{} failed", operation.rpc));
            self.phone_home(PhoneHomeState::Failed, message, status);
        }
    }

    fn phone_home(&self, state: PhoneHomeState, message: String, host_status: Option<String>) {
        post_json(&self.phonehome, || PhoneHome {
            state,
            message,
            host_status,
        });
    }
}

/// Serializes and queues one body, if the stream is on.
fn post_json<T: serde::Serialize>(poster: &Option<Poster>, body: impl FnOnce() -> T) {
    let Some(poster) = poster else {
        return;
    };
    match serde_json::to_string(&body()) {
        Ok(json) => poster.post(json),
        // Our own shapes always serialize; count rather than panic.
        Err(_) => poster.missed(1),
    }
}

#[cfg(test)]
mod tests;
