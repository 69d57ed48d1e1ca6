//! Shared pieces of the crash-consistency and fault tests: a seeded random
//! source (printed, replayable with `CRASH_SEED=`), a daemon that restarts
//! on the same state directory, SIGKILL at a random point of a servicing
//! stream, reads of the target disk's partitions, and a small tmpfs.

#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use futures::StreamExt;
use nix::sys::signal::Signal;
use sha2::{Digest, Sha384};
use trident_cosi::gpt::Gpt;
use trident_proto::v1::{ServicingResponse, servicing_response};

use crate::Daemon;

/// Env var replaying a run: the seed the failing run printed.
pub const SEED_ENV: &str = "CRASH_SEED";

/// A small seeded generator (splitmix64): enough for random delays, and no
/// dependency. The seed is printed so a failure can be replayed.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    /// `CRASH_SEED` when set, else a fresh seed; prints it either way.
    pub fn from_env(test: &str) -> Rng {
        let seed = std::env::var(SEED_ENV)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        eprintln!("{test}: {SEED_ENV}={seed} (set it to replay this run)");
        Rng(seed)
    }

    #[allow(clippy::should_implement_trait)] // a generator that never ends, not an iterator
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A delay in `[0, max]` (millisecond steps).
    pub fn delay(&mut self, max: Duration) -> Duration {
        let ms = max.as_millis().max(1) as u64;
        Duration::from_millis(self.next() % (ms + 1))
    }
}

/// How a servicing stream cut short by SIGKILL had got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    /// No `Started` arrived (the operation may not have been recorded).
    NotStarted,
    /// `Started` (this operation id) arrived, `Completed` did not: the
    /// operation was running, or had just recorded its end.
    Running(String),
    /// The operation (this id) completed before the kill.
    Completed(String),
}

impl Reached {
    /// The operation id, once `Started` arrived.
    pub fn operation_id(&self) -> Option<&str> {
        match self {
            Reached::NotStarted => None,
            Reached::Running(id) | Reached::Completed(id) => Some(id),
        }
    }
}

/// Reads `stream` while, after `delay`, the daemon is SIGKILLed; returns
/// how far the stream got. Waits for the process to be gone.
pub async fn kill_during(
    daemon: &mut Daemon,
    stream: tonic::Streaming<ServicingResponse>,
    delay: Duration,
) -> Reached {
    let reader = tokio::spawn(read_until_cut(stream));
    tokio::time::sleep(delay).await;
    daemon.signal(Signal::SIGKILL).unwrap();
    daemon.wait_exit(Duration::from_secs(30)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("the stream ends once the daemon is gone")
        .unwrap()
}

async fn read_until_cut(mut stream: tonic::Streaming<ServicingResponse>) -> Reached {
    let mut reached = Reached::NotStarted;
    while let Some(Ok(message)) = stream.next().await {
        match message.response {
            Some(servicing_response::Response::Started(started)) => {
                reached = Reached::Running(started.operation_id);
            }
            Some(servicing_response::Response::Completed(_)) => {
                return match reached {
                    Reached::Running(id) => Reached::Completed(id),
                    other => other,
                };
            }
            _ => {}
        }
    }
    reached
}

/// Byte range (offset, length) of partition `name` on `disk`.
pub fn partition_range(disk: &Path, name: &str) -> (u64, u64) {
    let file = File::open(disk).unwrap();
    let mut head = vec![0u8; 34 * 512];
    file.read_exact_at(&mut head, 0).unwrap();
    let gpt = Gpt::parse_primary(&head, 512).unwrap();
    let entry = gpt.partitions().iter().find(|e| e.name == name).unwrap();
    (entry.start_offset(512), entry.size_bytes(512))
}

/// SHA-384 of the whole byte range of partition `name` on `disk`.
pub fn partition_sha384(disk: &Path, name: &str) -> String {
    let (offset, len) = partition_range(disk, name);
    range_sha384(disk, offset, len)
}

/// SHA-384 of `len` bytes of `path` from `offset`.
pub fn range_sha384(path: &Path, offset: u64, len: u64) -> String {
    let file = File::open(path).unwrap();
    let mut hasher = Sha384::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], offset + done).unwrap();
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    hex::encode(hasher.finalize())
}

/// Times a future (to size the next random kill delay: a kill point is
/// drawn from the whole duration of the operation it interrupts).
pub async fn timed<T>(f: impl std::future::Future<Output = T>) -> (T, Duration) {
    let start = Instant::now();
    let out = f.await;
    (out, start.elapsed())
}

/// A temp dir for one scenario: state dir + disk-image files.
pub fn scenario_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(&format!("crash-{name}-"))
        .tempdir()
        .unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    (dir, state)
}

/// Fills the file system of `dir` (a file `dir/filler` written until the
/// writes fail); removing the file frees the space again.
pub fn fill(dir: &Path) -> std::path::PathBuf {
    use std::io::Write;
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let block = vec![0xa5u8; 64 * 1024];
    while file.write_all(&block).is_ok() {}
    // The last partial block, byte by byte.
    while file.write_all(&[0]).is_ok() {}
    let _ = file.sync_all();
    path
}

/// A tmpfs of `size` mounted on `dir` (root: every e2e test runs as root),
/// unmounted on drop.
#[derive(Debug)]
pub struct Tmpfs(pub std::path::PathBuf);

impl Tmpfs {
    pub fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            // 0700: a state directory others can write is refused (tmpfs defaults to 1777).
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "mount tmpfs on {}", dir.display());
        Tmpfs(dir.to_owned())
    }

    pub fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success(), "remount {options}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
