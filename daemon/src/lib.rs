//! tridentd: the Trident servicing daemon.
//!
//! The binary (`main.rs`) only parses [`config::Config`], calls
//! [`server::prepare`] (root check, socket), sets up logging and calls
//! [`server::run`]. Background work that must keep the daemon
//! from exiting as idle holds a [`server::idle::ActivityGuard`] taken from
//! [`server::ServerContext::activity`].

pub mod agent_config;
pub mod config;
pub mod server;
pub mod servicing;

pub use server::idle::{Activity, ActivityGuard};
pub use server::shutdown::ShutdownHooks;
