//! The unary methods of `TelemetryService`: prost-decoded request, an
//! answer read from the bus, prost-encoded response.

use std::convert::Infallible;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use prost::Message;
use tonic::body::Body;
use tonic::{Request, Response, Status};

use crate::bus::Bus;

/// Reads the answer to a unary request from the bus.
type Answer<R, T> = fn(&Bus, R) -> T;

/// One unary method over a bus.
struct UnaryMethod<R, T> {
    bus: Bus,
    answer: Answer<R, T>,
}

impl<R, T> tower::Service<Request<R>> for UnaryMethod<R, T> {
    type Response = Response<T>;
    type Error = Status;
    type Future = std::future::Ready<Result<Response<T>, Status>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<R>) -> Self::Future {
        let answer = (self.answer)(&self.bus, request.into_inner());
        std::future::ready(Ok(Response::new(answer)))
    }
}

/// Answers one unary call of `TelemetryService`.
pub(super) fn serve_unary<R, T>(
    bus: Bus,
    request: http::Request<Body>,
    answer: Answer<R, T>,
) -> BoxFuture<'static, Result<http::Response<Body>, Infallible>>
where
    R: Message + Default + Send + 'static,
    T: Message + Send + 'static,
{
    Box::pin(async move {
        let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::<T, R>::default());
        Ok(grpc.unary(UnaryMethod { bus, answer }, request).await)
    })
}
