//! The integration tests of `trident-telemetry`, one binary: one module per
//! former test file, and `support`, a bus served over a real Unix socket.

mod emit_api;
mod gaps_and_journal;
mod journal_handover;
mod overall_progress;
mod support;
mod watch_over_uds;
