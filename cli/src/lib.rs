//! The `trident` CLI as a library: argument definitions, the daemon client,
//! the commands, and the pure progress renderers (tested without a terminal).

pub mod args;
pub mod client;
pub mod commands;
pub mod cursor;
pub mod exit;
pub mod output;
pub mod render;
