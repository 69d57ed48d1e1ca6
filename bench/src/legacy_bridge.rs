//! Does the legacy bridge cost servicing time? The same install through a
//! real `tridentd`, with a Host Configuration that sets no legacy keys
//! (the baseline) and with `trident.phonehome` + `trident.logstream`
//! pointing at a live receiver, a closed port and an endpoint that accepts
//! and never answers; runs of the four cases interleaved, medians of
//! [`RUNS`], ratio to the baseline measured in the same run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use trident_cosi::writer::{FixtureSpec, write_cosi};
use trident_proto::v1preview::{self, install_service_client::InstallServiceClient};

use crate::daemon::Daemon;
use crate::report::{self, median};
use crate::servicing::{completed, hc, host_config};
use crate::uds::channel;

const BENCH: &str = "legacy-bridge";
const RUNS: usize = 3;
/// Image (disk) size: 256 MiB, or 64 MiB with `--quick`.
const DISK_BYTES: u64 = 256 << 20;
const QUICK_DISK_BYTES: u64 = 64 << 20;

/// Answers every HTTP/1.1 POST with 200 (keep-alive).
async fn live_endpoint() -> anyhow::Result<SocketAddr> {
    let tcp = TcpListener::bind("127.0.0.1:0").await?;
    let addr = tcp.local_addr()?;
    tokio::spawn(async move {
        while let Ok((conn, _)) = tcp.accept().await {
            tokio::spawn(answer(conn));
        }
    });
    Ok(addr)
}

async fn answer(conn: TcpStream) -> std::io::Result<()> {
    let mut conn = BufReader::new(conn);
    loop {
        let mut length = 0usize;
        let mut first = true;
        loop {
            let mut line = String::new();
            if conn.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let line = line.trim_end();
            if line.is_empty() && !first {
                break;
            }
            first = false;
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        conn.read_exact(&mut body).await?;
        conn.get_mut()
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await?;
    }
}

/// Accepts connections and never answers.
async fn stalling_endpoint() -> anyhow::Result<SocketAddr> {
    let tcp = TcpListener::bind("127.0.0.1:0").await?;
    let addr = tcp.local_addr()?;
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = tcp.accept().await {
            held.push(conn);
        }
    });
    Ok(addr)
}

/// A loopback port nobody listens on.
async fn dead_endpoint() -> anyhow::Result<SocketAddr> {
    Ok(TcpListener::bind("127.0.0.1:0").await?.local_addr()?)
}

fn legacy_keys(addr: SocketAddr) -> String {
    format!(
        "trident:\n  phonehome: http://{addr}/phonehome\n  logstream: http://{addr}/logstream\n"
    )
}

/// One install on a fresh daemon and disk; seconds.
async fn install(dir: &Path, config: &str, disk: &Path, disk_len: u64) -> anyhow::Result<f64> {
    std::fs::File::create(disk)?.set_len(disk_len)?;
    let daemon = Daemon::start(dir, std::iter::empty::<&str>()).await?;
    let ch = channel(&daemon.socket).await?;
    let t = Instant::now();
    completed(
        InstallServiceClient::new(ch)
            .install(v1preview::InstallRequest {
                stage: Some(v1preview::StageInstallRequest { config: hc(config) }),
                finalize: Some(v1preview::FinalizeInstallRequest { reboot: None }),
            })
            .await,
    )
    .await?;
    Ok(t.elapsed().as_secs_f64())
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let size = if quick { QUICK_DISK_BYTES } else { DISK_BYTES };
    let tmp = tempfile::tempdir()?;
    let dir: PathBuf = tmp.path().to_path_buf();
    let image = write_cosi(&FixtureSpec::new(size, 1), &dir.join("v1.cosi"))?;
    let volume_mib = size >> 20;
    let disk = dir.join("disk.img");
    let disk_len = (2 * volume_mib + 64) << 20;
    let base = host_config(&image, &disk, volume_mib);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let cases: Vec<(&str, String)> = runtime.block_on(async {
        anyhow::Ok(vec![
            ("no_bridge", base.clone()),
            (
                "live_endpoint",
                base.clone() + &legacy_keys(live_endpoint().await?),
            ),
            (
                "dead_endpoint",
                base.clone() + &legacy_keys(dead_endpoint().await?),
            ),
            (
                "stalling_endpoint",
                base.clone() + &legacy_keys(stalling_endpoint().await?),
            ),
        ])
    })?;
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for _ in 0..RUNS {
        for (i, (_, config)) in cases.iter().enumerate() {
            times[i].push(runtime.block_on(install(&dir, config, &disk, disk_len))?);
        }
    }
    let medians: Vec<f64> = times.into_iter().map(median).collect();
    let baseline = medians[0];
    for ((name, _), seconds) in cases.iter().zip(&medians) {
        let baseline = (*name != "no_bridge").then_some(baseline);
        report::line(
            BENCH,
            &format!("install_time_{name}"),
            *seconds,
            "s",
            baseline,
        );
    }
    Ok(())
}
