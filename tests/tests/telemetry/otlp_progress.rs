//! Overall progress in the OTLP export: while a slow StreamDisk runs (a
//! local HTTP source sending the image at a fixed rate), the progress
//! gauges carry the daemon's bytes, smoothed rate, ETA and steps, the
//! figures the dashboards' overall-progress panels read. Adds them to
//! target/otlp/exported-metrics/ for dashboards/check.py.
//!
//! Real receiver: `@elastic/mockotlpserver` (see otlp_servicing.rs).

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, ensure};
use trident_e2e::bin_path;
use trident_e2e::fixture::CosiImage;
use trident_e2e::otlp_support::{Receiver, exporting_daemon, record_exported_metrics};
use trident_e2e::throttled_http::ThrottledServer;

/// The daemon reports written bytes per 4 MiB write: enough of them for
/// the rate samples an honest ETA needs.
const DISK: u64 = 32 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_operation_exports_its_overall_progress_rate_and_eta() -> anyhow::Result<()> {
    let receiver = Receiver::start()?;
    let dir = tempfile::tempdir()?;
    let cosi = CosiImage::new(DISK, 11)
        .esp_bytes(2 << 20)
        .write(&dir.path().join("image.cosi"));
    let target = dir.path().join("target.img");
    std::fs::File::create(&target)?.set_len(DISK)?;
    // About 8 s of transfer: long enough for an honest ETA to be exported.
    let size = std::fs::metadata(&cosi.path)?.len();
    let server = ThrottledServer::start(&cosi.path, size / 8)?;
    let disk = target.display().to_string();
    let mut daemon = exporting_daemon(&receiver.grpc, &["--disk", &disk], &[]).await?;

    let mut cli = Command::new(bin_path("trident"))
        .arg("--socket")
        .arg(daemon.socket_path())
        .args(["stream-disk", &server.url(), "--progress", "json"])
        .env_remove("TRIDENT_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;

    // Mid-transfer: an ETA, a rate, part of the bytes, the plan's steps.
    let running = receiver.wait_for(Duration::from_secs(120), |r| {
        r.metric_names().contains("trident.servicing.progress.eta")
    })?;
    let metrics = running.metrics();
    let last = |name: &str| -> anyhow::Result<f64> {
        metrics
            .iter()
            .find(|m| m.name == name)
            .with_context(|| format!("{name} not exported"))?
            .gauge_of_kind("clean_install")
    };
    ensure!(last("trident.servicing.progress.eta")? > 0.0);
    ensure!(last("trident.servicing.progress.rate")? > 0.0);
    let planned = last("trident.servicing.progress.planned")?;
    ensure!(planned > 0.0 && last("trident.servicing.progress.done")? <= planned);
    ensure!(last("trident.servicing.progress.steps.planned")? == 3.0);

    let status = tokio::task::spawn_blocking(move || cli.wait()).await??;
    ensure!(status.success(), "trident stream-disk failed: {status}");
    daemon.stop();
    let received = receiver.wait_for(Duration::from_secs(5), |r| {
        r.has_log_body("tridentd stopped")
    })?;
    record_exported_metrics("otlp_progress", &received.metrics())?;
    Ok(())
}
