//! Manual start: socket creation, ownership and mode, one instance per
//! socket, stale sockets, clean exit, and root-only start.

use std::{
    os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt},
    time::Duration,
};

use nix::sys::signal::Signal;
use trident_e2e::Daemon;

const EXIT_WAIT: Duration = Duration::from_secs(15);

fn gid_of(group: &str) -> u32 {
    nix::unistd::Group::from_name(group)
        .ok()
        .flatten()
        .map(|group| group.gid.as_raw())
        .unwrap_or_else(|| panic!("group {group} missing on this machine"))
}

#[tokio::test]
async fn default_socket_is_root_owned_mode_0600_in_a_created_parent_dir() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("run/trident/listen.sock");
    let daemon = Daemon::builder().socket(&socket).spawn().await?;
    let meta = std::fs::metadata(daemon.socket_path())?;
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!((meta.uid(), meta.gid()), (0, 0));
    Ok(())
}

#[tokio::test]
async fn socket_group_makes_the_socket_0660_root_and_that_group() -> anyhow::Result<()> {
    let daemon = Daemon::builder()
        .args(["--socket-group", "nogroup"])
        .spawn()
        .await?;
    let meta = std::fs::metadata(daemon.socket_path())?;
    assert_eq!(meta.permissions().mode() & 0o777, 0o660);
    assert_eq!((meta.uid(), meta.gid()), (0, gid_of("nogroup")));
    Ok(())
}

#[tokio::test]
async fn unknown_socket_group_is_a_clear_start_error() -> anyhow::Result<()> {
    let mut daemon = Daemon::builder()
        .args(["--socket-group", "no-such-group-e2e"])
        .no_wait()
        .spawn()
        .await?;
    let status = daemon.wait_exit(EXIT_WAIT).await?.expect("daemon exits");
    assert!(!status.success());
    assert!(
        daemon
            .stderr()
            .contains("unknown group \"no-such-group-e2e\""),
        "{}",
        daemon.stderr()
    );
    assert!(!daemon.socket_path().exists());
    Ok(())
}

#[tokio::test]
async fn second_daemon_on_the_same_socket_fails_and_the_first_keeps_answering() -> anyhow::Result<()>
{
    let first = Daemon::start().await?;
    let mut second = Daemon::builder()
        .socket(first.socket_path())
        .no_wait()
        .spawn()
        .await?;
    let status = second
        .wait_exit(EXIT_WAIT)
        .await?
        .expect("second daemon exits");
    assert!(!status.success());
    let stderr = second.stderr();
    let expected = format!(
        "another tridentd is serving {} (pid {})",
        first.socket_path().display(),
        first.pid().expect("first daemon pid")
    );
    assert!(stderr.contains(&expected), "{stderr}");
    trident_e2e::version(first.socket_path()).await?;
    Ok(())
}

#[tokio::test]
async fn stale_socket_file_is_replaced() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("stale.sock");
    // A socket file nobody listens on any more.
    drop(std::os::unix::net::UnixListener::bind(&socket)?);
    assert!(socket.exists());
    let daemon = Daemon::builder().socket(&socket).spawn().await?;
    trident_e2e::version(daemon.socket_path()).await?;
    // Logged before ready; read from the pipe, which may lag.
    daemon
        .wait_for_stderr("replacing stale socket file", Duration::from_secs(30))
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_regular_file_at_the_socket_path_is_left_alone() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("not-a-socket");
    std::fs::write(&path, "keep me")?;
    let mut daemon = Daemon::builder().socket(&path).no_wait().spawn().await?;
    let status = daemon.wait_exit(EXIT_WAIT).await?.expect("daemon exits");
    assert!(!status.success());
    assert!(
        daemon.stderr().contains("is not a socket"),
        "{}",
        daemon.stderr()
    );
    assert_eq!(std::fs::read_to_string(&path)?, "keep me");
    Ok(())
}

#[tokio::test]
async fn sigterm_exits_zero_and_removes_the_socket() -> anyhow::Result<()> {
    let mut daemon = Daemon::start().await?;
    daemon.signal(Signal::SIGTERM)?;
    let status = daemon
        .wait_exit(EXIT_WAIT)
        .await?
        .expect("daemon exits on SIGTERM");
    assert_eq!(status.code(), Some(0), "stderr:\n{}", daemon.stderr());
    assert!(!daemon.socket_path().exists());
    assert!(
        daemon.stderr().contains("received SIGTERM"),
        "{}",
        daemon.stderr()
    );
    Ok(())
}

#[tokio::test]
async fn sigint_exits_zero() -> anyhow::Result<()> {
    let mut daemon = Daemon::start().await?;
    daemon.signal(Signal::SIGINT)?;
    let status = daemon
        .wait_exit(EXIT_WAIT)
        .await?
        .expect("daemon exits on SIGINT");
    assert_eq!(status.code(), Some(0));
    Ok(())
}

#[tokio::test]
async fn non_root_start_fails_with_one_clear_line() -> anyhow::Result<()> {
    let mut daemon = Daemon::builder()
        .wrapper([
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
        ])
        .no_wait()
        .spawn()
        .await?;
    let status = daemon.wait_exit(EXIT_WAIT).await?.expect("daemon exits");
    assert!(!status.success());
    let stderr = daemon.stderr();
    assert!(
        stderr.contains("tridentd: error: tridentd must run as root (effective uid is 65534)"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "exactly one line: {stderr}");
    assert!(!daemon.socket_path().exists());
    // Nothing was created in the state dir either (no journal, no datastore).
    assert_eq!(std::fs::read_dir(daemon.state_dir())?.count(), 0);
    Ok(())
}
