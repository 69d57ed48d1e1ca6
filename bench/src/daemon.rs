//! A real `tridentd` for the benchmarks that go through the daemon: started
//! on a socket in a work directory with its own state, killed on drop.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::uds::channel;

/// Env var: directory holding `tridentd` (default: next to this binary).
const ENV_BIN_DIR: &str = "TRIDENT_BIN_DIR";
/// How long the daemon may take to answer after start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `tridentd`, killed on drop.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    pub socket: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Path of the `tridentd` binary the benchmarks start.
pub fn tridentd() -> PathBuf {
    if let Some(dir) = std::env::var_os(ENV_BIN_DIR) {
        return PathBuf::from(dir).join("tridentd");
    }
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent().map(|d| d.join("tridentd")).unwrap_or_default()
}

impl Daemon {
    /// Starts `tridentd` on `dir/tridentd.sock` with a fresh `dir/state`,
    /// no idle exit, no reboots, plus `extra` arguments; returns once it
    /// answers.
    pub async fn start<I, S>(dir: &Path, extra: I) -> anyhow::Result<Daemon>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Daemon::start_with_reboot(dir, "none", extra).await
    }

    /// Like [`Daemon::start`] with `--reboot reboot` (`none`, `record`).
    pub async fn start_with_reboot<I, S>(
        dir: &Path,
        reboot: &str,
        extra: I,
    ) -> anyhow::Result<Daemon>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let bin = tridentd();
        let socket = dir.join("tridentd.sock");
        let state = dir.join("state");
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state)?;
        let child = Command::new(&bin)
            .arg("--socket")
            .arg(&socket)
            .arg("--state-dir")
            .arg(&state)
            .args(["--inactivity-timeout", "0", "--reboot", reboot])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {} (build it with --release first)", bin.display()))?;
        let daemon = Daemon { child, socket };
        let deadline = Instant::now() + START_TIMEOUT;
        while channel(&daemon.socket).await.is_err() {
            if Instant::now() > deadline {
                bail!("tridentd did not answer on {}", daemon.socket.display());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(daemon)
    }

    /// Process id of the daemon (for /proc readings).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}
