//! The `daemon` test binary of the end-to-end tests: one module per former
//! test file.
//!
//! The daemon itself: its sockets (systemd activation, the upstream socket,
//! the peer check, other users via `setpriv`), handshake, idle exit,
//! journal, one daemon per state directory, request decoding, hostile
//! socket input, and the one-way layering of the daemon's and the CLI's
//! modules.

mod bad_input_socket;
mod daemon_access;
mod daemon_activation;
mod daemon_disk_flag;
mod daemon_handshake;
mod daemon_idle;
mod daemon_journal;
mod daemon_request_decoding;
mod daemon_services;
mod daemon_socket;
mod daemon_state_lock;
mod module_layers;
mod upstream_socket;
