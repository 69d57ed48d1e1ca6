//! The `trident` CLI as a library: argument definitions, the daemon client,
//! the commands, what the servicing commands share, the live view of an
//! operation, and the pure progress renderers (tested without a terminal).

pub mod args;
pub mod client;
pub mod commands;
pub mod ctx;
pub mod cursor;
pub mod exit;
pub mod live;
pub mod output;
pub mod render;
pub mod report;
pub mod servicing;
