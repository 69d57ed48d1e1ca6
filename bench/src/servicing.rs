//! Servicing throughput: a real `tridentd` over gRPC on a Unix socket
//! installs a COSI image (GPT + ESP + root-a) onto a disk-image file and
//! stages an A/B update (root-b), against the baseline of the same bytes
//! streamed in-process by `trident_cosi::stream_to_target` (decompress,
//! verify, write; no daemon, no telemetry, no datastore), measured side by
//! side in the same run. Throughput = uncompressed bytes / wall time;
//! medians of [`RUNS`] runs. Also reports the commit latency.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::bail;
use tokio_stream::StreamExt;
use trident_cosi::writer::{FixtureOutput, FixtureSpec, write_cosi};
use trident_cosi::{CosiSource, ExpectedHash, NoProgress, SourceOptions};
use trident_proto::v1::{
    self, ServicingResponse, StatusCode, commit_service_client::CommitServiceClient,
    servicing_response, update_service_client::UpdateServiceClient,
};
use trident_proto::v1preview::{self, install_service_client::InstallServiceClient};

use crate::daemon::Daemon;
use crate::report::{self, median};
use crate::uds::channel;

const BENCH: &str = "servicing";
/// Disk size of each image: 1 GiB, or 256 MiB with `--quick`.
const DISK_BYTES: u64 = 1 << 30;
const QUICK_DISK_BYTES: u64 = 256 << 20;
const RUNS: usize = 3;
/// Env var: work directory (default: a temp dir).
const ENV_WORK_DIR: &str = "TRIDENT_BENCH_DIR";
const MIB: f64 = (1 << 20) as f64;

pub(crate) fn host_config(image: &FixtureOutput, disk: &Path, volume_mib: u64) -> String {
    format!(
        "image:\n  url: file://{}\n  sha384: {}\nstorage:\n  disks:\n  - id: os\n    device: {}\n    partitions:\n    \
         - {{ id: esp, type: esp, size: 8M }}\n    - {{ id: root-a, type: root, size: {volume_mib}M }}\n    \
         - {{ id: root-b, type: root, size: {volume_mib}M }}\n  abUpdate:\n    volumePairs:\n    \
         - {{ id: root, volumeAId: root-a, volumeBId: root-b }}\n  filesystems:\n  \
         - {{ deviceId: esp, mountPoint: /boot/efi }}\n  - {{ deviceId: root, mountPoint: / }}\n",
        image.path.display(),
        image.metadata_sha384,
        disk.display()
    )
}

/// Reads a servicing stream to Completed; fails unless it succeeded.
pub(crate) async fn completed(
    response: Result<tonic::Response<tonic::Streaming<ServicingResponse>>, tonic::Status>,
) -> anyhow::Result<()> {
    let mut stream = response?.into_inner();
    while let Some(item) = stream.next().await {
        if let Some(servicing_response::Response::Completed(c)) = item?.response {
            if c.status() != StatusCode::Success {
                bail!("servicing failed: {:?}", c.error);
            }
            return Ok(());
        }
    }
    bail!("stream ended without Completed")
}

pub(crate) fn hc(text: &str) -> Option<v1::HostConfiguration> {
    Some(v1::HostConfiguration {
        config: text.to_owned(),
    })
}

/// Installs (stage + finalize) with the Host Configuration `config` and
/// commits: the durations of each, in seconds.
pub(crate) async fn install_and_commit(
    ch: &tonic::transport::Channel,
    config: &str,
) -> anyhow::Result<(f64, f64)> {
    let t = Instant::now();
    completed(
        InstallServiceClient::new(ch.clone())
            .install(v1preview::InstallRequest {
                stage: Some(v1preview::StageInstallRequest { config: hc(config) }),
                finalize: Some(v1preview::FinalizeInstallRequest { reboot: None }),
            })
            .await,
    )
    .await?;
    let install = t.elapsed().as_secs_f64();
    let t = Instant::now();
    completed(
        CommitServiceClient::new(ch.clone())
            .commit(v1::CommitRequest { reboot: None })
            .await,
    )
    .await?;
    Ok((install, t.elapsed().as_secs_f64()))
}

/// One install + commit + update-stage on a fresh daemon and disk:
/// (install, commit, stage) durations.
async fn daemon_run(
    dir: &Path,
    v1_config: &str,
    v2_config: &str,
    disk: &Path,
    disk_len: u64,
) -> anyhow::Result<(f64, f64, f64)> {
    std::fs::File::create(disk)?.set_len(disk_len)?;
    let daemon = Daemon::start(dir, std::iter::empty::<&str>()).await?;
    let ch = channel(&daemon.socket).await?;
    let (install, commit) = install_and_commit(&ch, v1_config).await?;
    let t = Instant::now();
    completed(
        UpdateServiceClient::new(ch)
            .update_stage(v1::StageUpdateRequest {
                config: hc(v2_config),
            })
            .await,
    )
    .await?;
    Ok((install, commit, t.elapsed().as_secs_f64()))
}

fn baseline(image: &FixtureOutput, target: &Path, len: u64) -> anyhow::Result<f64> {
    std::fs::File::create(target)?.set_len(len)?;
    let t = Instant::now();
    let hash = ExpectedHash::parse(&image.metadata_sha384)?;
    let mut source = CosiSource::open(
        &format!("file://{}", image.path.display()),
        &hash,
        &SourceOptions::default(),
    )?;
    trident_cosi::stream_to_target(&mut source, target, &mut NoProgress)?;
    Ok(t.elapsed().as_secs_f64())
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let size = if quick { QUICK_DISK_BYTES } else { DISK_BYTES };
    let tmp;
    let dir = match std::env::var_os(ENV_WORK_DIR) {
        Some(d) => PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let v1 = write_cosi(&FixtureSpec::new(size, 1), &dir.join("v1.cosi"))?;
    let v2 = write_cosi(&FixtureSpec::new(size, 2), &dir.join("v2.cosi"))?;
    let volume_mib = size >> 20;
    let disk = dir.join("disk.img");
    let disk_len = (2 * volume_mib + 64) << 20;
    let (c1, c2) = (
        host_config(&v1, &disk, volume_mib),
        host_config(&v2, &disk, volume_mib),
    );
    let install_bytes: u64 = v1
        .regions
        .iter()
        .filter(|r| r.number.is_some())
        .map(|r| r.uncompressed_size)
        .sum();
    let stage_bytes: u64 = v2
        .regions
        .iter()
        .filter(|r| r.mount_point.as_deref() == Some("/"))
        .map(|r| r.uncompressed_size)
        .sum();
    let scratch = dir.join("baseline.img");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (mut inst, mut commit, mut stage, mut base) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..RUNS {
        if i % 2 == 0 {
            base.push(baseline(&v1, &scratch, size)?);
        }
        let (a, b, c) = runtime.block_on(daemon_run(&dir, &c1, &c2, &disk, disk_len))?;
        inst.push(a);
        commit.push(b);
        stage.push(c);
        if i % 2 == 1 {
            base.push(baseline(&v1, &scratch, size)?);
        }
    }
    let base_mibs = (size as f64 / MIB) / median(base);
    report::line(
        BENCH,
        "install_throughput",
        install_bytes as f64 / MIB / median(inst),
        "MiB/s",
        Some(base_mibs),
    );
    report::line(
        BENCH,
        "update_stage_throughput",
        stage_bytes as f64 / MIB / median(stage),
        "MiB/s",
        Some(base_mibs),
    );
    report::line(BENCH, "commit_latency", median(commit) * 1000.0, "ms", None);
    Ok(())
}
