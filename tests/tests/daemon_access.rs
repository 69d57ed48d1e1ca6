//! The peer check: root and socket-group members may call; everyone else is
//! answered PERMISSION_DENIED by the daemon itself, even when the socket
//! file's mode would let them connect.

use std::{os::unix::fs::PermissionsExt, path::Path, process::Command};

use trident_e2e::{Daemon, bin_path};

/// Runs the probe client as another user; returns (exit code, stdout).
fn probe_as(user: &str, group: &str, socket: &Path) -> anyhow::Result<(Option<i32>, String)> {
    let output = Command::new("setpriv")
        .arg(format!("--reuid={user}"))
        .arg(format!("--regid={group}"))
        .arg("--clear-groups")
        .arg(bin_path("trident-e2e-probe"))
        .arg(socket)
        .output()?;
    Ok((
        output.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    ))
}

/// Lets other users reach the socket file: the temp dir is 0700 by default.
fn open_socket_dir(daemon: &Daemon) -> anyhow::Result<()> {
    std::fs::set_permissions(daemon.temp_dir(), std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

#[tokio::test]
async fn socket_group_member_may_call() -> anyhow::Result<()> {
    let daemon = Daemon::builder()
        .args(["--socket-group", "nogroup"])
        .spawn()
        .await?;
    open_socket_dir(&daemon)?;
    let (code, output) = probe_as("nobody", "nogroup", daemon.socket_path())?;
    assert_eq!(code, Some(0), "{output}");
    assert!(output.starts_with("ok "), "{output}");
    // Every connection is logged with the peer's credentials.
    let stderr = daemon.stderr();
    assert!(
        stderr.contains("uid=65534") && stderr.contains("connection accepted"),
        "{stderr}"
    );
    Ok(())
}

#[tokio::test]
async fn non_member_is_denied_by_the_daemon_even_if_the_socket_file_allows_it() -> anyhow::Result<()>
{
    let daemon = Daemon::builder()
        .args(["--socket-group", "nogroup"])
        .spawn()
        .await?;
    open_socket_dir(&daemon)?;
    // Simulate a too-permissive socket (e.g. a SocketMode= mistake): the
    // file no longer protects anything, so only the peer check stands.
    std::fs::set_permissions(daemon.socket_path(), std::fs::Permissions::from_mode(0o666))?;
    let (code, output) = probe_as("daemon", "daemon", daemon.socket_path())?;
    assert_eq!(code, Some(1), "{output}");
    assert!(output.starts_with("status PermissionDenied"), "{output}");
    assert!(
        output.contains("uid 1") && output.contains("group nogroup"),
        "{output}"
    );
    Ok(())
}

#[tokio::test]
async fn without_socket_group_only_root_may_call() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    open_socket_dir(&daemon)?;
    std::fs::set_permissions(daemon.socket_path(), std::fs::Permissions::from_mode(0o666))?;
    let (code, output) = probe_as("nobody", "nogroup", daemon.socket_path())?;
    assert_eq!(code, Some(1), "{output}");
    assert!(
        output.contains("PermissionDenied") && output.contains("requires root"),
        "{output}"
    );
    // Root itself still gets through.
    trident_e2e::version(daemon.socket_path()).await?;
    Ok(())
}

#[tokio::test]
async fn socket_file_mode_keeps_non_members_out_before_the_daemon_sees_them() -> anyhow::Result<()>
{
    let daemon = Daemon::builder()
        .args(["--socket-group", "nogroup"])
        .spawn()
        .await?;
    open_socket_dir(&daemon)?;
    let (code, output) = probe_as("daemon", "daemon", daemon.socket_path())?;
    assert_eq!(code, Some(2), "{output}");
    assert!(
        output.to_lowercase().contains("permission denied"),
        "{output}"
    );
    Ok(())
}
