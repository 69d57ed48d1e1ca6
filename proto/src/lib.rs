//! The Trident gRPC API.
//!
//! `trident.v1` is the stable, wire-compatible upstream surface plus our
//! additions (the telemetry service and records); `trident.v1preview` is the
//! upstream preview surface. See `proto/README.md` for the evolution rules.

#[cfg(feature = "client")]
pub mod client;

/// The stable package `trident.v1`.
#[allow(missing_debug_implementations, clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("trident.v1");
}

/// The preview package `trident.v1preview`.
#[allow(missing_debug_implementations, clippy::all, clippy::pedantic)]
pub mod v1preview {
    tonic::include_proto!("trident.v1preview");
}

/// Request metadata header by which a client opts in to our additions in
/// upstream messages (rule 6 of `proto/README.md`: new behaviour is opt-in).
/// Its value is a comma-separated list of addition names, e.g.
/// `error-report`; names the daemon does not know are ignored.
pub const ADDITIONS_HEADER: &str = "trident-additions";

/// Addition name (in [`ADDITIONS_HEADER`]): servicing streams carry the
/// operation's full error report (`ServicingResponse.error_report`).
pub const ADDITION_ERROR_REPORT: &str = "error-report";

/// Encoded `FileDescriptorSet` of every Trident .proto file (and the
/// well-known types they import), for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/trident_descriptor.bin"));
