//! `trident.v1.StreamingService`: StreamDisk on the shared servicing engine.
//! The step itself is `trident_engine::flows::stream_disk`.

use std::path::PathBuf;
use std::sync::Arc;

use tonic::{Request, Response, Status};
use trident_cosi::VerifyWrites;
use trident_engine::flows::stream_disk::{StreamDiskRequest, stream_disk_step};
use trident_proto::v1::{self, ServicingKind};

use super::error_status::invalid_enum;
use super::servicing::{Call, ServicingApi, reboot_handling};
use super::servicing_stream::ServicingStream;

/// gRPC StreamingService on the shared servicing engine.
#[derive(Debug, Clone)]
pub struct StreamDiskService {
    api: ServicingApi,
    disks: Arc<[PathBuf]>,
}

impl StreamDiskService {
    /// `disks`: the `--disk` candidates from the daemon's configuration.
    pub fn new(api: ServicingApi, disks: &[PathBuf]) -> Self {
        StreamDiskService {
            api,
            disks: disks.into(),
        }
    }
}

#[tonic::async_trait]
impl v1::streaming_service_server::StreamingService for StreamDiskService {
    type StreamDiskStream = ServicingStream;

    async fn stream_disk(
        &self,
        request: Request<v1::StreamDiskRequest>,
    ) -> Result<Response<ServicingStream>, Status> {
        let call = Call::of(&request, "StreamDisk", ServicingKind::CleanInstall);
        let req = request.into_inner();
        let handling = reboot_handling(req.reboot, "reboot.handling")?;
        let request = StreamDiskRequest {
            verify: verify_writes(req.verify_writes)?,
            url: req.image_url,
            hash: req.image_hash,
            handling,
        };
        let disks = Arc::clone(&self.disks);
        self.api
            .start(call, move |ctx| stream_disk_step(ctx, request, disks))
            .await
    }
}

/// The request's `verify_writes` (unset: sampled), or INVALID_ARGUMENT.
fn verify_writes(value: i32) -> Result<VerifyWrites, Status> {
    match v1::VerifyWrites::try_from(value) {
        Ok(v1::VerifyWrites::Unspecified | v1::VerifyWrites::Sampled) => Ok(VerifyWrites::Sampled),
        Ok(v1::VerifyWrites::Full) => Ok(VerifyWrites::Full),
        Err(_) => Err(invalid_enum("verify_writes", "VerifyWrites", value)),
    }
}
