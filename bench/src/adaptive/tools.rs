//! The tools the adaptive benchmark compares, each measured the same way:
//! bytes the throttled proxy delivered to it, wall time, and CPU time of
//! the process doing the work (the daemon's, or casync's and its HTTP
//! helper's).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use trident_e2e::fixture::AbHostConfig;
use trident_e2e::throttled_http::ThrottledProxy;
use trident_proto::v1::{self, update_service_client::UpdateServiceClient};

use super::images::Version;
use crate::daemon::Daemon;
use crate::servicing::{completed, hc, install_and_commit};
use crate::uds::channel;

/// What one update cost.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Bytes the proxy delivered (answers' heads and bodies).
    pub bytes: u64,
    pub wall: f64,
    pub cpu: f64,
}

/// Linux reports process times in USER_HZ ticks, 100 a second on every
/// architecture this daemon is built for.
const TICKS_PER_SECOND: f64 = 100.0;

/// CPU seconds from /proc/PID/stat: the process's own (utime + stime)
/// and its waited-for children's (cutime + cstime), when `own`; only the
/// children's otherwise (this process's own time is the proxies').
fn cpu_seconds(pid: &str, own: bool) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The fields after the command name (which may hold spaces): field 3 on.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("/proc/PID/stat without a command name")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime, stime, cutime, cstime are fields 14-17.
    let wanted = if own { 11..15 } else { 13..15 };
    let mut ticks = 0u64;
    for i in wanted {
        let field = fields.get(i).context("/proc/PID/stat too short")?;
        ticks += field.parse::<u64>()?;
    }
    Ok(ticks as f64 / TICKS_PER_SECOND)
}

/// Where tridentd installs: a sparse disk-image file, and the Host
/// Configuration of each image on it.
#[derive(Debug)]
pub struct Target {
    pub disk: PathBuf,
    pub root_mib: u64,
}

impl Target {
    fn config(&self, url: &str, sha384: &str) -> String {
        AbHostConfig::new(url, &self.disk)
            .sha384(sha384)
            .sizes("8M", &format!("{}M", self.root_mib))
            .yaml()
    }

    fn fresh_disk(&self) -> anyhow::Result<()> {
        // ESP + two roots + the partition tables' room.
        let len = (8 + 2 * self.root_mib + 8) << 20;
        std::fs::File::create(&self.disk)?.set_len(len)?;
        Ok(())
    }
}

/// One tridentd run on a fresh daemon and disk: v1 (indexed, from its
/// file) installed and committed, then v2 staged adaptively from the
/// indexed COSI behind `indexed` and then, onto the same inactive volume,
/// in full from the plain COSI behind `plain` (a full update rewrites
/// every byte, so what the adaptive stage left there does not help it).
/// Each proxy is fresh, so its count is this update's alone.
pub async fn tridentd(
    dir: &Path,
    target: &Target,
    v1: &Version,
    v2: &Version,
    indexed: &ThrottledProxy,
    plain: &ThrottledProxy,
) -> anyhow::Result<(Measured, Measured)> {
    target.fresh_disk()?;
    let daemon = Daemon::start(dir, std::iter::empty::<&str>()).await?;
    let ch = channel(&daemon.socket).await?;
    let install = target.config(
        &format!("file://{}", v1.indexed.display()),
        &v1.indexed_sha384,
    );
    install_and_commit(&ch, &install).await?;
    let pid = daemon.pid().to_string();
    let stage = async |proxy: &ThrottledProxy, sha384: &str| -> anyhow::Result<Measured> {
        let config = target.config(&proxy.url("image.cosi"), sha384);
        let (cpu, t) = (cpu_seconds(&pid, true)?, Instant::now());
        completed(
            UpdateServiceClient::new(ch.clone())
                .update_stage(v1::StageUpdateRequest {
                    config: hc(&config),
                })
                .await,
        )
        .await?;
        Ok(Measured {
            wall: t.elapsed().as_secs_f64(),
            cpu: cpu_seconds(&pid, true)? - cpu,
            bytes: proxy.bytes_delivered(),
        })
    };
    let adaptive = stage(indexed, &v2.indexed_sha384).await?;
    let full = stage(plain, &v2.plain_sha384).await?;
    Ok((adaptive, full))
}

/// `casync make`: v2's root filesystem as a blob index and a chunk store
/// (zstd, casync's default chunk sizes) in `served`, the directory the
/// store's HTTP server serves. Returns the seconds it took.
pub fn casync_make(served: &Path, v2: &Version) -> anyhow::Result<f64> {
    let _ = std::fs::remove_dir_all(served);
    std::fs::create_dir_all(served)?;
    let t = Instant::now();
    casync(
        Command::new("casync")
            .arg("make")
            .arg("--compression=zstd")
            .arg(format!("--store={}", served.join("store.castr").display()))
            .arg(served.join("root.caibx"))
            .arg(&v2.root),
    )?;
    Ok(t.elapsed().as_secs_f64())
}

/// `casync extract` of v2's root into `out` over HTTP through `proxy`
/// (index and chunks), seeded with v1's root: what the active volume is
/// to tridentd. The output is fresh, so casync has no other seed.
pub fn casync_extract(
    proxy: &ThrottledProxy,
    v1: &Version,
    out: &Path,
) -> anyhow::Result<Measured> {
    let _ = std::fs::remove_file(out);
    let (cpu, t) = (cpu_seconds("self", false)?, Instant::now());
    casync(
        Command::new("casync")
            .arg("extract")
            .arg(format!("--store={}", proxy.url("store.castr")))
            .arg(format!("--seed={}", v1.root.display()))
            .arg(proxy.url("root.caibx"))
            .arg(out),
    )?;
    Ok(Measured {
        wall: t.elapsed().as_secs_f64(),
        // Children's times are counted once they are waited for: casync's,
        // and through it its HTTP helper's.
        cpu: cpu_seconds("self", false)? - cpu,
        bytes: proxy.bytes_delivered(),
    })
}

fn casync(command: &mut Command) -> anyhow::Result<()> {
    let out = command
        .output()
        .context("run casync (Debian package casync)")?;
    if !out.status.success() {
        bail!(
            "{command:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
