//! OTLP/HTTP client that does its I/O on the export runtime.
//!
//! The SDK's batch processors call exporters from plain threads, while the
//! hyper client needs a Tokio context for its timer and connection tasks; so
//! each request is spawned onto the export runtime and awaited from there.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use opentelemetry_http::hyper::HyperClient;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use tokio::runtime::Handle;

/// hyper client pinned to a runtime.
pub struct RuntimeHttpClient {
    inner: Arc<HyperClient>,
    runtime: Handle,
}

impl RuntimeHttpClient {
    pub fn new(inner: HyperClient, runtime: Handle) -> Self {
        Self {
            inner: Arc::new(inner),
            runtime,
        }
    }
}

impl fmt::Debug for RuntimeHttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeHttpClient").finish_non_exhaustive()
    }
}

impl HttpClient for RuntimeHttpClient {
    fn send_bytes<'life0, 'async_trait>(
        &'life0 self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let inner = Arc::clone(&self.inner);
        let task = self
            .runtime
            .spawn(async move { inner.send_bytes(request).await });
        Box::pin(async move { task.await.map_err(|join| Box::new(join) as HttpError)? })
    }
}
