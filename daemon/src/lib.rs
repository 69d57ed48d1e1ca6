//! tridentd: the Trident servicing daemon.
//!
//! The binary (`main.rs`) parses [`config::Config`], calls
//! [`server::prepare`] (root check, socket), sets up logging
//! ([`observability::init`], which returns the telemetry bus) and hands
//! both to [`app::run`], the composition root. Layers point one way:
//! `app` → `grpc` → the engine (the `trident-engine` crate); `app` →
//! `server`, `legacy_bridge`; none of them import `app`, and `server` and
//! the engine do not know each other (the compiler sees to it that the
//! engine does not know the daemon at all).

pub mod agent_config;
pub mod app;
pub mod config;
pub mod grpc;
pub mod legacy_bridge;
pub mod observability;
pub mod rcp_agent_state;
pub mod server;
pub mod state_lock;

/// Version of this build of tridentd.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Short git commit this build came from ("unknown" outside git).
pub const GIT_COMMIT: &str = env!("TRIDENTD_GIT_COMMIT");
