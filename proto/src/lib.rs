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

/// Encoded `FileDescriptorSet` of every Trident .proto file (and the
/// well-known types they import), for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/trident_descriptor.bin"));
