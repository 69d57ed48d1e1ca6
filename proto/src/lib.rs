//! The Trident gRPC API.
//!
//! `trident.v1` is the stable, wire-compatible upstream surface plus our
//! additions (the telemetry service and records); `trident.v1preview` is the
//! upstream preview surface. See `proto/README.md` for the evolution rules.

#[cfg(feature = "client")]
pub mod client;

/// The stable package `trident.v1`.
// Generated from the .proto comments, which quote forms like "sha384:<hex>".
#[allow(
    missing_debug_implementations,
    clippy::all,
    clippy::pedantic,
    rustdoc::invalid_html_tags
)]
pub mod v1 {
    tonic::include_proto!("trident.v1");
}

/// The preview package `trident.v1preview`.
// Generated from the .proto comments, which quote forms like "sha384:<hex>".
#[allow(
    missing_debug_implementations,
    clippy::all,
    clippy::pedantic,
    rustdoc::invalid_html_tags
)]
pub mod v1preview {
    tonic::include_proto!("trident.v1preview");
}

/// Request metadata header by which a client opts in to our additions in
/// upstream messages (rule 6 of `proto/README.md`: new behaviour is opt-in).
/// Its value is a comma-separated list of addition names (any of the
/// `ADDITION_*` constants, case-insensitive), e.g. `progress, ids`; the
/// header may repeat. Names the daemon does not know are ignored, so a newer
/// client keeps working against an older daemon. Without the header every
/// upstream message is exactly what upstream Trident sends: none of our
/// fields numbered 1000 and up is set, and a servicing stream is one
/// `Started`, `Log` messages and one `Completed`.
pub const ADDITIONS_HEADER: &str = "trident-additions";

/// Addition name (in [`ADDITIONS_HEADER`]): servicing streams carry live
/// progress (`ServicingResponse.progress`, field 1000) between `Started`
/// and `Completed`. Upstream's Rust client fails an operation on a message
/// whose `response` it does not know, so this is never sent by default.
pub const ADDITION_PROGRESS: &str = "progress";

/// Addition name (in [`ADDITIONS_HEADER`]): our identifying and diagnostic
/// fields numbered 1000 and up inside upstream's messages are filled:
/// `Started.operation_id` / `cursor` / `trace_id`, `TridentError.context` /
/// `causes` / `operation_id` / `trace_id` / `timestamp` (in `Completed`,
/// `GetLastError` and `ValidateHostConfiguration`) and
/// `VersionResponse.git_commit` / `boot_id`.
pub const ADDITION_IDS: &str = "ids";

/// Addition name (in [`ADDITIONS_HEADER`]): servicing streams carry the
/// operation's full error report (`ServicingResponse.error_report`, field
/// 1001) before `Completed` when it fails.
pub const ADDITION_ERROR_REPORT: &str = "error-report";

/// Addition name (in [`ADDITIONS_HEADER`]): a `Completed` that says
/// `REBOOT_STARTED` also says what the daemon does about the reboot
/// (`Completed.reboot_action`, field 1000): performed, only recorded, or
/// nothing (`tridentd --reboot systemd|record|none`).
pub const ADDITION_REBOOT_ACTION: &str = "reboot-action";
/// Addition name (in [`ADDITIONS_HEADER`]): `ValidateHostConfiguration`
/// answers with what a valid configuration says that the daemon will
/// ignore (`ValidateHostConfigurationResponse.warnings`, field 1000).
pub const ADDITION_WARNINGS: &str = "warnings";

/// Addition name (in [`ADDITIONS_HEADER`]): servicing streams say what
/// they did not carry when the daemon's buffer for the stream overflowed
/// (`ServicingResponse.drops`, field 1003).
pub const ADDITION_DROPS: &str = "drops";

/// Addition name (in [`ADDITIONS_HEADER`]): every addition this daemon
/// knows, now and in later releases. The `trident` CLI sends it.
pub const ADDITION_ALL: &str = "all";

/// Encoded `FileDescriptorSet` of every Trident .proto file (and the
/// well-known types they import), for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/trident_descriptor.bin"));
