//! `GetLastError`: the bus's last error record when it has one, else what
//! the daemon's fallback (its datastore's Host Status `lastError`) holds.
//! The bus of a volume only saw errors of its own runs; an A/B commit that
//! failed on the other volume reaches this one only through the datastore
//! it is handed back, so every client gets that error from one RPC.

use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;
use tonic::Status;
use trident_proto::v1::{ErrorReport, GetLastErrorResponse, LastErrorOrigin};

use crate::bus::Bus;

/// Where `GetLastError` looks when the bus has no error record.
pub trait LastErrorFallback: Debug + Send + Sync + 'static {
    /// The stored last error as a report, `None` when there is none. A
    /// failure to read it is already a `Status` (the implementor maps its
    /// own errors in its one place).
    fn last_error(&self) -> BoxFuture<'static, Result<Option<ErrorReport>, Status>>;
}

/// The answer to `GetLastError`.
pub(super) async fn answer(
    bus: Bus,
    fallback: Option<Arc<dyn LastErrorFallback>>,
) -> Result<GetLastErrorResponse, Status> {
    if let Some(error) = bus.last_error() {
        return Ok(response(Some(error), LastErrorOrigin::Bus));
    }
    let stored = match fallback {
        Some(fallback) => fallback.last_error().await?,
        None => None,
    };
    Ok(response(stored, LastErrorOrigin::HostStatus))
}

fn response(error: Option<ErrorReport>, origin: LastErrorOrigin) -> GetLastErrorResponse {
    let origin = match error {
        Some(_) => origin,
        None => LastErrorOrigin::Unspecified,
    };
    GetLastErrorResponse {
        error,
        origin: origin as i32,
    }
}
