//! The unary methods of `TelemetryService`: prost-decoded request, an
//! answer (read from the bus, or from the last-error fallback),
//! prost-encoded response.

use std::convert::Infallible;
use std::future::Future;
use std::task::{Context, Poll};

use futures::FutureExt;
use futures::future::BoxFuture;
use prost::Message;
use tonic::body::Body;
use tonic::{Request, Response, Status};

/// One unary method: `answer` turns the decoded request into the response.
struct UnaryMethod<F> {
    answer: F,
}

impl<R, T, F, Fut> tower::Service<Request<R>> for UnaryMethod<F>
where
    F: FnMut(R) -> Fut,
    Fut: Future<Output = Result<T, Status>> + Send + 'static,
{
    type Response = Response<T>;
    type Error = Status;
    type Future = BoxFuture<'static, Result<Response<T>, Status>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<R>) -> Self::Future {
        (self.answer)(request.into_inner())
            .map(|answer| answer.map(Response::new))
            .boxed()
    }
}

/// Answers one unary call of `TelemetryService` with `answer`.
pub(super) fn serve_unary<R, T, F, Fut>(
    request: http::Request<Body>,
    answer: F,
) -> BoxFuture<'static, Result<http::Response<Body>, Infallible>>
where
    R: Message + Default + Send + 'static,
    T: Message + Send + 'static,
    F: FnMut(R) -> Fut + Send + 'static,
    Fut: Future<Output = Result<T, Status>> + Send + 'static,
{
    Box::pin(async move {
        let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<T, R>::default());
        Ok(grpc.unary(UnaryMethod { answer }, request).await)
    })
}
