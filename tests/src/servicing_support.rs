//! Shared pieces of the servicing end-to-end tests: COSI fixtures and Host
//! Configurations (the harness's `fixture` builders), a disk-image target,
//! gRPC clients and a collector for servicing streams.

#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use trident_cosi::gpt::Gpt;
use trident_cosi::writer::{Corruption, FixtureOutput};
use trident_proto::v1::{
    self, Completed, Log, ProgressRecord, ServicingResponse, Started,
    commit_service_client::CommitServiceClient, servicing_response,
    update_service_client::UpdateServiceClient,
};
use trident_proto::v1preview::{
    self, install_service_client::InstallServiceClient,
    rollback_service_client::RollbackServiceClient, status_service_client::StatusServiceClient,
};

use crate::Channel;
use crate::Daemon;
use crate::fixture::{AbHostConfig, CosiImage};

/// Size of the disk each fixture image describes (ESP 8 MiB + root).
pub const IMAGE_DISK_BYTES: u64 = 24 << 20;
/// Size of the target disk-image file.
pub const TARGET_DISK_BYTES: u64 = 128 << 20;

/// Bytes of a partition hashed by [`Fixture::partition_hash`].
const HASHED_PREFIX_BYTES: u64 = 2 << 20;

/// A temp dir with a target disk-image file and COSI images.
#[derive(Debug)]
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub disk: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("servicing-e2e-")
            .tempdir()
            .unwrap();
        let disk = dir.path().join("disk.img");
        File::create(&disk)
            .unwrap()
            .set_len(TARGET_DISK_BYTES)
            .unwrap();
        Fixture { dir, disk }
    }

    /// Builds a COSI image (`seed` decides its content).
    pub fn image(&self, name: &str, seed: u64, corruption: Option<Corruption>) -> FixtureOutput {
        CosiImage::new(IMAGE_DISK_BYTES, seed)
            .corruption(corruption)
            .write(&self.dir.path().join(format!("{name}.cosi")))
    }

    /// A Host Configuration installing `image` onto the disk, plus `extra`
    /// YAML appended at the top level.
    pub fn config(&self, image: &FixtureOutput, extra: &str) -> String {
        self.config_with_hash(image, &image.metadata_sha384, extra)
    }

    pub fn config_with_hash(&self, image: &FixtureOutput, sha384: &str, extra: &str) -> String {
        AbHostConfig::file(&image.path, &self.disk)
            .sha384(sha384)
            .extra(extra)
            .yaml()
    }

    /// SHA-384 of the first bytes of partition `name` on the target disk
    /// (fixture content differs per seed in every 64 KiB block, so a
    /// prefix tells written from untouched; hashing it all is slow in debug).
    pub fn partition_hash(&self, name: &str) -> String {
        let file = File::open(&self.disk).unwrap();
        let mut head = vec![0u8; 34 * 512];
        file.read_exact_at(&mut head, 0).unwrap();
        let gpt = Gpt::parse_primary(&head, 512).unwrap();
        let entry = gpt.partitions().iter().find(|e| e.name == name).unwrap();
        let mut buf = vec![0u8; entry.size_bytes(512).min(HASHED_PREFIX_BYTES) as usize];
        file.read_exact_at(&mut buf, entry.start_offset(512))
            .unwrap();
        trident_cosi::hash::sha384_hex(&buf)
    }

    pub fn boot_record(&self, daemon: &Daemon) -> serde_json::Value {
        let text = std::fs::read_to_string(daemon.state_dir().join("boot-record.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Self::new()
    }
}

/// Everything a servicing stream carried.
#[derive(Debug, Default)]
pub struct Collected {
    pub started: Option<Started>,
    pub logs: Vec<Log>,
    pub progress: Vec<ProgressRecord>,
    pub completed: Vec<Completed>,
    /// Full error reports (only for clients that opted in to them).
    pub error_reports: Vec<v1::ErrorReport>,
    /// Order of message kinds, e.g. ["started", "log", ..., "completed"].
    pub order: Vec<&'static str>,
}

impl Collected {
    pub fn completed(&self) -> &Completed {
        assert_eq!(self.completed.len(), 1, "exactly one Completed: {self:#?}");
        &self.completed[0]
    }

    pub fn succeeded(&self) -> bool {
        self.completed().status == v1::StatusCode::Success as i32
    }

    pub fn error(&self) -> &v1::TridentError {
        self.completed().error.as_ref().unwrap()
    }

    pub fn operation_id(&self) -> String {
        self.started.as_ref().unwrap().operation_id.clone()
    }

    /// Ids of the phases that reported progress.
    pub fn phases(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.progress.iter().map(|p| p.phase_id.clone()).collect();
        ids.dedup();
        ids
    }

    pub fn assert_success(&self) {
        assert!(
            self.succeeded(),
            "operation failed: {:#?}",
            self.completed().error
        );
    }
}

/// Reads a servicing stream to its end.
pub async fn collect(
    response: Result<tonic::Response<tonic::Streaming<ServicingResponse>>, tonic::Status>,
) -> Collected {
    let mut stream = response.unwrap().into_inner();
    let mut out = Collected::default();
    while let Some(msg) = stream.next().await {
        match msg.unwrap().response {
            Some(servicing_response::Response::Started(s)) => {
                out.order.push("started");
                out.started = Some(s);
            }
            Some(servicing_response::Response::Log(l)) => {
                out.order.push("log");
                out.logs.push(l);
            }
            Some(servicing_response::Response::Progress(p)) => {
                out.order.push("progress");
                out.progress.push(p);
            }
            Some(servicing_response::Response::Completed(c)) => {
                out.order.push("completed");
                out.completed.push(c);
            }
            Some(servicing_response::Response::ErrorReport(r)) => {
                out.order.push("error-report");
                out.error_reports.push(r);
            }
            Some(servicing_response::Response::OverallProgress(_)) => {
                out.order.push("overall-progress");
            }
            Some(servicing_response::Response::Drops(_)) => {
                out.order.push("drops");
            }
            None => {}
        }
    }
    assert_eq!(out.order.first(), Some(&"started"), "Started first");
    assert_eq!(out.order.last(), Some(&"completed"), "Completed last");
    out
}

/// Clients of one daemon.
#[derive(Debug)]
pub struct Clients {
    pub install: InstallServiceClient<Channel>,
    pub update: UpdateServiceClient<Channel>,
    pub commit: CommitServiceClient<Channel>,
    pub rollback: RollbackServiceClient<Channel>,
    pub status: StatusServiceClient<Channel>,
    pub channel: Channel,
}

impl Clients {
    pub async fn new(daemon: &Daemon) -> Clients {
        let channel = daemon.channel().await.unwrap();
        Clients {
            install: InstallServiceClient::new(channel.clone()),
            update: UpdateServiceClient::new(channel.clone()),
            commit: CommitServiceClient::new(channel.clone()),
            rollback: RollbackServiceClient::new(channel.clone()),
            status: StatusServiceClient::new(channel.clone()),
            channel,
        }
    }

    pub async fn install(&mut self, config: &str) -> Collected {
        collect(
            self.install
                .install(v1preview::InstallRequest {
                    stage: Some(v1preview::StageInstallRequest {
                        config: Some(hc(config)),
                    }),
                    finalize: Some(v1preview::FinalizeInstallRequest { reboot: None }),
                })
                .await,
        )
        .await
    }

    pub async fn update_stage(&mut self, config: &str) -> Collected {
        collect(
            self.update
                .update_stage(v1::StageUpdateRequest {
                    config: Some(hc(config)),
                })
                .await,
        )
        .await
    }

    /// Update (stage and finalize in one RPC).
    pub async fn update(&mut self, config: &str) -> Collected {
        collect(
            self.update
                .update(v1::UpdateRequest {
                    stage: Some(v1::StageUpdateRequest {
                        config: Some(hc(config)),
                    }),
                    finalize: Some(v1::FinalizeUpdateRequest { reboot: None }),
                })
                .await,
        )
        .await
    }

    pub async fn update_finalize(&mut self) -> Collected {
        collect(
            self.update
                .update_finalize(v1::FinalizeUpdateRequest { reboot: None })
                .await,
        )
        .await
    }

    /// UpdateStage of `config` then UpdateFinalize, both succeeding.
    pub async fn stage_and_finalize(&mut self, config: &str) -> (Collected, Collected) {
        let stage = self.update_stage(config).await;
        stage.assert_success();
        let finalize = self.update_finalize().await;
        finalize.assert_success();
        (stage, finalize)
    }

    pub async fn commit(&mut self) -> Collected {
        collect(self.commit.commit(v1::CommitRequest { reboot: None }).await).await
    }

    pub async fn state(&mut self) -> v1preview::ServicingState {
        let r = self
            .status
            .get_servicing_state(v1preview::GetServicingStateRequest {})
            .await
            .unwrap()
            .into_inner();
        r.state()
    }

    pub async fn active_volume(&mut self) -> v1preview::AbVolumeState {
        self.status
            .get_active_volume(v1preview::GetActiveVolumeRequest {})
            .await
            .unwrap()
            .into_inner()
            .active_volume()
    }

    pub async fn last_error(&mut self) -> Option<v1::TridentError> {
        self.status
            .get_last_error(v1preview::GetLastErrorRequest {})
            .await
            .unwrap()
            .into_inner()
            .error
    }

    /// Install + commit of `config` (the host ends provisioned on volume A).
    pub async fn provision(&mut self, config: &str) {
        self.install(config).await.assert_success();
        self.commit().await.assert_success();
        assert_eq!(self.state().await, v1preview::ServicingState::Provisioned);
    }
}

/// A health check that never passes: the commit of an A/B update with it
/// fails and goes back to the old volume.
pub const FAILING_CHECK: &str = r#"health:
  checks:
  - name: never-healthy
    content: 'echo "service never came up" >&2; exit 3'
"#;

pub fn hc(text: &str) -> v1::HostConfiguration {
    v1::HostConfiguration {
        config: text.to_owned(),
    }
}

/// Starts a daemon that never reboots (record only) with an explicit
/// datastore path.
pub async fn daemon_with_datastore(datastore: &Path) -> Daemon {
    Daemon::builder()
        .arg("--datastore")
        .arg(datastore)
        .arg("--inactivity-timeout")
        .arg("0")
        .spawn()
        .await
        .unwrap()
}
