//! Upstream Trident's socket path is served beside ours: both answer under
//! socket activation (two listeners) and after a manual start (two files),
//! and the CLI falls back to the upstream path when ours has no listener.
//! Temp dirs stand in for /run/trident.

use std::{
    path::Path,
    process::{Command, Output},
    time::Duration,
};

use nix::sys::signal::Signal;
use trident_e2e::{Daemon, bin_path};

/// `trident version` with `TRIDENT_SOCKET=ours` and `TRIDENT_UPSTREAM_SOCKET=upstream`.
fn cli_version(ours: &Path, upstream: &Path) -> Output {
    Command::new(bin_path("trident"))
        .arg("version")
        .env("TRIDENT_SOCKET", ours)
        .env("TRIDENT_UPSTREAM_SOCKET", upstream)
        .env("NO_COLOR", "1")
        .output()
        .expect("run trident")
}

#[tokio::test(flavor = "multi_thread")]
async fn both_paths_answer_under_socket_activation() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let ours = dir.path().join("listen.sock");
    let upstream = dir.path().join("trident.sock");
    // What tridentd.socket's two ListenStream= lines hand over: fds 3 and 4.
    let mut daemon = Daemon::builder()
        .socket(&ours)
        .wrapper([
            "systemd-socket-activate".as_ref(),
            "-l".as_ref(),
            ours.as_os_str(),
            "-l".as_ref(),
            upstream.as_os_str(),
        ])
        .spawn()
        .await?;
    for socket in [&ours, &upstream] {
        let version = trident_e2e::version(socket).await?;
        assert_eq!(version.version, env!("CARGO_PKG_VERSION"));
    }
    for fd in ["fd 3, socket activation", "fd 4, socket activation"] {
        daemon.wait_for_stderr(fd, Duration::from_secs(30)).await?;
    }

    daemon.signal(Signal::SIGTERM)?;
    let status = daemon.wait_exit(Duration::from_secs(15)).await?;
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        daemon.stderr()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_manual_start_creates_and_removes_both_sockets() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let ours = dir.path().join("listen.sock");
    let upstream = dir.path().join("trident.sock");
    let mut daemon = Daemon::builder()
        .socket(&ours)
        .arg("--upstream-socket")
        .arg(&upstream)
        .spawn()
        .await?;
    for socket in [&ours, &upstream] {
        let version = trident_e2e::version(socket).await?;
        assert_eq!(version.version, env!("CARGO_PKG_VERSION"));
    }
    daemon.signal(Signal::SIGTERM)?;
    let status = daemon.wait_exit(Duration::from_secs(15)).await?;
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "{}",
        daemon.stderr()
    );
    assert!(
        !ours.exists() && !upstream.exists(),
        "socket files left behind"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_upstream_path_stops_a_second_daemon() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let upstream = dir.path().join("trident.sock");
    let _first = Daemon::builder().socket(&upstream).spawn().await?;
    let mut second = Daemon::builder()
        .socket(dir.path().join("listen.sock"))
        .arg("--upstream-socket")
        .arg(&upstream)
        .no_wait()
        .spawn()
        .await?;
    let status = second.wait_exit(Duration::from_secs(15)).await?;
    assert_ne!(status.and_then(|s| s.code()), Some(0));
    assert!(
        second.stderr().contains("trident.sock"),
        "{}",
        second.stderr()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_falls_back_to_the_upstream_path() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let ours = dir.path().join("listen.sock");
    let upstream = dir.path().join("trident.sock");

    // Only the upstream path is served (say, by a daemon started for it).
    let daemon = Daemon::builder().socket(&upstream).spawn().await?;
    let out = cli_version(&ours, &upstream);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("tridentd"),
        "{stderr}"
    );
    drop(daemon);

    // Neither answers: the error names ours, the one to act on.
    let out = cli_version(&ours, &upstream);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("listen.sock"), "{stderr}");
    Ok(())
}
