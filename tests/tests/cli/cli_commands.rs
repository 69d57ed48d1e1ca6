//! End-to-end tests of the `trident` CLI against a real `tridentd` on a temp
//! socket: commands that need no servicing engine, and every error path that
//! does not need one (daemon not running, permission denied, invalid config).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use trident_e2e::{Daemon, bin_path, trident_cli, trident_command, trident_command_via};

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn write_config(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).expect("write config");
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn version_prints_client_and_daemon_versions() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let out = trident_cli(daemon.socket_path(), &["version"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains(&format!("trident {}", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("tridentd {}", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );

    let out = trident_cli(daemon.socket_path(), &["--output", "json", "version"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    assert_eq!(v["daemon"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["client"], env!("CARGO_PKG_VERSION"));
    Ok(())
}

#[test]
fn daemon_not_running_gives_one_clear_line_and_exit_2_for_every_daemon_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("absent.sock");
    let config = write_config(dir.path(), "c.yaml", "storage: {}\n");
    let config = config.to_str().expect("utf8");
    let commands: Vec<Vec<&str>> = vec![
        vec!["version"],
        vec!["get", "status"],
        vec!["get", "last-error"],
        vec!["install", config],
        vec!["update", config],
        vec!["commit"],
        vec!["validate", config],
        vec!["logs"],
        vec!["traces"],
        vec!["watch"],
        vec!["rebuild-raid"],
    ];
    for args in commands {
        let out = trident_cli(&socket, &args);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
        assert!(lines[0].contains("absent.sock"), "{stderr}");
        assert!(lines[0].contains("no socket"), "{stderr}");
        assert!(lines[0].contains("is tridentd running"), "{stderr}");
    }
}

/// Runs the CLI as user "nobody".
const NOBODY: [&str; 4] = [
    "setpriv",
    "--reuid=nobody",
    "--regid=nogroup",
    "--clear-groups",
];

#[tokio::test(flavor = "multi_thread")]
async fn socket_permission_denied_is_one_clear_line_and_exit_2() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    // Let "nobody" reach the directory but not the socket file.
    std::fs::set_permissions(daemon.temp_dir(), std::fs::Permissions::from_mode(0o755))?;
    std::fs::set_permissions(daemon.socket_path(), std::fs::Permissions::from_mode(0o600))?;
    let out = trident_command_via(&NOBODY, daemon.socket_path())
        .arg("version")
        .output()?;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("permission denied"), "{stderr}");
    assert!(stderr.contains("--socket-group"), "{stderr}");

    // The socket mode lets them in; the daemon's peer check says no.
    std::fs::set_permissions(daemon.socket_path(), std::fs::Permissions::from_mode(0o666))?;
    let out = trident_command_via(&NOBODY, daemon.socket_path())
        .arg("version")
        .output()?;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("permission denied"), "{stderr}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_config_file_exits_2_and_writes_the_error_file() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let dir = tempfile::tempdir()?;
    let broken = write_config(dir.path(), "broken.yaml", "storage: [unclosed\n  - : :\n");
    let missing = dir.path().join("missing.yaml");
    let error_file = dir.path().join("error.yaml");
    for config in [&broken, &missing] {
        for command in ["install", "update", "validate"] {
            let mut args = vec![command, config.to_str().unwrap_or_default()];
            if command != "validate" {
                args.extend(["-e", error_file.to_str().unwrap_or_default()]);
            }
            let out = trident_cli(daemon.socket_path(), &args);
            let (_, stderr) = text(&out);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command} {}: {stderr}",
                config.display()
            );
            assert!(
                stderr.contains("failed to load the Host Configuration"),
                "{stderr}"
            );
            if command != "validate" {
                let written = std::fs::read_to_string(&error_file)?;
                assert!(written.contains("category: invalid-input"), "{written}");
                std::fs::remove_file(&error_file)?;
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn get_last_error_prints_null_when_there_is_none() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let out = trident_cli(daemon.socket_path(), &["get", "last-error"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stdout.trim(), "null");
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("err.json");
    let out = trident_cli(
        daemon.socket_path(),
        &[
            "--output",
            "json",
            "get",
            "last-error",
            "-o",
            file.to_str().unwrap_or_default(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert_eq!(std::fs::read_to_string(&file)?.trim(), "null");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_print_daemon_records_and_a_cursor_file_resumes_without_repeats() -> anyhow::Result<()>
{
    let daemon = Daemon::start().await?;
    let dir = tempfile::tempdir()?;
    let cursor_file = dir.path().join("cursor");
    let cursor_arg = cursor_file.to_str().unwrap_or_default();
    let first = trident_cli(
        daemon.socket_path(),
        &["logs", "-o", "json", "--cursor-file", cursor_arg],
    );
    let (stdout, stderr) = text(&first);
    assert_eq!(first.status.code(), Some(0), "{stderr}");
    let records: Vec<serde_json::Value> = stdout
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    assert!(
        !records.is_empty(),
        "the daemon logged nothing at start-up? {stderr}"
    );
    let last = records
        .last()
        .and_then(|r| r["cursor"].as_str())
        .unwrap_or_default()
        .to_string();
    assert_eq!(std::fs::read_to_string(&cursor_file)?.trim(), last);

    // Generate at least one new record, then resume: only records after the cursor.
    let _ = trident_cli(daemon.socket_path(), &["version"]);
    let second = trident_cli(
        daemon.socket_path(),
        &["logs", "-o", "json", "--cursor-file", cursor_arg],
    );
    let (stdout2, stderr2) = text(&second);
    assert_eq!(second.status.code(), Some(0), "{stderr2}");
    for line in stdout2.lines() {
        let r: serde_json::Value = serde_json::from_str(line)?;
        let c = r["cursor"].as_str().unwrap_or_default();
        assert!(
            !stdout.contains(c) || c.is_empty(),
            "record {c} shown twice"
        );
    }

    // --after-cursor with a malformed cursor is a usage error.
    let bad = trident_cli(
        daemon.socket_path(),
        &["logs", "--after-cursor", "nonsense"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad).1.contains("invalid cursor"));

    // Human lines and -n.
    let human = trident_cli(daemon.socket_path(), &["logs", "-n", "1"]);
    assert_eq!(human.status.code(), Some(0));
    assert_eq!(text(&human).0.lines().count(), 1, "{}", text(&human).0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_without_a_running_operation_says_so_and_exits_2() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let out = trident_cli(daemon.socket_path(), &["watch"]);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no servicing operation is running"),
        "{stderr}"
    );
    assert!(stderr.contains("--wait"), "{stderr}");
    Ok(())
}

#[test]
fn completions_print_a_script_for_each_shell() {
    let dir = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish"] {
        let out = trident_cli(&dir.path().join("unused.sock"), &["completions", shell]);
        assert_eq!(out.status.code(), Some(0));
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("trident") && script.contains("watch"),
            "{shell}"
        );
    }
}

#[test]
fn stream_disk_rejects_a_malformed_hash_before_calling_the_daemon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = trident_cli(
        &dir.path().join("unused.sock"),
        &["stream-disk", "file:///x.cosi", "--hash", "abc"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("--hash must be a SHA-384"));
}

/// Reads a child's stdout lines into a shared buffer.
fn collect_stdout(child: &mut std::process::Child) -> std::sync::Arc<std::sync::Mutex<String>> {
    use std::io::BufRead;
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = text.clone();
    let pipe = child.stdout.take().expect("stdout piped");
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            if let Ok(mut t) = sink.lock() {
                t.push_str(&line);
                t.push('\n');
            }
        }
    });
    text
}

fn wait_until(what: &str, text: &std::sync::Mutex<String>, pred: impl Fn(&str) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let now = text.lock().map(|t| t.clone()).unwrap_or_default();
        if pred(&now) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}:\n{now}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_follow_prints_new_records_and_continues_across_a_daemon_restart() -> anyhow::Result<()>
{
    let state = tempfile::tempdir()?;
    let socket = state.path().join("logs.sock");
    let mut first = Daemon::builder()
        .socket(&socket)
        .state_dir(state.path().join("state"))
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await?;
    let mut follow = trident_command(&socket)
        .args([
            "logs",
            "-f",
            "-n",
            "0",
            "-o",
            "json",
            "--target",
            "tridentd::server",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let out = collect_stdout(&mut follow);
    std::thread::sleep(std::time::Duration::from_millis(500));
    let _ = trident_cli(&socket, &["version"]);
    wait_until("a new record", &out, |t| t.contains("\"cursor\""));
    first.signal(nix::sys::signal::Signal::SIGKILL)?;
    first.wait_exit(std::time::Duration::from_secs(10)).await?;
    let _second = Daemon::builder()
        .socket(&socket)
        .state_dir(state.path().join("state"))
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await?;
    let _ = trident_cli(&socket, &["version"]);
    wait_until("records of the new run", &out, |t| {
        t.contains("\"run_change\"")
    });
    let _ = follow.kill();
    let _ = follow.wait();
    let text = out.lock().map(|t| t.clone()).unwrap_or_default();
    let cursors: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["cursor"].as_str().map(str::to_string))
        .collect();
    let unique: std::collections::HashSet<&String> = cursors.iter().collect();
    assert_eq!(unique.len(), cursors.len(), "a record shown twice:\n{text}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_configuration_the_daemon_rejects_exits_2_with_its_structured_error()
-> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let dir = tempfile::tempdir()?;
    let unknown_key = write_config(dir.path(), "unknown.yaml", "storage:\n  bogus: 1\n");
    let unknown_key = unknown_key.to_str().unwrap_or_default();
    for args in [
        vec!["validate", unknown_key],
        vec!["install", unknown_key, "--progress", "plain"],
        vec!["update", unknown_key, "--progress", "plain"],
    ] {
        let out = trident_cli(daemon.socket_path(), &args);
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("bogus") && stderr.contains("invalid-input/"),
            "{stderr}"
        );
    }
    Ok(())
}

#[test]
fn bad_usage_exits_2_as_upstream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = trident_cli(
        &dir.path().join("s.sock"),
        &["validate", "x", "--no-such-flag"],
    );
    assert_eq!(out.status.code(), Some(2));
    let out = trident_cli(&dir.path().join("s.sock"), &["--help"]);
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn output_into_a_closed_pipe_ends_quietly_with_exit_0() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    // More than a pipe buffer (64 KiB) of JSON lines, so writing goes on
    // after `head` has exited and hits the closed pipe.
    for _ in 0..300 {
        let _ = trident_cli(daemon.socket_path(), &["version"]);
    }
    let script = format!(
        "set -o pipefail; {} --socket {} logs -o json | head -n 1 >/dev/null",
        bin_path("trident").display(),
        daemon.socket_path().display()
    );
    let out = Command::new("bash").arg("-c").arg(&script).output()?;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert!(!text(&out).1.contains("panicked"), "{}", text(&out).1);
    Ok(())
}

/// `trident validate` of configurations whose image is in an OCI registry
/// (by tag, by digest): valid without contacting the registry, as upstream;
/// a scheme the daemon cannot fetch is refused naming `image.url`.
#[tokio::test(flavor = "multi_thread")]
async fn validate_accepts_oci_image_urls_by_tag_and_digest() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let dir = tempfile::tempdir()?;
    let digest = format!("sha256:{}", "ab".repeat(32));
    for (url, valid) in [
        ("oci://registry.example:5000/os/azl:3.0".to_owned(), true),
        (format!("oci://registry.example/os/azl@{digest}"), true),
        ("ftp://registry.example/os.cosi".to_owned(), false),
    ] {
        let body = format!(
            "image: {{ url: '{url}', sha384: ignored }}\nstorage:\n  disks:\n  - {{ id: os, device: /dev/null, partitions: [{{ id: root, type: root, size: 1G }}] }}\n  filesystems:\n  - {{ deviceId: root, mountPoint: / }}\n"
        );
        let config = write_config(dir.path(), "oci.yaml", &body);
        let out = trident_cli(
            daemon.socket_path(),
            &["validate", config.to_str().unwrap_or_default()],
        );
        let (_, stderr) = text(&out);
        if valid {
            assert_eq!(out.status.code(), Some(0), "{url}: {stderr}");
        } else {
            assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
            assert!(stderr.contains("image.url"), "{url}: {stderr}");
        }
    }
    Ok(())
}
