//! `ReadUpstreamLog`: upstream Trident's full log, read on a blocking
//! thread of its own and handed over through a channel of two responses,
//! so the reader waits for the client and nothing else waits for the
//! reader (the bus and its producers never see it).

use std::convert::Infallible;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio_stream::wrappers::ReceiverStream;
use tonic::body::Body;
use tonic::{Request, Response, Status};
use trident_proto::v1::{ReadUpstreamLogRequest, ReadUpstreamLogResponse, UpstreamLogSummary};

use crate::upstream_log;

type ResponseStream =
    Pin<Box<dyn Stream<Item = Result<ReadUpstreamLogResponse, Status>> + Send + 'static>>;

/// The method, for upstream's log at `path` (None: the daemon reads none,
/// so the answer is only a summary saying "not found").
struct ReadMethod {
    path: Option<Arc<Path>>,
}

impl tower::Service<Request<ReadUpstreamLogRequest>> for ReadMethod {
    type Response = Response<ResponseStream>;
    type Error = Status;
    type Future = std::future::Ready<Result<Self::Response, Status>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReadUpstreamLogRequest>) -> Self::Future {
        let request = request.into_inner();
        let path = self.path.clone();
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        tokio::task::spawn_blocking(move || {
            let summary = match &path {
                Some(path) => upstream_log::read(path, &request, |records| {
                    let response = ReadUpstreamLogResponse {
                        records,
                        summary: None,
                    };
                    // Err: the client went away; stop reading.
                    tx.blocking_send(Ok(response)).is_ok()
                }),
                None => UpstreamLogSummary::default(),
            };
            let last = ReadUpstreamLogResponse {
                records: Vec::new(),
                summary: Some(summary),
            };
            // The client may be gone already; nothing left to do then.
            let _ = tx.blocking_send(Ok(last));
        });
        std::future::ready(Ok(Response::new(Box::pin(ReceiverStream::new(rx)))))
    }
}

/// Streams one `ReadUpstreamLog` call.
pub(super) fn serve(
    path: Option<Arc<Path>>,
    request: http::Request<Body>,
) -> BoxFuture<'static, Result<http::Response<Body>, Infallible>> {
    Box::pin(async move {
        let codec =
            tonic_prost::ProstCodec::<ReadUpstreamLogResponse, ReadUpstreamLogRequest>::default();
        let mut grpc = tonic::server::Grpc::new(codec);
        Ok(grpc.server_streaming(ReadMethod { path }, request).await)
    })
}
