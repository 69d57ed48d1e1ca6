//! Construction of the tracing subscriber: the daemon's own log (compact
//! lines on stderr, or native journal entries under systemd), filtered by
//! RUST_LOG or `-v`. The telemetry bus layer is added here too, so every
//! span and event of the daemon goes through one registry.

pub mod compact;
pub mod journal;

use std::io::IsTerminal;

use tracing_subscriber::{
    EnvFilter, Layer, filter::LevelFilter, layer::SubscriberExt, util::SubscriberInitExt,
};

use crate::config::{Config, ENV_LOG_FILTER};

/// Filter when RUST_LOG is unset and no `-v` was given. Transport crates
/// stay at warn so a connection does not produce a screen of h2 frames.
/// The OpenTelemetry SDK's own log stays off: it would log every failed
/// export; the OTLP export says once per outage itself (`tridentd::otlp`).
/// Progress updates (`trident::progress`, up to ten a second per phase) are
/// on the bus for clients; the daemon's log keeps only their warnings.
pub const DEFAULT_FILTER: &str = "info,trident::progress=warn,h2=warn,hyper=warn,tower=warn,tonic=warn,opentelemetry=off,opentelemetry_sdk=off,opentelemetry_otlp=off,opentelemetry_http=off";

/// What the telemetry bus records, whatever stderr shows: our own crates
/// (every target starting with `trident`) down to debug, third-party crates
/// (ureq, hyper, h2, rustls...) at info and up only, so their debug chatter
/// never reaches a subscriber's default view. Subscribers choose their own
/// `min_level`; `-v`/RUST_LOG only change what the daemon prints. (The bus
/// layer itself also drops our transport and export internals.)
pub const DEFAULT_BUS_FILTER: &str = "info,trident=debug";
/// Environment variable that replaces [`DEFAULT_BUS_FILTER`] (EnvFilter
/// syntax), e.g. `TRIDENTD_BUS_LOG=debug` to put third-party debug records
/// on the bus when asked for.
pub const ENV_BUS_FILTER: &str = "TRIDENTD_BUS_LOG";
/// Most verbose level the bus ever records (also under ENV_BUS_FILTER).
pub const BUS_MAX_LEVEL: LevelFilter = LevelFilter::DEBUG;

/// Keeps whatever must live as long as logging does (flushes on drop).
#[derive(Debug)]
#[must_use = "dropping the guard ends logging set-up (exporters flush on drop)"]
pub struct ObservabilityGuard {
    /// The telemetry bus; its journal is flushed and closed on drop.
    bus: trident_telemetry::Bus,
    /// OTLP export when configured; flushed (bounded) on drop.
    otlp: Option<trident_otlp::OtlpExport>,
}

impl ObservabilityGuard {
    /// Exports what earlier runs queued for OTLP and did not deliver (from
    /// the journal; see `trident_otlp::delivery`). Call once the stored
    /// secrets are known to the redaction, before serving.
    pub fn replay_undelivered_export(&mut self) {
        let Some(replayed) = self
            .otlp
            .as_mut()
            .and_then(|otlp| otlp.replay_undelivered())
        else {
            return;
        };
        match replayed {
            Ok(done) if done.spans + done.logs + done.left_out.0 + done.left_out.1 > 0 => {
                tracing::info!(
                    spans = done.spans,
                    logs = done.logs,
                    left_out_spans = done.left_out.0,
                    left_out_logs = done.left_out.1,
                    "OTLP export: records of earlier runs not delivered yet, exported from the journal"
                )
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(%error, "OTLP export: cannot read the journal to export what earlier runs did not deliver")
            }
        }
    }
}

impl Drop for ObservabilityGuard {
    fn drop(&mut self) {
        if let Some(otlp) = self.otlp.take() {
            otlp.shutdown();
        }
        self.bus.shutdown();
    }
}

/// What logging set-up hands to the rest of the daemon: the bus every span
/// and event now goes to (serve it, emit on it) and the guard that flushes
/// it at exit. Like a console builder that returns its layer and its server
/// together, the bus that is served is the bus the layer feeds.
#[derive(Debug)]
pub struct Observability {
    /// The bus the installed layer writes to.
    pub bus: trident_telemetry::Bus,
    /// Flushes exporters and the journal when dropped.
    pub guard: ObservabilityGuard,
}

/// Logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ObservabilityError {
    /// Another global tracing subscriber is installed: the bus would not
    /// receive the daemon's records, so serving it would mislead.
    #[error("a global tracing subscriber is already installed; the telemetry bus would stay empty")]
    SubscriberAlreadySet,
}

/// The telemetry bus from the daemon's flags, journaling to STATE_DIR/journal.
/// An unusable journal directory keeps the bus in memory only (said on stderr).
fn telemetry_bus(config: &Config) -> trident_telemetry::Bus {
    let bus_config = config.bus_config();
    trident_telemetry::Bus::new(bus_config.clone()).unwrap_or_else(|error| {
        eprintln!(
            "tridentd: telemetry journal unavailable, keeping records in memory only: {error}"
        );
        trident_telemetry::Bus::in_memory(bus_config)
    })
}

fn filter(config: &Config) -> EnvFilter {
    if let Ok(filter) = EnvFilter::try_from_env(ENV_LOG_FILTER) {
        return filter;
    }
    let base = match config.verbose {
        0 => DEFAULT_FILTER,
        1 => {
            "debug,h2=info,hyper=info,tower=info,tonic=info,opentelemetry=info,opentelemetry_sdk=info,opentelemetry_otlp=info,opentelemetry_http=info"
        }
        _ => "trace",
    };
    EnvFilter::new(base)
}

/// The bus's filter: ENV_BUS_FILTER when set and valid, else the default.
fn bus_filter() -> EnvFilter {
    EnvFilter::try_from_env(ENV_BUS_FILTER).unwrap_or_else(|_| EnvFilter::new(DEFAULT_BUS_FILTER))
}

/// Installs the global subscriber. Call once, first thing in `main`.
pub fn init(config: &Config) -> Result<Observability, ObservabilityError> {
    // Under systemd: native journal entries; otherwise (or when journald
    // does not answer) compact lines on stderr. Exactly one of the two.
    let journald = journal::layer();
    let fmt = journald.is_none().then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            // Colours only on a terminal; pipes get plain text.
            .with_ansi(std::io::stderr().is_terminal())
            .event_format(compact::CompactLine)
    });
    let bus = telemetry_bus(config);
    let otlp = trident_otlp::OtlpExport::from_flags(
        &config.otlp_flags(),
        env!("CARGO_PKG_VERSION"),
        &bus,
        // Known Host Configuration secrets and PEM private key bodies.
        trident_host::redact::known::redact_known,
    )
    .map_err(|error| eprintln!("tridentd: OTLP export off: {error}"))
    .ok()
    .flatten();
    // Per-layer filters: the stderr verbosity must not decide what the bus
    // (and so every subscriber and the journal) receives.
    tracing_subscriber::registry()
        .with(fmt.with_filter(filter(config)))
        .with(journald.with_filter(filter(config)))
        .with(
            bus.layer()
                .with_filter(BUS_MAX_LEVEL)
                .with_filter(bus_filter()),
        )
        .with(otlp.as_ref().map(|export| export.layer()))
        .try_init()
        .map_err(|_| ObservabilityError::SubscriberAlreadySet)?;
    if let Some(export) = &otlp {
        let settings = export.config();
        tracing::info!(endpoint = %settings.endpoint, protocol = settings.protocol.as_str(), "OTLP export on");
    }
    Ok(Observability {
        guard: ObservabilityGuard {
            bus: bus.clone(),
            otlp,
        },
        bus,
    })
}
