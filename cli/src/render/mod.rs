//! Live progress: a state model fed by stream events, and pure renderers
//! (tty frames, plain lines, JSON lines) tested without a terminal.

pub mod error;
pub mod event;
pub mod format;
pub mod json;
pub mod model;
pub mod overall;
pub mod phase;
pub mod plain;
pub mod summary;
pub mod tty;
