//! 200 subscribers under load: while a real `tridentd` (disk-image files,
//! `--reboot record`) runs an A/B update (`Update`: stage + finalize) of a
//! 1 GiB image, 200 subscribers follow the bus, half through `Watch`, a
//! quarter each through `WatchLogs` and `WatchProgress`; a quarter of all
//! of them are deliberately slow. Measured in the same run against the same
//! update with nobody watching (runs alternate):
//!
//! - `update_duration` observed, baseline unobserved (ratio, target <= 1.1);
//! - `subscribers_complete`: subscribers that kept up and received every
//!   record of the operation in order with no gap (baseline: how many kept
//!   up, i.e. were not slow);
//! - `slow_subscribers_with_gaps` (in all and per RPC), `gap_records_min`,
//!   `slow_drops.*` and `bus_drops.*`: what the slow quarter lost, told to
//!   each by Gap and DropCounters events, and the daemon's bus-wide
//!   counters (GetBusStatus); `slow_subscribers_saw_completion`: slow
//!   subscribers still given the operation's completed record;
//! - `daemon_rss_max`: the daemon's peak RSS while observed (/proc VmHWM);
//! - the set-up: `ring_records`, `slow_window`, `operation_records.*`.
//!
//! For a slow subscriber to be lapped at all, what it has not read must
//! outgrow both its transport buffers and the ring. An update emits one to
//! two hundred records (25-50 KiB), so the run uses a ring smaller than that
//! ([`RING_RECORDS`]) and slow clients with small HTTP/2 windows
//! ([`follow::SLOW_WINDOW`]); with the defaults nobody is ever lapped.

mod follow;
mod results;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::sync::watch;
use tokio_stream::StreamExt;
use trident_cosi::writer::{FixtureOutput, FixtureSpec, write_cosi};
use trident_proto::ADDITION_IDS;
use trident_proto::client::opt_in;
use trident_proto::v1::{
    self, GetBusStatusRequest, StatusCode, WatchOptions,
    commit_service_client::CommitServiceClient, servicing_response,
    telemetry_service_client::TelemetryServiceClient, update_service_client::UpdateServiceClient,
};
use trident_proto::v1preview::{self, install_service_client::InstallServiceClient};

use crate::daemon::Daemon;
use crate::servicing::{completed, hc, host_config};
use crate::uds::channel;
use follow::{Kind, Seen};
use results::{Observed, add_drops, report};

const BENCH: &str = "subscribers";
const SUBSCRIBERS: usize = 200;
const QUICK_SUBSCRIBERS: usize = 40;
/// Image disk size: 1 GiB, or 256 MiB with `--quick`.
const DISK_BYTES: u64 = 1 << 30;
const QUICK_DISK_BYTES: u64 = 256 << 20;
/// Observed and unobserved updates each.
const RUNS: usize = 3;
const QUICK_RUNS: usize = 1;
/// Env var: work directory (default: a temp dir).
const ENV_WORK_DIR: &str = "TRIDENT_BENCH_DIR";
/// How long subscribers that keep up may take to reach the end.
const CATCH_UP: Duration = Duration::from_secs(120);
const MIB: f64 = (1 << 20) as f64;
/// The daemon's bus ring (`--bus-ring-records`), for observed and
/// unobserved runs alike. An update emits one to two hundred records (bus at
/// debug for our crates, its default), far fewer than the default ring
/// (65 536) holds, so with it nobody is ever lapped (nor with 128: the
/// first run of this benchmark). A sixth of an operation: a subscriber
/// that stalls early is lapped, one that keeps up never falls this far
/// behind (`operation_records.*` says how many records there were).
const RING_RECORDS: &str = "32";

/// The two images and their configurations.
struct Images {
    v1: String,
    v2: String,
    disk: PathBuf,
    disk_len: u64,
}

/// A field of /proc/PID/status in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim_start_matches(':').split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A fresh daemon with v1 installed and committed (not timed).
async fn provisioned(dir: &Path, images: &Images) -> anyhow::Result<Daemon> {
    std::fs::File::create(&images.disk)?.set_len(images.disk_len)?;
    let daemon =
        Daemon::start_with_reboot(dir, "record", ["--bus-ring-records", RING_RECORDS]).await?;
    let ch = channel(&daemon.socket).await?;
    completed(
        InstallServiceClient::new(ch.clone())
            .install(v1preview::InstallRequest {
                stage: Some(v1preview::StageInstallRequest {
                    config: hc(&images.v1),
                }),
                finalize: Some(v1preview::FinalizeInstallRequest { reboot: None }),
            })
            .await,
    )
    .await?;
    completed(
        CommitServiceClient::new(ch)
            .commit(v1::CommitRequest { reboot: None })
            .await,
    )
    .await?;
    Ok(daemon)
}

/// Runs the A/B update; returns (seconds, operation id).
async fn update(daemon: &Daemon, images: &Images) -> anyhow::Result<(f64, String)> {
    // `Started.operation_id` is one of our additions: sent when asked for.
    let ch = opt_in(channel(&daemon.socket).await?, ADDITION_IDS);
    let t = Instant::now();
    let mut stream = UpdateServiceClient::new(ch)
        .update(v1::UpdateRequest {
            stage: Some(v1::StageUpdateRequest {
                config: hc(&images.v2),
            }),
            finalize: Some(v1::FinalizeUpdateRequest { reboot: None }),
        })
        .await?
        .into_inner();
    let mut operation = String::new();
    while let Some(item) = stream.next().await {
        match item?.response {
            Some(servicing_response::Response::Started(s)) => operation = s.operation_id,
            Some(servicing_response::Response::Completed(c)) => {
                if c.status() != StatusCode::Success {
                    bail!("update failed: {:?}", c.error);
                }
                if operation.is_empty() {
                    bail!("the update's Started message named no operation");
                }
                return Ok((t.elapsed().as_secs_f64(), operation));
            }
            _ => {}
        }
    }
    bail!("update stream ended without Completed")
}

async fn unobserved(dir: &Path, images: &Images) -> anyhow::Result<f64> {
    let daemon = provisioned(dir, images).await?;
    Ok(update(&daemon, images).await?.0)
}

/// Runs the update under `n` subscribers; returns its duration and what
/// the subscribers received.
async fn observed(dir: &Path, images: &Images, n: usize) -> anyhow::Result<(f64, Observed)> {
    let daemon = provisioned(dir, images).await?;
    let stops: Vec<_> = Kind::ALL
        .iter()
        .map(|_| watch::channel(None::<u64>))
        .collect();
    // Slow subscribers pause until the update is over, then drain.
    let (hurry, hurry_rx) = watch::channel(false);
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n {
        let kind = Kind::of(i, n);
        // Every fourth subscriber of each kind is slow: a quarter overall.
        let slow = i % 4 == 3;
        // One connection per subscriber, as separate clients would have.
        // A slow subscriber takes one record per response, so it cannot
        // make up for its pauses with bigger batches.
        let options = WatchOptions {
            max_batch: if slow { 1 } else { 0 },
            ..WatchOptions::default()
        };
        let events = follow::open(follow::connect(&daemon.socket, slow).await?, kind, options)
            .await
            .with_context(|| format!("subscriber {i} ({kind:?})"))?;
        let stop = stops[kind.index()].1.clone();
        let task = follow::follow(events, slow, stop, hurry_rx.clone());
        tasks.push((kind, slow, tokio::spawn(task)));
    }
    let pid = daemon.pid();
    let (duration, operation) = update(&daemon, images).await?;
    let _ = hurry.send(true);
    let rss_max_kib = status_kib(pid, "VmHWM");

    // The operation's records as the journal/ring holds them; subscribers
    // stop once they received the last one of their kind.
    let mut result = Observed {
        rss_max_kib,
        ..Observed::default()
    };
    let mut references = Vec::new();
    for kind in Kind::ALL {
        let reference = follow::reference(channel(&daemon.socket).await?, kind, &operation).await?;
        let last = reference.last().map_or(0, |(seq, _)| *seq);
        result.operation_records[kind.index()] = reference.len();
        let _ = stops[kind.index()].0.send(Some(last));
        references.push(reference);
    }
    let deadline = tokio::time::Instant::now() + CATCH_UP;
    for (kind, slow, task) in tasks {
        let seen = match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(seen)) => seen,
            _ => Seen::default(),
        };
        if slow {
            result.gap_records += seen.gap_records;
            result.slow[kind.index()] += 1;
            result.slow_with_gaps[kind.index()] +=
                usize::from(seen.gap_records > 0 && seen.drop_events > 0);
            result.slow_saw_completion += usize::from(seen.saw_completion);
            add_drops(&mut result.slow_drops, &seen.drops);
            continue;
        }
        result.kept_up += 1;
        let mine: Vec<_> = seen
            .records
            .into_iter()
            .filter(|(_, op)| *op == operation)
            .collect();
        if mine == references[kind.index()] && seen.gap_records == 0 {
            result.complete += 1;
        } else {
            eprintln!(
                "subscribers: a {kind:?} subscriber got {} of {} records, {} in gaps",
                mine.len(),
                references[kind.index()].len(),
                seen.gap_records
            );
        }
    }
    let mut telemetry = TelemetryServiceClient::new(channel(&daemon.socket).await?);
    let status = telemetry.get_bus_status(GetBusStatusRequest {}).await?;
    result.bus_drops = status.into_inner().drops.unwrap_or_default();
    Ok((duration, result))
}

fn images(dir: &Path, size: u64) -> anyhow::Result<Images> {
    let v1: FixtureOutput = write_cosi(&FixtureSpec::new(size, 1), &dir.join("v1.cosi"))?;
    let v2 = write_cosi(&FixtureSpec::new(size, 2), &dir.join("v2.cosi"))?;
    let volume_mib = size >> 20;
    let disk = dir.join("disk.img");
    Ok(Images {
        v1: host_config(&v1, &disk, volume_mib),
        v2: host_config(&v2, &disk, volume_mib),
        disk,
        disk_len: (2 * volume_mib + 64) << 20,
    })
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let (size, n, runs) = if quick {
        (QUICK_DISK_BYTES, QUICK_SUBSCRIBERS, QUICK_RUNS)
    } else {
        (DISK_BYTES, SUBSCRIBERS, RUNS)
    };
    let tmp;
    let dir = match std::env::var_os(ENV_WORK_DIR) {
        Some(d) => PathBuf::from(d),
        None => {
            tmp = tempfile::tempdir()?;
            tmp.path().to_path_buf()
        }
    };
    let images = images(&dir, size)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (mut plain, mut watched, mut all) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        // Alternate the order so drift on the machine hits both alike.
        if i % 2 == 0 {
            plain.push(runtime.block_on(unobserved(&dir, &images))?);
        }
        let (duration, result) = runtime.block_on(observed(&dir, &images, n))?;
        watched.push(duration);
        all.push(result);
        if i % 2 == 1 {
            plain.push(runtime.block_on(unobserved(&dir, &images))?);
        }
    }
    report(n, plain, watched, &all);
    Ok(())
}
