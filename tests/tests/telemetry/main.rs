//! The `telemetry` test binary of the end-to-end tests: one module per former
//! test file.
//!
//! Telemetry through a real daemon: the bus, the journal across restarts and
//! boots, traces, OTLP export against a real receiver, the legacy
//! phonehome/logstream bridge, and the last error when the state directory
//! fills up or the datastore is damaged.

mod datastore_damaged_while_serving;
mod last_error_fallback;
mod legacy_bridge;
mod otlp_across_restart;
mod otlp_export;
mod otlp_outage;
mod otlp_progress;
mod otlp_servicing;
mod state_dir_full;
mod telemetry_boots;
mod telemetry_daemon;
mod telemetry_faults;
mod telemetry_restart;
mod telemetry_trace_across_reboot;
mod upstream_log;
