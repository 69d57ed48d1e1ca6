//! The peer check: root and socket-group members may call; everyone else is
//! answered PERMISSION_DENIED by the daemon itself, even when the socket
//! file's mode would let them connect.

use std::{os::unix::fs::PermissionsExt, path::Path, process::Command, time::Duration};

use trident_e2e::{Daemon, bin_path, uds_channel, watch_snapshot};
use trident_proto::v1::{
    LogRecord, WatchOptions, field, record, stream_event,
    telemetry_service_client::TelemetryServiceClient,
};

/// Runs the probe client as another user; returns (exit code, stdout).
fn probe_as(user: &str, group: &str, socket: &Path) -> anyhow::Result<(Option<i32>, String)> {
    probe_as_with(user, group, socket, &[])
}

/// Like [`probe_as`], with the probe's extra arguments (CALLS, PAUSE_MS).
fn probe_as_with(
    user: &str,
    group: &str,
    socket: &Path,
    extra: &[&str],
) -> anyhow::Result<(Option<i32>, String)> {
    let output = Command::new("setpriv")
        .arg(format!("--reuid={user}"))
        .arg(format!("--regid={group}"))
        .arg("--clear-groups")
        .arg(bin_path("trident-e2e-probe"))
        .arg(socket)
        .args(extra)
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
    let stderr = daemon
        .wait_for_stderr("uid=65534", Duration::from_secs(30))
        .await?;
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

/// The log records the bus ring holds now.
async fn ring_logs(daemon: &Daemon) -> anyhow::Result<Vec<LogRecord>> {
    let mut telemetry = TelemetryServiceClient::new(uds_channel(daemon.socket_path()).await?);
    let events = watch_snapshot(
        &mut telemetry,
        WatchOptions::default(),
        Duration::from_secs(60),
    )
    .await?;
    Ok(events
        .into_iter()
        .filter_map(|e| match e.event {
            Some(stream_event::Event::Record(r)) => match r.record {
                Some(record::Record::Log(log)) => Some(log),
                _ => None,
            },
            _ => None,
        })
        .collect())
}

fn unsigned_field(log: &LogRecord, name: &str) -> Option<u64> {
    log.fields
        .iter()
        .find(|f| f.name == name)
        .and_then(|f| match f.value {
            Some(field::Value::Unsigned(n)) => Some(n),
            Some(field::Value::Signed(n)) => u64::try_from(n).ok(),
            _ => None,
        })
}

#[tokio::test]
async fn refused_callers_cannot_flood_the_ring_one_warning_per_peer_with_a_count()
-> anyhow::Result<()> {
    const CALLS: u32 = 300;
    // A small ring: 300 unthrottled warnings would push out every earlier record.
    let daemon = Daemon::builder()
        .args(["--socket-group", "nogroup", "--bus-ring-records", "100"])
        .args(["--refused-peer-log-interval", "2s"])
        .spawn()
        .await?;
    open_socket_dir(&daemon)?;
    std::fs::set_permissions(daemon.socket_path(), std::fs::Permissions::from_mode(0o666))?;
    // CALLS refusals on one connection, then one more after the interval.
    let (code, output) = probe_as_with(
        "daemon",
        "daemon",
        daemon.socket_path(),
        &[&CALLS.to_string(), "3000"],
    )?;
    assert_eq!(code, Some(1), "{output}");
    assert!(output.starts_with("status PermissionDenied"), "{output}");

    let logs = ring_logs(&daemon).await?;
    assert!(
        logs.iter().any(|l| l.message == "tridentd ready"),
        "the refusals pushed earlier records out of the ring: {:?}",
        logs.iter().map(|l| &l.message).collect::<Vec<_>>()
    );
    let warnings: Vec<&LogRecord> = logs
        .iter()
        .filter(|l| l.message.starts_with("denied RPC"))
        .collect();
    // Every refusal is either a warning or counted in the next one; the
    // last call came after the interval, so it is a warning with a count.
    let accounted: u64 = warnings
        .iter()
        .map(|w| 1 + unsigned_field(w, "suppressed").unwrap_or(0))
        .sum();
    assert_eq!(accounted, u64::from(CALLS) + 1, "{warnings:?}");
    assert!(warnings.len() < 20, "{} warnings", warnings.len());
    let last = warnings.last().expect("no denied-RPC warning");
    assert!(
        unsigned_field(last, "suppressed").unwrap_or(0) >= 1,
        "{last:?}"
    );
    Ok(())
}

#[tokio::test]
async fn supplementary_socket_group_member_may_call_and_leaving_the_group_is_refused()
-> anyhow::Result<()> {
    let daemon = Daemon::builder()
        .args(["--socket-group", "nogroup"])
        .spawn()
        .await?;
    open_socket_dir(&daemon)?;
    let run = |groups: &[&str]| -> anyhow::Result<(Option<i32>, String)> {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=daemon", "--regid=daemon"]);
        match groups {
            [] => cmd.arg("--clear-groups"),
            _ => cmd.arg(format!("--groups={}", groups.join(","))),
        };
        let output = cmd
            .arg(bin_path("trident-e2e-probe"))
            .arg(daemon.socket_path())
            .output()?;
        Ok((
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        ))
    };
    // Inside the group through a supplementary group: the socket file
    // (0660 root:nogroup) and the peer check both let it in.
    let (code, output) = run(&["nogroup"])?;
    assert_eq!(code, Some(0), "{output}");
    // The same user outside the group cannot even open the socket file.
    let (code, output) = run(&[])?;
    assert_eq!(code, Some(2), "{output}");
    // And with the file made world-writable, the daemon still refuses it.
    std::fs::set_permissions(daemon.socket_path(), std::fs::Permissions::from_mode(0o666))?;
    let (code, output) = run(&[])?;
    assert_eq!(code, Some(1), "{output}");
    assert!(output.starts_with("status PermissionDenied"), "{output}");
    Ok(())
}
