//! `trident.v1.HostStatusService` (our addition): the full Host Status as
//! YAML with upstream's keys, for `trident get status` and `-s FILE`.
//! `diskUuids` is read from the GPT of each disk in the layout when asked,
//! so it always names what is on the disk now. Served redacted: the
//! secrets of `spec` and `specOld` never leave the daemon
//! (`trident_host::redact::document`); the datastore keeps them.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use tonic::{Request, Response, Status};
use trident_cosi::gpt::Gpt;
use trident_host::status::HostStatus;
use trident_proto::v1::{
    GetHostStatusRequest, GetHostStatusResponse, host_status_service_server::HostStatusService,
};

use super::error_status::to_status;
use crate::servicing::engine::Engine;

/// Bytes read from the start of a disk to find its primary GPT: protective
/// MBR, header and a 128-entry array at 4096-byte sectors.
const GPT_PROBE_BYTES: u64 = 4096 * 6;

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
        let mut status = {
            let _read = self.engine.connection_lock.read().await;
            self.engine.host_status().map_err(to_status)?
        };
        let disks = disk_devices(&status);
        let uuids = tokio::task::spawn_blocking(move || read_disk_uuids(disks))
            .await
            .map_err(|error| Status::internal(format!("reading disk GPTs: {error}")))?;
        status.disk_uuids.extend(uuids);
        Ok(Response::new(GetHostStatusResponse {
            host_status: status
                .redacted()
                .map_err(to_status)?
                .to_yaml()
                .map_err(to_status)?,
        }))
    }
}

/// Disk id → device (block device or image file) from the install layout.
fn disk_devices(status: &HostStatus) -> BTreeMap<String, String> {
    status
        .layout
        .values()
        .map(|partition| (partition.disk_id.clone(), partition.device.clone()))
        .collect()
}

/// Disk id → GPT disk GUID for every disk whose GPT can be read; a disk
/// that cannot be read (gone, not ours any more) is left out and logged.
fn read_disk_uuids(disks: BTreeMap<String, String>) -> BTreeMap<String, String> {
    disks
        .into_iter()
        .filter_map(|(id, device)| match disk_guid(&device) {
            Ok(guid) => Some((id, guid)),
            Err(error) => {
                tracing::debug!(disk = %id, %device, %error, "no disk GUID for the Host Status");
                None
            }
        })
        .collect()
}

fn disk_guid(device: &str) -> Result<String, String> {
    let mut head = Vec::new();
    std::fs::File::open(device)
        .and_then(|file| file.take(GPT_PROBE_BYTES).read_to_end(&mut head))
        .map_err(|error| error.to_string())?;
    [512, 4096]
        .into_iter()
        .find_map(|lba_size| Gpt::parse_primary(&head, lba_size).ok())
        .map(|gpt| gpt.disk_guid.to_string())
        .ok_or_else(|| "no valid GPT".to_owned())
}
