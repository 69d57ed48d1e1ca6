//! A root shell in a VM guest over SSH (QEMU's `hostfwd` to the guest's
//! sshd, [`crate::vm::VmSpec::ssh`]), logged in with the key the Host
//! Configuration gave root. For scenarios that act where no agent of ours
//! runs: a host serviced by upstream Trident's agent, which takes its
//! commands on the machine itself.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `ssh`/`scp` to root@127.0.0.1:`port` with the private key `key`.
#[derive(Debug, Clone)]
pub struct GuestShell {
    port: u16,
    key: PathBuf,
}

impl GuestShell {
    pub fn new(port: u16, key: &Path) -> GuestShell {
        GuestShell {
            port,
            key: key.to_owned(),
        }
    }

    /// Options every call shares: a guest's host key is new at each
    /// install, so it is neither checked nor remembered.
    fn options(&self, port_flag: &str) -> Vec<String> {
        [
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=20",
            "-o",
            "ServerAliveInterval=15",
            "-i",
        ]
        .into_iter()
        .map(String::from)
        .chain([
            self.key.display().to_string(),
            port_flag.to_owned(),
            self.port.to_string(),
        ])
        .collect()
    }

    /// Runs `script` with `bash -eu` as root in the guest; its output.
    pub async fn run(&self, script: &str) -> Output {
        let mut command = Command::new("ssh");
        command
            .args(self.options("-p"))
            .args(["root@127.0.0.1", "bash -eu -s"]);
        let script = script.to_owned();
        tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("ssh (package openssh-client)");
            child
                .stdin
                .take()
                .unwrap()
                .write_all(script.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        })
        .await
        .unwrap()
    }

    /// [`GuestShell::run`], which must succeed: its standard output.
    pub async fn ok(&self, what: &str, script: &str) -> String {
        let started = Instant::now();
        let out = self.run(script).await;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!(
            "guest: {what} ({:.1}s, {})",
            started.elapsed().as_secs_f64(),
            out.status
        );
        assert!(
            out.status.success(),
            "guest: {what}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
        stdout
    }

    /// Waits until sshd answers (after a boot).
    pub async fn wait_until_up(&self, timeout: Duration) {
        let started = Instant::now();
        loop {
            let out = self.run("true").await;
            if out.status.success() {
                return;
            }
            assert!(
                started.elapsed() < timeout,
                "guest sshd not answering after {timeout:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
    }

    /// Copies the local file `from` to `to` in the guest.
    pub async fn copy_to(&self, from: &Path, to: &str) {
        let mut command = Command::new("scp");
        command
            .args(self.options("-P"))
            .arg(from)
            .arg(format!("root@127.0.0.1:{to}"));
        let what = format!("scp {} {to}", from.display());
        let out = tokio::task::spawn_blocking(move || command.output().unwrap())
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
