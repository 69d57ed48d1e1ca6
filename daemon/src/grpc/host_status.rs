//! `trident.v1.HostStatusService` (our addition): the full Host Status as
//! YAML with upstream's keys, for `trident get status` and `-s FILE`.
//! `diskUuids` is read from the GPT of each disk when asked
//! (`trident_engine::block_device::read_disk_guids`), and each RAID array's
//! `state` from the kernel, so both say what is on the disks now. Served redacted: the
//! secrets of `spec` and `specOld` never leave the daemon
//! (`trident_host::redact::document`); the datastore keeps them.

use std::sync::Arc;

use tonic::{Request, Response, Status};
use trident_engine::block_device::{raid, read_disk_guids};
use trident_engine::machinery::Engine;
use trident_proto::v1::{
    GetHostStatusRequest, GetHostStatusResponse, host_status_service_server::HostStatusService,
};

use super::error_status::to_status;

/// Serves the Host Status from the engine's datastore.
#[derive(Debug, Clone)]
pub struct HostStatusApi {
    engine: Arc<Engine>,
}

impl HostStatusApi {
    pub fn new(engine: Arc<Engine>) -> Self {
        Self { engine }
    }
}

#[tonic::async_trait]
impl HostStatusService for HostStatusApi {
    async fn get_host_status(
        &self,
        _request: Request<GetHostStatusRequest>,
    ) -> Result<Response<GetHostStatusResponse>, Status> {
        let status = {
            let _read = self.engine.connection_lock.read().await;
            self.engine.host_status().map_err(to_status)?
        };
        let (mut status, uuids) = tokio::task::spawn_blocking(move || {
            let uuids = read_disk_guids(&status);
            (status, uuids)
        })
        .await
        .map_err(|error| Status::internal(format!("reading disk GPTs: {error}")))?;
        // What the disks carry now: a replaced, blank disk shows none.
        status.disk_uuids = uuids;
        raid::refresh_states(&raid::Kernel::host(), &mut status);
        Ok(Response::new(GetHostStatusResponse {
            host_status: status
                .redacted()
                .map_err(to_status)?
                .to_yaml()
                .map_err(to_status)?,
        }))
    }
}
