//! The `rcp` test binary of the end-to-end tests: one module per former
//! test file.
//!
//! The reverse-connect proxy: real `tridentd`, `trident-rcp` agents and
//! `trident rcp-listen` on loopback with certificates made by the test.

mod rcp_agent_state;
mod rcp_duplicate_identity;
mod rcp_key_material;
mod rcp_listen_stop;
mod rcp_reconnect;
mod rcp_refusals;
mod rcp_tunnel;
mod rcp_upstream_go;
mod rcp_upstream_protocol;
