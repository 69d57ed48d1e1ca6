//! The `cli` test binary of the end-to-end tests: one module per former
//! test file.
//!
//! The real `trident` CLI against a real daemon (and offline): its commands,
//! servicing with live progress, the terminal view, reports, remote reboots,
//! upstream's CLI surface, and the e2e PKI tool.

mod cli_commands;
mod cli_offline;
mod cli_remote_reboot;
mod cli_report;
mod cli_servicing;
mod cli_start_network;
mod cli_terminal;
mod cli_upstream_surface;
mod cli_validate_storage;
mod e2e_pki_tool;
mod operator_view;
