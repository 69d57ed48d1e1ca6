//! The `trident` CLI following a *remote* host through the reboot its
//! daemon started: the daemon reads its boot id from a file of the test's
//! (`TRIDENT_BOOT_ID_FILE`), so its boot id differs from this host's and
//! the CLI treats it as remote, as it would through `trident rcp-listen`.
//! The daemon's `--reboot systemd` runs a stand-in `systemctl` on PATH (the
//! one mock: a real reboot cannot run here) that writes the host's next
//! boot id and stops the daemon (SIGTERM to its parent), as a reboot would.
//! The test then plays the host coming back (or not) with a real daemon,
//! directly on the daemon's socket or through the reverse-connect proxy
//! (`trident rcp-listen` and a `trident-rcp` agent), as an orchestrator
//! drives a host.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use trident_e2e::rcp_support::{AgentProc, ListenerProc, ORCHESTRATOR, Pki, wait_path};
use trident_e2e::servicing_support::Fixture;
use trident_e2e::{Daemon, DaemonBuilder, bin_path};
use trident_rcp::pki::LeafSpec;

/// Generous: installs and restarts on a loaded 2-core machine.
const WAIT: Duration = Duration::from_secs(180);
const BOOT_BEFORE: &str = "5c1c3d4e-0000-4000-8000-00000000b001";
const BOOT_AFTER: &str = "5c1c3d4e-0000-4000-8000-00000000b002";

/// A "remote host": its boot id file and a `systemctl` stand-in that
/// records the call, writes `next_boot` (if any) and stops the daemon.
struct RemoteHost {
    fx: Fixture,
    boot_id_file: PathBuf,
    calls: PathBuf,
    path: String,
}

impl RemoteHost {
    fn new(next_boot: Option<&str>, stops_daemon: bool) -> Self {
        let fx = Fixture::new();
        let dir = fx.dir.path().to_path_buf();
        let boot_id_file = dir.join("boot_id");
        std::fs::write(&boot_id_file, format!("{BOOT_BEFORE}\n")).unwrap();
        let calls = dir.join("systemctl-calls");
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let mut script = format!("#!/bin/sh\necho \"$@\" >> {}\n", calls.display());
        if let Some(next) = next_boot {
            script.push_str(&format!("echo {next} > {}\n", boot_id_file.display()));
        }
        if stops_daemon {
            // The daemon runs systemctl itself: its parent is the daemon.
            script.push_str("kill -TERM $PPID\n");
        }
        let systemctl = bin.join("systemctl");
        std::fs::write(&systemctl, script).unwrap();
        std::fs::set_permissions(&systemctl, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        RemoteHost {
            fx,
            boot_id_file,
            calls,
            path,
        }
    }

    fn daemon(&self) -> DaemonBuilder {
        Daemon::builder()
            .args(["--inactivity-timeout", "0", "--reboot", "systemd"])
            .env("PATH", &self.path)
            .env("TRIDENT_BOOT_ID_FILE", &self.boot_id_file)
    }

    /// A Host Configuration file installing a fixture image.
    fn config(&self) -> PathBuf {
        let image = self.fx.image("v1", 1, None);
        let path = self.fx.dir.path().join("install.yaml");
        std::fs::write(&path, self.fx.config(&image, "")).unwrap();
        path
    }
}

/// `trident install CONFIG --progress MODE` in the background.
fn start_install(socket: &Path, config: &Path, mode: &str, timeout: &str) -> Child {
    Command::new(bin_path("trident"))
        .arg("--socket")
        .arg(socket)
        .arg("install")
        .arg(config)
        .args(["--progress", mode])
        .env_remove("TRIDENT_SOCKET")
        .env_remove("TRIDENT_UPSTREAM_SOCKET")
        .env_remove("TRACEPARENT")
        .env("NO_COLOR", "1")
        .env("TRIDENT_REBOOT_TIMEOUT", timeout)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

async fn finish(child: Child) -> Output {
    let waiting = tokio::task::spawn_blocking(move || child.wait_with_output());
    tokio::time::timeout(WAIT, waiting)
        .await
        .expect("trident did not exit in time")
        .unwrap()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The CLI's closing `{"type":"reboot",...}` line on stdout (json mode).
fn reboot_line(stdout: &str) -> serde_json::Value {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|v| v["type"] == "reboot")
        .unwrap_or_else(|| panic!("no reboot line in:\n{stdout}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_host_that_reboots_and_comes_back_exits_0_and_names_its_state() {
    let host = RemoteHost::new(Some(BOOT_AFTER), true);
    let mut before = host.daemon().spawn().await.unwrap();
    let cli = start_install(before.socket_path(), &host.config(), "json", "3m");
    // The stand-in "reboot" stopped the daemon; the host comes back: a new
    // daemon on the same socket and state, with the new boot id.
    let exited = before.wait_exit(WAIT).await.unwrap();
    assert!(exited.is_some(), "{}", before.stderr());
    assert_eq!(std::fs::read_to_string(&host.calls).unwrap(), "reboot\n");
    let _after = host
        .daemon()
        .socket(before.socket_path())
        .state_dir(before.state_dir())
        .spawn()
        .await
        .unwrap();
    let out = finish(cli).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the host is rebooting (a remote host: the daemon's boot id is not this host's); waiting up to 3m for it to come back"),
        "{stderr}"
    );
    assert!(stderr.contains("the remote host came back"), "{stderr}");
    assert!(
        stderr.contains(&format!("boot id {BOOT_AFTER}")),
        "{stderr}"
    );
    let line = reboot_line(&stdout);
    assert_eq!(line["outcome"], "came-back", "{line}");
    assert_eq!(line["previous_boot_id"], BOOT_BEFORE, "{line}");
    assert_eq!(line["boot_id"], BOOT_AFTER, "{line}");
    // What the host came back as is its Host Status, also in the line.
    let state = line["servicing_state"].as_str().unwrap();
    assert!(!state.is_empty(), "{line}");
    assert!(stderr.contains(state), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_host_that_keeps_its_boot_id_did_not_reboot_exit_3() {
    // systemctl "succeeds" but nothing reboots: the daemon keeps answering.
    let host = RemoteHost::new(None, false);
    let daemon = host.daemon().spawn().await.unwrap();
    let cli = start_install(daemon.socket_path(), &host.config(), "plain", "3s");
    let out = finish(cli).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the host is rebooting (a remote host"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "the remote host did not reboot: its daemon still answers with boot id {BOOT_BEFORE}"
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&host.calls).unwrap(), "reboot\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_remote_host_that_goes_down_and_stays_down_exits_2() {
    let host = RemoteHost::new(Some(BOOT_AFTER), true);
    let mut daemon = host.daemon().spawn().await.unwrap();
    // Long enough for the daemon to be gone well before it ends.
    let cli = start_install(daemon.socket_path(), &host.config(), "json", "20s");
    assert!(daemon.wait_exit(WAIT).await.unwrap().is_some());
    let out = finish(cli).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("the remote host went down for its reboot and did not come back within 20s"),
        "{stderr}"
    );
    let line = reboot_line(&stdout);
    assert_eq!(line["outcome"], "did-not-come-back", "{line}");
    assert_eq!(line["boot_id"], serde_json::Value::Null, "{line}");
}

#[tokio::test(flavor = "multi_thread")]
async fn through_the_proxy_the_cli_follows_the_host_across_its_reboot_and_reconnect() {
    let host = RemoteHost::new(Some(BOOT_AFTER), true);
    let pki = Pki::new();
    let listener = ListenerProc::start(&pki, &[]);
    let files = pki.host("host-1", &LeafSpec::dns("host-1"));
    let host_socket = pki.sockets_dir().join("host-1.sock");
    let mut before = host.daemon().spawn().await.unwrap();
    let mut agent = AgentProc::start(listener.addr, ORCHESTRATOR, &files, before.socket_path());
    wait_path(&host_socket, true).await;
    let cli = start_install(&host_socket, &host.config(), "plain", "3m");
    // The "reboot": the daemon stops, then the agent with it (the tunnel
    // and the host's socket go away), and both start again.
    assert!(before.wait_exit(WAIT).await.unwrap().is_some());
    agent.kill();
    wait_path(&host_socket, false).await;
    let _after = host
        .daemon()
        .socket(before.socket_path())
        .state_dir(before.state_dir())
        .spawn()
        .await
        .unwrap();
    let _agent = AgentProc::start(listener.addr, ORCHESTRATOR, &files, before.socket_path());
    let out = finish(cli).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the host is rebooting (a remote host"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the remote host came back after"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("boot id {BOOT_AFTER}")),
        "{stderr}"
    );
    assert_eq!(
        listener.nth_event("connected", 1, |_| true)["host"],
        "host-1"
    );
}
