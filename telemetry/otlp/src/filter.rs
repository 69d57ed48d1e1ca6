//! What never goes to the export: the daemon's own transport and export
//! internals (no telemetry-induced telemetry).

use tracing::Metadata;

/// Target prefixes kept out of exported spans and logs.
pub const INTERNAL_TARGETS: &[&str] = &[
    "tonic",
    "h2",
    "hyper",
    "hyper_util",
    "tower",
    "tower_http",
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
    "opentelemetry_http",
    "tracing_opentelemetry",
    "opentelemetry_appender_tracing",
    "trident_otlp",
    "tridentd::otlp",
    "trident_telemetry::bus",
];

/// True when `target` is one of [`INTERNAL_TARGETS`] or a module below one.
pub fn is_internal_target(target: &str) -> bool {
    INTERNAL_TARGETS.iter().any(|prefix| {
        target == *prefix
            || target
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with("::"))
    })
}

/// Per-layer filter of the exported spans.
pub fn exportable(metadata: &Metadata<'_>) -> bool {
    !is_internal_target(metadata.target())
}

/// Per-layer filter of the exported log records: also leaves out progress
/// updates, which the export carries as phase spans and metrics instead.
pub fn exportable_log(metadata: &Metadata<'_>) -> bool {
    exportable(metadata) && metadata.target() != trident_telemetry::progress::PROGRESS_TARGET
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn transport_and_export_internals_are_not_exported() {
        for target in [
            "h2::codec",
            "tonic::transport::server",
            "opentelemetry_sdk",
            "hyper_util::client::legacy",
            "trident_otlp::health",
            "tridentd::otlp",
        ] {
            assert!(is_internal_target(target), "{target}");
        }
        for target in [
            "tridentd::servicing",
            "h2o",
            "script::install",
            "trident_telemetry::operation",
        ] {
            assert!(!is_internal_target(target), "{target}");
        }
    }
}
