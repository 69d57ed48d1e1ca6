//! systemd integration: socket activation (LISTEN_FDS), refusal of unusable
//! fds, sd_notify READY/STOPPING, and `systemd-analyze verify` of the units.

use std::{path::Path, process::Command, time::Duration};

use nix::sys::signal::Signal;
use trident_e2e::{Daemon, bin_path};

#[tokio::test]
async fn first_connection_on_an_activated_socket_starts_the_daemon_and_is_answered()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("activated.sock");
    // systemd-socket-activate binds the socket and execs tridentd with it
    // on fd 3 once the first client connects; --socket is then ignored.
    let mut daemon = Daemon::builder()
        .socket(&socket)
        .wrapper([
            "systemd-socket-activate".as_ref(),
            "-l".as_ref(),
            socket.as_os_str(),
        ])
        .spawn()
        .await?;
    let version = trident_e2e::version(&socket).await?;
    assert_eq!(version.version, env!("CARGO_PKG_VERSION"));
    daemon
        .wait_for_stderr("fd 3, socket activation", Duration::from_secs(30))
        .await?;

    // systemd owns the socket file: a clean exit must leave it in place.
    daemon.signal(Signal::SIGTERM)?;
    let status = daemon
        .wait_exit(Duration::from_secs(15))
        .await?
        .expect("exit");
    assert_eq!(status.code(), Some(0), "{}", daemon.stderr());
    assert!(socket.exists());
    Ok(())
}

#[tokio::test]
async fn under_socket_activation_the_socket_files_group_may_call() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir()?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    let socket = dir.path().join("activated.sock");
    let daemon = Daemon::builder()
        .socket(&socket)
        .wrapper([
            "systemd-socket-activate".as_ref(),
            "-l".as_ref(),
            socket.as_os_str(),
        ])
        .no_wait()
        .spawn()
        .await?;
    // What SocketGroup=nogroup + SocketMode=0660 would have set up.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !socket.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let nogroup = nix::unistd::Group::from_name("nogroup")?.expect("group nogroup");
    std::os::unix::fs::chown(&socket, Some(0), Some(nogroup.gid.as_raw()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o660))?;

    // The first connection comes from a member of that group and starts the daemon.
    let output = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(bin_path("trident-e2e-probe"))
        .arg(&socket)
        .output()?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.starts_with("ok "),
        "{stdout}\n{}",
        daemon.stderr()
    );
    // The ready line names the group (read from the pipe, which may lag).
    daemon
        .wait_for_stderr("group nogroup", Duration::from_secs(30))
        .await?;
    Ok(())
}

/// Starts tridentd with LISTEN_* naming fd 3 = `fd3` (a shell redirection).
fn start_with_fd3(fd3: &str) -> anyhow::Result<std::process::Output> {
    let script = format!(
        "exec 3{fd3}; export LISTEN_PID=$$ LISTEN_FDS=1; exec \"$0\" --socket /nonexistent/never-bound.sock --state-dir \"$1\""
    );
    let state = tempfile::tempdir()?;
    Ok(Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(bin_path("tridentd"))
        .arg(state.path())
        .output()?)
}

#[test]
fn a_passed_fd_that_is_not_a_socket_is_refused_naming_the_fd() -> anyhow::Result<()> {
    let output = start_with_fd3("</dev/null")?;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("socket activation: fd 3 passed by systemd is not a socket (/dev/null)"),
        "{stderr}"
    );
    Ok(())
}

/// Starts tridentd with fd 3 = a socket made by Python (`family`, `kind`, bound, optionally listening).
fn start_with_socket_fd3(
    family: &str,
    kind: &str,
    address: &str,
    listen: bool,
) -> anyhow::Result<std::process::Output> {
    let script = format!(
        "import os, socket, sys\n\
         s = socket.socket(socket.{family}, socket.{kind})\n\
         s.bind({address})\n\
         {listen}\n\
         os.dup2(s.fileno(), 3)\n\
         os.set_inheritable(3, True)\n\
         os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS='1')\n\
         os.execv(sys.argv[1], [sys.argv[1], '--socket', '/nonexistent/never-bound.sock', '--state-dir', sys.argv[2]])\n",
        listen = if listen { "s.listen()" } else { "pass" },
    );
    let state = tempfile::tempdir()?;
    Ok(Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(bin_path("tridentd"))
        .arg(state.path())
        .output()?)
}

#[test]
fn passed_sockets_other_than_listening_unix_stream_are_refused_saying_what_they_are()
-> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = |name: &str| format!("{:?}", dir.path().join(name).display().to_string());
    let cases = [
        (
            start_with_socket_fd3("AF_UNIX", "SOCK_DGRAM", &path("dgram.sock"), false)?,
            "is a Unix datagram (SOCK_DGRAM) socket",
        ),
        (
            start_with_socket_fd3("AF_INET", "SOCK_STREAM", "('127.0.0.1', 0)", true)?,
            "is an IPv4 (AF_INET) socket",
        ),
        (
            start_with_socket_fd3("AF_UNIX", "SOCK_STREAM", &path("idle.sock"), false)?,
            "is a Unix stream socket that is not listening",
        ),
    ];
    for (output, expected) in cases {
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("socket activation: fd 3 passed by systemd is"),
            "{stderr}"
        );
        assert!(
            stderr.contains(expected),
            "expected {expected:?} in {stderr}"
        );
    }
    Ok(())
}

#[test]
fn listen_fds_for_another_pid_are_ignored() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let socket = dir.path().join("manual.sock");
    // LISTEN_PID=1 is not us: manual mode binds --socket; the daemon exits
    // right away because the socket group does not exist (no need to stop it).
    let output = Command::new(bin_path("tridentd"))
        .args(["--socket-group", "no-such-group-e2e", "--socket"])
        .arg(&socket)
        .arg("--state-dir")
        .arg(dir.path())
        .env("LISTEN_PID", "1")
        .env("LISTEN_FDS", "1")
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown group"), "{stderr}");
    Ok(())
}

#[tokio::test]
async fn sd_notify_ready_after_bind_and_stopping_on_shutdown() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let notify_path = dir.path().join("notify.sock");
    let notify = tokio::net::UnixDatagram::bind(&notify_path)?;
    let mut daemon = Daemon::builder()
        .env("NOTIFY_SOCKET", &notify_path)
        .spawn()
        .await?;
    let mut buf = vec![0u8; 4096];
    let len = tokio::time::timeout(Duration::from_secs(10), notify.recv(&mut buf)).await??;
    let message = String::from_utf8_lossy(&buf[..len]).into_owned();
    assert!(message.lines().any(|line| line == "READY=1"), "{message:?}");
    // READY is sent only after the socket exists.
    assert!(daemon.socket_path().exists());

    daemon.signal(Signal::SIGTERM)?;
    let len = tokio::time::timeout(Duration::from_secs(10), notify.recv(&mut buf)).await??;
    let message = String::from_utf8_lossy(&buf[..len]).into_owned();
    assert!(
        message.lines().any(|line| line == "STOPPING=1"),
        "{message:?}"
    );
    daemon.wait_exit(Duration::from_secs(15)).await?;
    Ok(())
}

#[test]
fn systemd_units_pass_systemd_analyze_verify() -> anyhow::Result<()> {
    let units = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/systemd");
    let dir = tempfile::tempdir()?;
    let all = [
        "tridentd.socket",
        "tridentd.service",
        "trident.service",
        "trident-install.service",
    ];
    for unit in all {
        let text = std::fs::read_to_string(units.join(unit))?;
        // verify checks that ExecStart= exists; point it at the built binaries.
        let text = text
            .replace(
                "ExecStart=/usr/bin/tridentd",
                &format!("ExecStart={}", bin_path("tridentd").display()),
            )
            .replace(
                "ExecStart=/usr/bin/trident ",
                &format!("ExecStart={} ", bin_path("trident").display()),
            );
        std::fs::write(dir.path().join(unit), text)?;
    }
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .args(all.iter().map(|unit| dir.path().join(unit)))
        .env("SYSTEMD_LOG_LEVEL", "notice")
        .output()?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Only complaints about our own units count (the host's other units
    // may produce noise in a container).
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            line.contains("tridentd.")
                || line.contains("trident.service")
                || line.contains("trident-install.")
        })
        .collect();
    assert!(
        output.status.success() && ours.is_empty(),
        "systemd-analyze verify:\n{stderr}"
    );
    Ok(())
}
