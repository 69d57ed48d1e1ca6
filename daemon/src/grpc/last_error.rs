//! The datastore side of `TelemetryService.GetLastError`: when the bus has
//! no error record, the Host Status's `lastError` answers. After an A/B
//! commit fails on the new volume the host comes back on the old one,
//! whose bus journal never saw that failure; the datastore it is handed
//! back records it.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tonic::Status;
use trident_engine::machinery::Engine;
use trident_proto::v1::ErrorReport;
use trident_telemetry::LastErrorFallback;

use super::error_status::to_status;

/// Reads `lastError` from the engine's datastore, as a bus `ErrorReport`.
#[derive(Debug, Clone)]
pub struct HostStatusLastError {
    engine: Arc<Engine>,
}

impl HostStatusLastError {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }
}

impl LastErrorFallback for HostStatusLastError {
    fn last_error(&self) -> BoxFuture<'static, Result<Option<ErrorReport>, Status>> {
        let engine = Arc::clone(&self.engine);
        async move {
            // Same reader lock as the other Host Status queries: never a
            // half-switched datastore.
            let _read = engine.connection_lock.read().await;
            let status = engine.host_status().map_err(to_status)?;
            Ok(status.last_error.as_ref().map(ErrorReport::from))
        }
        .boxed()
    }
}
