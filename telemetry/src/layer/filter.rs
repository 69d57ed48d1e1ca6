//! The per-layer filter that keeps our own transport and export internals
//! off the bus, so serving the bus can never feed the bus in a loop.

use tracing::Metadata;
use tracing::subscriber::Interest;
use tracing_subscriber::layer::{Context, Filter};

/// Targets (and their submodules) that never feed the bus.
pub const INTERNAL_TARGETS: &[&str] = &[
    "tonic",
    "h2",
    "hyper",
    "hyper_util",
    "tower",
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
    "tracing_opentelemetry",
    "trident_telemetry",
    "trident_otlp",
];

/// Whether a target is one of ours-internal (exact crate or a submodule).
pub fn is_internal(target: &str) -> bool {
    INTERNAL_TARGETS.iter().any(|internal| {
        target
            .strip_prefix(internal)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

/// Filter excluding [`INTERNAL_TARGETS`]; its interest is cached per
/// callsite, so excluded callsites cost nothing after their first hit.
#[derive(Clone, Copy, Debug, Default)]
pub struct InternalTargets;

impl<S> Filter<S> for InternalTargets {
    fn enabled(&self, metadata: &Metadata<'_>, _: &Context<'_, S>) -> bool {
        !is_internal(metadata.target())
    }

    fn callsite_enabled(&self, metadata: &'static Metadata<'static>) -> Interest {
        if is_internal(metadata.target()) {
            Interest::never()
        } else {
            Interest::always()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_internal;

    #[test]
    fn transport_and_export_targets_are_internal_but_lookalikes_are_not() {
        for internal in [
            "tonic",
            "tonic::transport",
            "h2::codec",
            "hyper_util::client",
            "opentelemetry_sdk::trace",
            "trident_telemetry::bus",
        ] {
            assert!(is_internal(internal), "{internal}");
        }
        for ours in [
            "tridentd::server",
            "script::setup",
            "h2o",
            "towerd",
            "trident::progress",
        ] {
            assert!(!is_internal(ours), "{ours}");
        }
    }
}
