//! What tridentd serves over gRPC: the router (every service registered in
//! one place), the servicing handlers and StreamDisk, the servicing
//! response stream built from the bus, and the one mapping of the daemon's
//! errors to gRPC statuses. The transport that carries it is `crate::server`.

pub mod additions;
pub mod error_status;
pub mod host_status;
pub mod last_error;
pub mod router;
pub mod servicing;
pub mod servicing_stream;
pub mod stream_disk;
pub mod version;
