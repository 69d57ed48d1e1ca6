//! StreamDisk throughput: a COSI image (>= 1 GiB uncompressed; 256 MiB with
//! `--quick`) written to a disk-image file, against the shell baseline
//! `zstd -dc | dd of=... bs=4M conv=fsync` per region plus `sha384sum` of
//! the compressed regions, measured side by side in the same run (runs
//! alternate which goes first). Paths measured:
//! * `library`: `trident_cosi::stream_to_target` in this process;
//! * `daemon`: a real `tridentd --disk FILE` over gRPC on a Unix socket,
//!   with no telemetry subscriber and with 4 following Watch subscribers.
//!
//! Throughput = uncompressed bytes / wall time; medians of [`RUNS`] runs
//! (3 with `--quick`), each next to a baseline run (alternating order).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::bail;
use tokio_stream::StreamExt;
use trident_cosi::writer::{self, FixtureOutput, FixtureSpec};
use trident_cosi::{CosiSource, ExpectedHash, NoProgress, SourceOptions};
use trident_proto::v1::streaming_service_client::StreamingServiceClient;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    StatusCode, StreamDiskRequest, VerifyWrites, WatchOptions, WatchRequest, servicing_response,
};

use crate::daemon::{Daemon, tridentd};
use crate::report::{self, median};
use crate::uds::channel;

const BENCH: &str = "stream-disk";
/// Disk size of the image: 1 GiB, or 256 MiB with `--quick`.
const DISK_BYTES: u64 = 1 << 30;
const QUICK_DISK_BYTES: u64 = 256 << 20;
/// Timed runs per path (the median is reported); 3 with `--quick`.
const RUNS: usize = 5;
const QUICK_RUNS: usize = 3;
/// Watch subscribers in the "telemetry on" daemon runs.
const SUBSCRIBERS: usize = 4;
/// Env var: directory for the image, regions and target (default: temp dir).
const ENV_WORK_DIR: &str = "TRIDENT_BENCH_DIR";
const MIB: f64 = (1 << 20) as f64;

pub(crate) struct Fixture {
    pub(crate) cosi: FixtureOutput,
    regions_dir: PathBuf,
    pub(crate) target: PathBuf,
    pub(crate) total: u64,
}

/// `zstd -dc region | dd ... conv=fsync` for every region, then `sha384sum`.
pub(crate) fn baseline(f: &Fixture) -> anyhow::Result<Duration> {
    let mut script = String::from("set -e\n");
    for (i, r) in f.cosi.regions.iter().enumerate() {
        script.push_str(&format!(
            "zstd -dc -q '{}' | dd of='{}' bs=4M seek={} oflag=seek_bytes conv=notrunc,fsync status=none\n",
            writer::kept_region_path(&f.regions_dir, i).display(),
            f.target.display(),
            r.offset
        ));
    }
    script.push_str(&format!(
        "sha384sum '{}'/region-*.zst > /dev/null\n",
        f.regions_dir.display()
    ));
    let started = Instant::now();
    let status = Command::new("sh").arg("-c").arg(&script).status()?;
    if !status.success() {
        bail!("baseline script failed: {status}");
    }
    Ok(started.elapsed())
}

fn library(f: &Fixture) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let hash = ExpectedHash::parse(&f.cosi.metadata_sha384)?;
    let mut source = CosiSource::open(
        &format!("file://{}", f.cosi.path.display()),
        &hash,
        &SourceOptions::default(),
    )?;
    trident_cosi::stream_to_target(&mut source, &f.target, &mut NoProgress)?;
    Ok(started.elapsed())
}

/// The benchmark's work directory: under `$TRIDENT_BENCH_DIR`, else a temp dir.
pub(crate) fn work_dir() -> std::io::Result<tempfile::TempDir> {
    match std::env::var_os(ENV_WORK_DIR) {
        Some(d) => tempfile::tempdir_in(d),
        None => tempfile::tempdir(),
    }
}

pub(crate) fn prepare(dir: &Path, disk: u64) -> anyhow::Result<Fixture> {
    let regions_dir = dir.join("regions");
    std::fs::create_dir_all(&regions_dir)?;
    let cosi = writer::write_cosi_keeping_regions(
        &FixtureSpec::new(disk, 1),
        &dir.join("bench.cosi"),
        &regions_dir,
    )?;
    let target = dir.join("target.img");
    std::fs::File::create(&target)?.set_len(disk)?;
    let total = cosi.regions.iter().map(|r| r.uncompressed_size).sum();
    Ok(Fixture {
        cosi,
        regions_dir,
        target,
        total,
    })
}

/// Starts `count` following Watch subscribers that drain every record.
async fn subscribe(
    socket: &Path,
    count: usize,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<u64>>> {
    let mut tasks = Vec::new();
    for _ in 0..count {
        let mut client =
            TelemetryServiceClient::new(channel(socket).await?).max_decoding_message_size(64 << 20);
        let mut stream = client
            .watch(WatchRequest {
                options: Some(WatchOptions {
                    max_batch: 1024,
                    ..WatchOptions::default()
                }),
                kinds: vec![],
            })
            .await?
            .into_inner();
        tasks.push(tokio::spawn(async move {
            let mut records = 0u64;
            while let Some(Ok(batch)) = stream.next().await {
                records += batch.events.len() as u64;
            }
            records
        }));
    }
    Ok(tasks)
}

/// One StreamDisk through the daemon at `socket`, reading back as
/// `verify_writes` (a `trident.v1.VerifyWrites`) says; its wall time.
pub(crate) async fn daemon_run(
    socket: &Path,
    f: &Fixture,
    verify_writes: VerifyWrites,
) -> anyhow::Result<Duration> {
    let mut client = StreamingServiceClient::new(channel(socket).await?);
    let request = StreamDiskRequest {
        image_url: format!("file://{}", f.cosi.path.display()),
        image_hash: Some(f.cosi.metadata_sha384.clone()),
        reboot: None,
        verify_writes: verify_writes as i32,
    };
    // The previous operation releases the servicing lock just after its
    // Completed was sent: retry while the daemon answers "busy".
    let (started, mut stream) = loop {
        let started = Instant::now();
        match client.stream_disk(request.clone()).await {
            Ok(r) => break (started, r.into_inner()),
            Err(s) if s.code() == tonic::Code::Unavailable => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(s) => return Err(s.into()),
        }
    };
    while let Some(item) = stream.next().await {
        if let Some(servicing_response::Response::Completed(c)) = item?.response {
            if c.status() != StatusCode::Success {
                bail!("StreamDisk failed: {:?}", c.error);
            }
            return Ok(started.elapsed());
        }
    }
    bail!("StreamDisk stream ended without Completed")
}

/// Medians of (daemon, baseline) runs, interleaved so both see the same
/// machine load.
async fn daemon_median(
    dir: &Path,
    f: &Fixture,
    subscribers: usize,
    runs: usize,
) -> anyhow::Result<(f64, f64)> {
    let daemon = Daemon::start(dir, [std::ffi::OsStr::new("--disk"), f.target.as_os_str()]).await?;
    let subs = subscribe(&daemon.socket, subscribers).await?;
    let (mut ours, mut base) = (Vec::new(), Vec::new());
    for i in 0..runs {
        if i % 2 == 0 {
            base.push(baseline(f)?.as_secs_f64());
            ours.push(
                daemon_run(&daemon.socket, f, VerifyWrites::Unspecified)
                    .await?
                    .as_secs_f64(),
            );
        } else {
            ours.push(
                daemon_run(&daemon.socket, f, VerifyWrites::Unspecified)
                    .await?
                    .as_secs_f64(),
            );
            base.push(baseline(f)?.as_secs_f64());
        }
    }
    drop(daemon);
    // The streams end with the daemon; report what the subscribers drained.
    for s in subs {
        if let Ok(Ok(records)) = tokio::time::timeout(Duration::from_secs(5), s).await {
            eprintln!("stream-disk: a subscriber received {records} records");
        }
    }
    Ok((median(ours), median(base)))
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let disk = if quick { QUICK_DISK_BYTES } else { DISK_BYTES };
    let runs = if quick { QUICK_RUNS } else { RUNS };
    let dir = work_dir()?;
    let f = prepare(dir.path(), disk)?;
    let compressed: u64 = f.cosi.regions.iter().map(|r| r.compressed_size).sum();
    eprintln!(
        "stream-disk: {} MiB uncompressed, {} MiB compressed, {runs} runs",
        f.total >> 20,
        compressed >> 20
    );
    // Warm-up (untimed): page cache holds the image for both sides alike,
    // and the target's blocks are allocated.
    baseline(&f)?;
    library(&f)?;
    let (mut base, mut lib) = (Vec::new(), Vec::new());
    for i in 0..runs {
        if i % 2 == 0 {
            base.push(baseline(&f)?.as_secs_f64());
            lib.push(library(&f)?.as_secs_f64());
        } else {
            lib.push(library(&f)?.as_secs_f64());
            base.push(baseline(&f)?.as_secs_f64());
        }
    }
    let (base, lib) = (median(base), median(lib));
    let mibs = |secs: f64| f.total as f64 / MIB / secs;
    report::line(
        BENCH,
        "library_throughput",
        mibs(lib),
        "MiB/s",
        Some(mibs(base)),
    );
    report::line(BENCH, "library_seconds", lib, "s", Some(base));

    if !tridentd().exists() {
        eprintln!(
            "stream-disk: {} not found; daemon runs skipped",
            tridentd().display()
        );
        return Ok(());
    }
    let rt = tokio::runtime::Runtime::new()?;
    let (quiet, quiet_base) = rt.block_on(daemon_median(dir.path(), &f, 0, runs))?;
    let (busy, busy_base) = rt.block_on(daemon_median(dir.path(), &f, SUBSCRIBERS, runs))?;
    report::line(
        BENCH,
        "daemon_throughput_no_subscribers",
        mibs(quiet),
        "MiB/s",
        Some(mibs(quiet_base)),
    );
    report::line(
        BENCH,
        "daemon_throughput_4_subscribers",
        mibs(busy),
        "MiB/s",
        Some(mibs(busy_base)),
    );
    // Telemetry cost: time with 4 subscribers relative to none, each
    // normalized by its own interleaved baseline.
    report::line(
        BENCH,
        "daemon_relative_time_4_subscribers_vs_none",
        busy / busy_base,
        "x baseline",
        Some(quiet / quiet_base),
    );
    Ok(())
}
