//! Telemetry of tridentd: a `tracing` layer that turns spans and events into
//! typed records on one in-process bus, the bus itself (a bounded ring shared
//! by all subscribers, plus an on-disk journal of servicing operations), the
//! `TelemetryService` that streams it, and the emit API the servicing engine
//! uses (operations, progress phases, error reports).
//!
//! Wiring in the daemon:
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! let bus = trident_telemetry::Bus::new(trident_telemetry::BusConfig::with_state_dir("/var/lib/trident"))?;
//! let subscriber = tracing_subscriber::registry().with(bus.layer());
//! tracing::subscriber::set_global_default(subscriber).ok();
//! // router.add_service(bus.service());  ...  on exit: bus.shutdown();
//! # Ok::<(), trident_telemetry::TelemetryError>(())
//! ```

pub mod bus;
pub mod config;
pub mod error;
pub mod ids;
pub mod interrupted;
pub mod journal;
pub mod layer;
mod open;
pub mod operation;
pub mod overall;
pub mod progress;
pub mod record;
pub mod service;
pub mod span_link;
pub mod upstream_log;

pub use bus::{Bus, Subscription};
pub use config::BusConfig;
pub use error::TelemetryError;
pub use ids::TraceParent;
pub use layer::BusLayer;
pub use service::{LastErrorFallback, TelemetryGrpc};
pub use span_link::OperationSpanLink;
