//! The group every script and health check runs in, which the daemon ends
//! as a whole: a PID namespace of its own. Its init is `sleep` under
//! `unshare --pid --fork --kill-child` (util-linux); the script enters it
//! with `nsenter --target <init> --pid`. When the script exits, whatever it
//! left running (a backgrounded `sleep`, a daemon it started, chrooted in
//! the new root or not) is counted and ended by killing the namespace's
//! init, after which the kernel kills every process in it: none can leave
//! a PID namespace, so nothing survives to keep the new root busy.
//!
//! The same on every host: where systemd is PID 1 the namespace stays in
//! tridentd.service's cgroup (a transient scope would move the processes
//! out of it, so a daemon that crashed would leave them behind), and where
//! it is not (containers, CI) there is nothing else to rely on.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// How long the namespace's init may take to appear, and its processes
/// to be gone once it is killed.
const SETTLE: Duration = Duration::from_secs(10);

/// A process of the group, as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub pid: i32,
    pub comm: String,
}

/// A PID namespace whose init the daemon holds.
#[derive(Debug)]
pub struct ProcessGroup {
    /// `unshare`, the init's parent (killed when dropped).
    unshare: Child,
    /// The namespace's init, as the host numbers it.
    init: i32,
    /// `/proc/<pid>/ns/pid` of the namespace (`pid:[inode]`).
    namespace: String,
    ended: bool,
}

/// The fields of `/proc/<pid>/stat` after the command name: state, ppid.
fn stat_of(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

fn namespace_of(pid: i32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/pid"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

fn pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default()
}

impl ProcessGroup {
    /// Starts the namespace (its init running, its number known).
    pub async fn start() -> std::io::Result<ProcessGroup> {
        let mut unshare = Command::new("unshare")
            .args([
                "--pid",
                "--fork",
                "--kill-child",
                "--",
                "sleep",
                "2147483647",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let parent = unshare
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(0);
        let own = namespace_of(std::process::id().try_into().unwrap_or(0));
        let started = Instant::now();
        loop {
            if let Some(status) = unshare.try_wait()? {
                let mut detail = String::new();
                if let Some(mut err) = unshare.stderr.take() {
                    use tokio::io::AsyncReadExt;
                    let _ = err.read_to_string(&mut detail).await;
                }
                return Err(std::io::Error::other(format!(
                    "`unshare --pid --fork` ended ({status}): {}",
                    detail.trim()
                )));
            }
            let init = pids()
                .into_iter()
                .find(|pid| stat_of(*pid).is_some_and(|(_, ppid)| ppid == parent));
            if let Some(init) = init
                && let Some(namespace) = namespace_of(init).filter(|ns| Some(ns) != own.as_ref())
            {
                return Ok(ProcessGroup {
                    unshare,
                    init,
                    namespace,
                    ended: false,
                });
            }
            if started.elapsed() > SETTLE {
                return Err(std::io::Error::other(
                    "the script's PID namespace did not start in time",
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The command that runs `program` inside the namespace.
    pub fn command(&self, program: impl AsRef<Path>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--target={}", self.init))
            .arg("--pid")
            .arg("--")
            .arg(program.as_ref());
        cmd
    }

    /// The processes of the namespace but its init; zombies (already
    /// ended, waiting for their parent) left out.
    pub fn members(&self) -> Vec<Member> {
        pids()
            .into_iter()
            .filter(|pid| *pid != self.init)
            .filter(|pid| namespace_of(*pid).as_deref() == Some(self.namespace.as_str()))
            .filter(|pid| stat_of(*pid).is_some_and(|(state, _)| state != 'Z'))
            .map(|pid| Member {
                pid,
                comm: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim().to_owned())
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// Ends every process of the namespace: those still running are
    /// returned, then the init is killed (the kernel kills the rest) and
    /// the end awaited. Fails when a process of it is still running after
    /// that.
    pub async fn end(&mut self) -> std::io::Result<Vec<Member>> {
        let left = self.members();
        self.ended = true;
        if let Err(errno) = kill(Pid::from_raw(self.init), Signal::SIGKILL) {
            tracing::debug!(%errno, init = self.init, "the script namespace's init is gone");
        }
        let _ = tokio::time::timeout(SETTLE, self.unshare.wait()).await;
        let started = Instant::now();
        loop {
            let still = self.members();
            if still.is_empty() {
                return Ok(left);
            }
            if started.elapsed() > SETTLE {
                return Err(std::io::Error::other(format!(
                    "{} process(es) of the script's namespace still running after it was \
                     ended: {}",
                    still.len(),
                    describe(&still)
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// `sleep (pid 123), sh (pid 124)`.
pub fn describe(members: &[Member]) -> String {
    members
        .iter()
        .map(|m| format!("{} (pid {})", m.comm, m.pid))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // An operation cut short: nothing of the script outlives it.
        if !self.ended {
            let _ = kill(Pid::from_raw(self.init), Signal::SIGKILL);
        }
    }
}
