//! The `trident` CLI driving real servicing operations on a real daemon:
//! install on a disk-image file from a COSI fixture (the harness's),
//! live progress in plain and JSON modes, failure rendering and exit codes,
//! a busy daemon, `watch` attach/--wait, and a daemon killed and restarted
//! during `trident watch`.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use trident_e2e::fixture::{CosiImage, InstallFixture, ScriptHook};
use trident_e2e::{Daemon, daemon, stderr, trident_command};

const WAIT: Duration = Duration::from_secs(60);

/// A config `name` installing the fixture image onto a fresh `name`.img,
/// with a preServicing script.
fn config_with_script(fx: &InstallFixture, name: &str, script: &str) -> PathBuf {
    let config = fx
        .config(name)
        .script(ScriptHook::PreServicing, "prep", script);
    fx.write(name, &config)
}

fn run(socket: &Path, args: &[&str]) -> Output {
    trident_command(socket)
        .args(args)
        .output()
        .expect("run trident")
}

/// A trident process in the background with its output collected.
struct Running {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

fn collect(pipe: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if let Ok(mut t) = sink.lock() {
                t.push_str(&line);
                t.push('\n');
            }
        }
    });
    text
}

impl Running {
    fn start(socket: &Path, args: &[&str]) -> Self {
        let mut child = trident_command(socket)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn trident");
        let stdout = collect(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        Running {
            child,
            stdout,
            stderr,
        }
    }

    fn stdout(&self) -> String {
        self.stdout.lock().map(|t| t.clone()).unwrap_or_default()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Waits until stdout+stderr satisfy `pred`.
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + WAIT;
        loop {
            let text = format!("{}{}", self.stdout(), self.stderr());
            if pred(&text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for exit; returns the exit code.
    fn wait(&mut self) -> Option<i32> {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Let the reader threads drain.
                std::thread::sleep(Duration::from_millis(100));
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("trident did not exit:\n{}{}", self.stdout(), self.stderr());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn install_with_plain_progress_succeeds_and_writes_the_status_file() -> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let config = config_with_script(&fx, "ok", "echo preparing");
    let status = fx.path("status.yaml");
    let out = run(
        daemon.socket_path(),
        &[
            "install",
            config.to_str().unwrap_or_default(),
            "--progress",
            "plain",
            "-s",
            status.to_str().unwrap_or_default(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("Install started: operation "), "{err}");
    assert!(
        err.contains("phase Run preServicing scripts: started"),
        "{err}"
    );
    assert!(err.contains("info script::prep: preparing"), "{err}");
    assert!(err.contains("operation succeeded"), "{err}");
    // Phase changes appear once each.
    let starts = err
        .lines()
        .filter(|l| l.contains("phase Create partition tables: started"))
        .count();
    assert_eq!(starts, 1, "{err}");
    let written = std::fs::read_to_string(&status)?;
    assert!(
        written.contains("servicingState: clean-install-finalized"),
        "{written}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn install_json_progress_is_one_object_per_record_and_joins_the_callers_trace()
-> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let config = config_with_script(&fx, "json", "echo one; echo two");
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let out = trident_command(daemon.socket_path())
        .args([
            "install",
            config.to_str().unwrap_or_default(),
            "--progress",
            "json",
        ])
        .env("TRACEPARENT", format!("00-{trace_id}-00f067aa0ba902b7-01"))
        .output()?;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let records = json_lines(&stdout);
    assert_eq!(
        records.len(),
        stdout.lines().count(),
        "every line is JSON:\n{stdout}"
    );
    assert_eq!(
        records.first().map(|r| r["type"].clone()),
        Some("started".into())
    );
    assert_eq!(
        records.last().map(|r| r["type"].clone()),
        Some("completed".into())
    );
    assert_eq!(
        records[0]["trace_id"], trace_id,
        "the operation joins the CLI's trace"
    );
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "progress" && r["unit"] == "bytes")
    );
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "log" && r["message"] == "two")
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn failed_servicing_prints_the_structured_error_and_exits_2() -> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let config = config_with_script(
        &fx,
        "fail",
        "echo about to fail; echo bad thing >&2; exit 3",
    );
    let error_file = fx.path("error.yaml");
    let out = run(
        daemon.socket_path(),
        &[
            "install",
            config.to_str().unwrap_or_default(),
            "--progress",
            "plain",
            "-e",
            error_file.to_str().unwrap_or_default(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("operation failed"), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("error: ") && l.contains("servicing/")),
        "{err}"
    );
    assert!(err.contains("last log lines of phase"), "{err}");
    assert!(err.contains("about to fail"), "{err}");
    let written = std::fs::read_to_string(&error_file)?;
    for key in ["message:", "error:", "category:", "location:", "cause:"] {
        assert!(written.contains(key), "{key} missing in {written}");
    }
    // get last-error has the same error, upstream keys plus ours.
    let last = run(daemon.socket_path(), &["get", "last-error"]);
    let text = String::from_utf8_lossy(&last.stdout);
    assert_eq!(last.status.code(), Some(0), "{}", stderr(&last));
    for key in [
        "message:",
        "error:",
        "category:",
        "location:",
        "cause:",
        "context:",
        "operation_id:",
        "trace_id:",
        "recent_logs:",
    ] {
        assert!(text.contains(key), "{key} missing in {text}");
    }
    Ok(())
}

/// `--wait 0`: upstream's behaviour, a busy daemon's refusal at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_servicing_on_a_busy_daemon_with_wait_0_is_refused_with_exit_2()
-> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let slow = config_with_script(&fx, "slow", "echo started-slow; sleep 4");
    let mut first = install_running(daemon.socket_path(), &slow, "started-slow");
    let other = config_with_script(&fx, "other", "true");
    let out = run(
        daemon.socket_path(),
        &["install", other.to_str().unwrap_or_default(), "--wait", "0"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("busy"), "{err}");
    assert_eq!(first.wait(), Some(0), "{}", first.stderr());
    Ok(())
}

/// `trident install CONFIG --progress plain` in the background, once its
/// preServicing script printed `marker` (the operation runs).
fn install_running(socket: &Path, config: &Path, marker: &str) -> Running {
    let running = Running::start(
        socket,
        &[
            "install",
            config.to_str().unwrap_or_default(),
            "--progress",
            "plain",
        ],
    );
    running.wait_for("the operation to run", |t| t.contains(marker));
    running
}

/// The operation id in "<Rpc> started: operation <id>".
fn started_id(text: &str) -> String {
    text.lines()
        .find_map(|l| l.split("started: operation ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default()
        .trim_end_matches(['.', ',', ';'])
        .to_owned()
}

/// A servicing command that meets a running operation waits for it, shows
/// which one it is and its progress, then runs (the daemon still refuses a
/// second request while one runs: the waiting is the CLI's).
#[tokio::test(flavor = "multi_thread")]
async fn a_servicing_command_waits_for_the_running_operation_then_runs() -> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let slow = config_with_script(&fx, "slow", "echo started-slow; sleep 3; echo slow-ending");
    let mut first = install_running(daemon.socket_path(), &slow, "started-slow");
    let id = started_id(&first.stderr());
    assert!(!id.is_empty(), "{}", first.stderr());
    let other = config_with_script(&fx, "other", "echo second-runs");
    let out = run(
        daemon.socket_path(),
        &[
            "install",
            other.to_str().unwrap_or_default(),
            "--progress",
            "plain",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("the daemon is running operation {id} (Install)")),
        "names what it waits for: {err}"
    );
    // The running operation's progress, then its end, then our own run.
    let waited = err
        .find("slow-ending")
        .expect("the first operation's progress");
    let ended = err.find("ended; starting").expect("the end of the wait");
    let ours = err.find("info script::prep: second-runs").expect("our run");
    assert!(waited < ended && ended < ours, "{err}");
    assert_eq!(first.wait(), Some(0), "{}", first.stderr());
    Ok(())
}

/// `--wait` running out: exit 2, naming the operation still running.
#[tokio::test(flavor = "multi_thread")]
async fn a_wait_that_runs_out_exits_2_naming_the_running_operation() -> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let slow = config_with_script(&fx, "slow", "echo started-slow; sleep 8");
    let mut first = install_running(daemon.socket_path(), &slow, "started-slow");
    let id = started_id(&first.stderr());
    let other = config_with_script(&fx, "other", "true");
    let errors = fx.path("error.yaml");
    let begun = Instant::now();
    let out = run(
        daemon.socket_path(),
        &[
            "install",
            other.to_str().unwrap_or_default(),
            "--wait",
            "1500ms",
            "--progress",
            "plain",
            "-e",
            errors.to_str().unwrap_or_default(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(begun.elapsed() < Duration::from_secs(6), "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!(
            "still running operation {id} (Install) after waiting 1s 500ms"
        )),
        "{err}"
    );
    let written = std::fs::read_to_string(&errors)?;
    assert!(written.contains("daemon-busy"), "{written}");
    assert_eq!(first.wait(), Some(0), "{}", first.stderr());
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_attaches_to_the_running_operation_replays_it_and_exits_with_its_code()
-> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    // --wait: started before any operation exists.
    let mut waiting = Running::start(
        daemon.socket_path(),
        &["watch", "--wait", "--progress", "json"],
    );
    waiting.wait_for("watch --wait to wait", |t| {
        t.contains("waiting for the next servicing operation")
    });
    let config = config_with_script(&fx, "watched", "echo first-line; sleep 2; echo later-line");
    let mut install = install_running(daemon.socket_path(), &config, "first-line");
    // Attach mid-way: the replay starts at the operation's first record.
    let mut attached = Running::start(daemon.socket_path(), &["watch", "--progress", "json"]);
    assert_eq!(install.wait(), Some(0), "{}", install.stderr());
    assert_eq!(attached.wait(), Some(0), "{}", attached.stderr());
    assert_eq!(waiting.wait(), Some(0), "{}", waiting.stderr());
    for watcher in [&attached, &waiting] {
        let records = json_lines(&watcher.stdout());
        assert_eq!(
            records.first().map(|r| r["type"].clone()),
            Some("started".into()),
            "{}",
            watcher.stdout()
        );
        assert_eq!(
            records.last().map(|r| r["type"].clone()),
            Some("completed".into())
        );
        assert!(records.iter().any(|r| r["message"] == "first-line"));
        assert!(records.iter().any(|r| r["message"] == "later-line"));
        let cursors: Vec<&str> = records
            .iter()
            .filter_map(|r| r["cursor"].as_str())
            .collect();
        let unique: HashSet<&&str> = cursors.iter().collect();
        assert_eq!(unique.len(), cursors.len(), "a record was shown twice");
    }
    // A failed operation's exit code is watch's exit code.
    let failing = config_with_script(&fx, "failing", "echo failing-soon; sleep 1; exit 1");
    let mut install = Running::start(
        daemon.socket_path(),
        &[
            "install",
            failing.to_str().unwrap_or_default(),
            "--progress",
            "plain",
        ],
    );
    install.wait_for("the failing operation to run", |t| {
        t.contains("failing-soon")
    });
    let watched = run(daemon.socket_path(), &["watch", "--progress", "plain"]);
    assert_eq!(install.wait(), Some(2));
    assert_eq!(watched.status.code(), Some(2), "{}", stderr(&watched));
    Ok(())
}

/// Sequence numbers inside "<run>:<seq>".
fn split_cursor(c: &str) -> Option<(String, u64)> {
    let (run, seq) = c.rsplit_once(':')?;
    Some((run.to_string(), seq.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_survives_a_daemon_kill_and_restart_without_duplicates_or_silent_skips()
-> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let state = fx.path("state");
    std::fs::create_dir_all(&state)?;
    let socket = fx.path("restart.sock");
    let mut first = Daemon::builder()
        .socket(&socket)
        .state_dir(&state)
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await?;
    let config = config_with_script(
        &fx,
        "long",
        "i=0; while [ $i -lt 200 ]; do echo tick-$i; i=$((i+1)); sleep 0.05; done",
    );
    let install = Running::start(
        &socket,
        &[
            "install",
            config.to_str().unwrap_or_default(),
            "--progress",
            "plain",
        ],
    );
    install.wait_for("the operation to run", |t| t.contains("tick-2"));
    let mut watch = Running::start(&socket, &["watch", "--progress", "json"]);
    watch.wait_for("some ticks", |t| t.contains("tick-20"));
    first.signal(Signal::SIGKILL)?;
    first.wait_exit(Duration::from_secs(10)).await?;
    watch.wait_for("the lost connection", |t| t.contains("\"reconnecting\""));
    let second = Daemon::builder()
        .socket(&socket)
        .state_dir(&state)
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await?;
    let code = watch.wait();
    let stdout = watch.stdout();
    let records = json_lines(&stdout);
    // The operation died with the daemon: watch says so and fails.
    assert_eq!(code, Some(2), "{stdout}\n{}", watch.stderr());
    // Said on stderr, or (since the restarted daemon publishes the
    // operation's failed completion) in the completed record on stdout.
    assert!(
        watch.stderr().contains("interrupted") || stdout.contains("interrupted"),
        "{stdout}\n{}",
        watch.stderr()
    );
    assert!(records.iter().any(|r| r["type"] == "resumed"), "{stdout}");

    // No record shown twice.
    let cursors: Vec<String> = records
        .iter()
        .filter_map(|r| r["cursor"].as_str().map(str::to_string))
        .collect();
    let unique: HashSet<&String> = cursors.iter().collect();
    assert_eq!(unique.len(), cursors.len(), "duplicates in:\n{stdout}");

    // None skipped silently: every log record of the operation that the
    // journal holds was shown, or lies inside a gap the watch reported.
    let op = records[0]["operation_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let gaps: Vec<(String, u64, u64)> = records
        .iter()
        .filter(|r| r["type"] == "gap")
        .filter_map(|r| {
            let (run, first) = split_cursor(r["first_missing"].as_str()?)?;
            let (_, last) = split_cursor(r["last_missing"].as_str()?)?;
            Some((run, first, last))
        })
        .collect();
    let journal = run(
        second.socket_path(),
        &["logs", "--operation", &op, "-o", "json"],
    );
    assert_eq!(journal.status.code(), Some(0), "{}", stderr(&journal));
    let journal_records = json_lines(&String::from_utf8_lossy(&journal.stdout));
    assert!(
        !journal_records.is_empty(),
        "the journal kept none of the operation's logs"
    );
    let shown: HashSet<&str> = cursors.iter().map(String::as_str).collect();
    for record in &journal_records {
        let Some(c) = record["cursor"].as_str() else {
            continue;
        };
        let Some((run_id, seq)) = split_cursor(c) else {
            continue;
        };
        let in_gap = gaps
            .iter()
            .any(|(r, a, b)| *r == run_id && (*a..=*b).contains(&seq));
        assert!(
            shown.contains(c) || in_gap,
            "record {c} skipped without a gap notice"
        );
    }
    Ok(())
}

/// `validate` accepts what upstream refuses (a disk without
/// `partitionTableType`; the datastore inside an A/B volume) and warns once
/// per upstream rule, naming it.
#[tokio::test(flavor = "multi_thread")]
async fn validate_warns_about_each_rule_upstream_would_refuse() -> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let s = daemon.socket_path();
    // The fixture's datastore is the default one, on `/`: the A/B volume.
    let both_ok = config_with_script(&fx, "datastore-in-ab", "true");
    let out = run(s, &["validate", both_ok.to_str().unwrap_or_default()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("valid Host Configuration"));
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("A/B update volume 'root'")
            && warnings[0].contains("upstream Trident refuses"),
        "{err}"
    );

    let text = std::fs::read_to_string(&both_ok)?.replace("    partitionTableType: gpt\n", "");
    let no_table = fx.path("no-table.yaml");
    std::fs::write(&no_table, text)?;
    let out = run(s, &["validate", no_table.to_str().unwrap_or_default()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].contains("storage.disks[0] (id 'os'): no partitionTableType"),
        "{err}"
    );
    let json: serde_json::Value = serde_json::from_str(&ok(
        s,
        &[
            "--output",
            "json",
            "validate",
            no_table.to_str().unwrap_or_default(),
        ],
        0,
    ))?;
    assert_eq!(json["ok"], true, "{json}");
    assert_eq!(
        json["upstream_warnings"].as_array().map(Vec::len),
        Some(2),
        "{json}"
    );
    Ok(())
}

/// Runs `args` and asserts the exit code; returns stdout.
fn ok(socket: &Path, args: &[&str], code: i32) -> String {
    let out = run(socket, args);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_command_runs_end_to_end_through_install_update_commit_rollback() -> anyhow::Result<()>
{
    let fx = InstallFixture::small();
    let cosi2 = CosiImage::small(2).write(&fx.path("img2.cosi")).path;
    let disk = fx.path("cycle.img");
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0", "--disk"])
        .arg(fx.path("stream.img"))
        .spawn()
        .await?;
    let s = daemon.socket_path();
    let v1 = config_with_script(&fx, "cycle", "true");
    let v1_text = std::fs::read_to_string(&v1)?;
    let v2 = fx.path("cycle-v2.yaml");
    std::fs::write(
        &v2,
        v1_text.replace(
            &fx.cosi.path.display().to_string(),
            &cosi2.display().to_string(),
        ),
    )?;
    assert!(disk.exists());
    let (v1, v2) = (
        v1.to_str().unwrap_or_default(),
        v2.to_str().unwrap_or_default(),
    );
    let p = ["--progress", "plain"];

    assert!(ok(s, &["validate", v1], 0).contains("valid Host Configuration"));
    ok(s, &[&["install", v1][..], &p].concat(), 0);
    assert!(ok(s, &["get", "status"], 0).contains("servicingState: clean-install-finalized"));
    ok(s, &[&["commit"][..], &p].concat(), 0);
    assert!(ok(s, &["get", "configuration"], 0).contains("img.cosi"));
    assert!(ok(s, &["get"], 0).contains("servicingState: provisioned"));
    // Nothing to roll back to yet: success, said in words, nothing changed
    // (upstream's no-op rollback, SERVICING_KIND_NONE_REQUIRED).
    assert_eq!(ok(s, &["rollback", "--check"], 0).trim(), "none");
    let out = run(s, &[&["rollback"][..], &p].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("rollback: nothing to roll back to"),
        "{}",
        stderr(&out)
    );
    assert!(ok(s, &["get"], 0).contains("servicingState: provisioned"));
    let json: serde_json::Value =
        serde_json::from_str(&ok(s, &["--output", "json", "get", "status"], 0))?;
    assert_eq!(json["abActiveVolume"], "volume-a");
    // The full Host Status: the installed disk's GPT GUID under diskUuids.
    let disk_uuids = json["diskUuids"].as_object().cloned().unwrap_or_default();
    assert!(
        disk_uuids
            .values()
            .any(|v| v.as_str().is_some_and(|g| g.len() == 36)),
        "{json:#}"
    );
    assert!(
        json["partitionPaths"]
            .as_object()
            .is_some_and(|p| !p.is_empty()),
        "{json:#}"
    );

    // Update in two steps, like upstream's --allowed-operations.
    ok(
        s,
        &[&["update", v2, "--allowed-operations", "stage"][..], &p].concat(),
        0,
    );
    assert!(ok(s, &["get", "status"], 0).contains("ab-update-staged"));
    ok(
        s,
        &[&["update", v2, "--allowed-operations", "finalize"][..], &p].concat(),
        0,
    );
    ok(s, &[&["commit"][..], &p].concat(), 0);
    assert!(ok(s, &["get", "configuration"], 0).contains("img2.cosi"));
    assert!(ok(s, &["get", "rollback-chain"], 0).contains("volume-a"));
    assert!(ok(s, &["get", "rollback-target"], 0).contains("volume-a"));
    assert_eq!(ok(s, &["rollback", "--check"], 0).trim(), "ab");
    ok(s, &[&["rollback", "--ab"][..], &p].concat(), 0);
    assert!(ok(s, &["get", "status"], 0).contains("servicingState: manual-rollback-ab-finalized"));

    // The operations' spans and logs.
    let traces = ok(s, &["traces"], 0);
    assert!(traces.contains("servicing_operation"), "{traces}");
    // Each phase is a span under the operation, with its duration.
    assert!(traces.contains("phase finalize"), "{traces}");
    let logs = ok(
        s,
        &["logs", "--level", "info", "--target", "trident::operation"],
        0,
    );
    assert!(
        logs.lines().count() >= 2 && logs.contains("servicing operation"),
        "{logs}"
    );
    assert!(!logs.contains("DEBUG"), "{logs}");

    // rebuild-raid on a host installed without arrays: a structured
    // refusal as a failed servicing, nothing touched.
    let out = run(s, &["rebuild-raid", "--progress", "plain"]);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(servicing/validate-rebuild-raid)")
            && stderr(&out).contains("no software RAID arrays"),
        "{}",
        stderr(&out)
    );

    // stream-disk onto the daemon's --disk candidate.
    std::fs::File::create(fx.path("stream.img"))?.set_len(64 << 20)?;
    let url = format!("file://{}", fx.cosi.path.display());
    ok(s, &["stream-disk", &url, "--progress", "plain"], 0);

    // A support bundle with the operations' records.
    let bundle = fx.path("bundle.tar");
    ok(
        s,
        &[
            "diagnose",
            "-o",
            bundle.to_str().unwrap_or_default(),
            "--state-dir",
            daemon.state_dir().to_str().unwrap_or_default(),
        ],
        0,
    );
    let list = Command::new("tar").arg("-tf").arg(&bundle).output()?;
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.lines()
            .any(|l| l.starts_with("records/") && l.ends_with(".jsonl")),
        "{list}"
    );
    assert!(list.contains("datastore.sqlite"), "{list}");
    Ok(())
}

/// A Unix-socket proxy in front of the daemon whose open connections can be
/// cut, to break a servicing stream while the daemon and operation go on.
struct CuttingProxy {
    path: PathBuf,
    connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl CuttingProxy {
    fn start(target: &Path, path: PathBuf) -> anyhow::Result<Self> {
        let listener = tokio::net::UnixListener::bind(&path)?;
        let connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let target = target.to_path_buf();
        let tracked = connections.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let target = target.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::UnixStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                if let Ok(mut list) = tracked.lock() {
                    list.push(task);
                }
            }
        });
        Ok(CuttingProxy {
            path,
            connections,
            accept,
        })
    }

    /// Drops every open connection (new ones are still accepted).
    fn cut(&self) {
        if let Ok(mut list) = self.connections.lock() {
            for task in list.drain(..) {
                task.abort();
            }
        }
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_servicing_stream_resumes_through_watch_without_repeating_or_losing_lines()
-> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let proxy = CuttingProxy::start(daemon.socket_path(), fx.path("proxy.sock"))?;
    let config = config_with_script(
        &fx,
        "cut",
        "i=0; while [ $i -lt 60 ]; do echo tick-$i; i=$((i+1)); sleep 0.05; done",
    );
    let mut install = Running::start(
        &proxy.path,
        &[
            "install",
            config.to_str().unwrap_or_default(),
            "--progress",
            "json",
        ],
    );
    install.wait_for("some ticks", |t| t.contains("\"tick-10\""));
    proxy.cut();
    assert_eq!(
        install.wait(),
        Some(0),
        "{}\n{}",
        install.stdout(),
        install.stderr()
    );
    let records = json_lines(&install.stdout());
    assert!(
        records.iter().any(|r| r["type"] == "reconnecting"),
        "{}",
        install.stdout()
    );
    assert!(
        records.iter().any(|r| r["type"] == "resumed"),
        "{}",
        install.stdout()
    );
    assert_eq!(
        records.last().map(|r| r["type"].clone()),
        Some("completed".into())
    );
    let gaps = records.iter().filter(|r| r["type"] == "gap").count();
    for i in 0..60 {
        let tick = format!("tick-{i}");
        let shown = records
            .iter()
            .filter(|r| r["message"] == tick.as_str())
            .count();
        assert!(shown <= 1, "{tick} shown {shown} times");
        assert!(shown == 1 || gaps > 0, "{tick} lost without a gap notice");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reboot_that_does_not_happen_exits_3() -> anyhow::Result<()> {
    let fx = InstallFixture::small();
    // The daemon's `--reboot systemd` runs `systemctl reboot`: a stand-in
    // that does nothing, so the host (of course) stays up.
    let bin = fx.path("fakebin");
    std::fs::create_dir_all(&bin)?;
    let systemctl = bin.join("systemctl");
    std::fs::write(
        &systemctl,
        "#!/bin/sh\necho \"fake systemctl $*\" >&2\nexit 0\n",
    )?;
    std::fs::set_permissions(
        &systemctl,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )?;
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0", "--reboot", "systemd"])
        .env("PATH", path)
        .spawn()
        .await?;
    let config = config_with_script(&fx, "reboot", "true");
    let out = trident_command(daemon.socket_path())
        .args([
            "install",
            config.to_str().unwrap_or_default(),
            "--progress",
            "plain",
        ])
        .env("TRIDENT_REBOOT_TIMEOUT", "1s")
        .output()?;
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("reboot started"), "{err}");
    assert!(err.contains("still up"), "{err}");
    Ok(())
}

/// A hand-started daemon (`--reboot record` or `none`) takes charge of the
/// reboot as upstream's server does (REBOOT_STARTED) and tells the CLI,
/// which opted in to `reboot-action`, that nothing reboots: the CLI says so
/// and exits 0 at once instead of waiting for a reboot (exit 3).
#[tokio::test(flavor = "multi_thread")]
async fn a_reboot_the_daemon_only_records_or_skips_is_said_in_words_and_not_waited_for()
-> anyhow::Result<()> {
    let fx = InstallFixture::small();
    for (mode, words, summary, action) in [
        (
            "record",
            "reboot recorded, not performed",
            "reboot recorded (not performed)",
            "recorded",
        ),
        (
            "none",
            "reboot not performed",
            "reboot not performed",
            "not-performed",
        ),
    ] {
        let daemon = Daemon::builder()
            .args(["--inactivity-timeout", "0", "--reboot", mode])
            .spawn()
            .await?;
        let config = config_with_script(&fx, &format!("reboot-{mode}"), "true");
        let begun = Instant::now();
        let out = trident_command(daemon.socket_path())
            .args([
                "install",
                config.to_str().unwrap_or_default(),
                "--progress",
                "plain",
            ])
            // Waiting for a reboot would take this long and then exit 3.
            .env("TRIDENT_REBOOT_TIMEOUT", "90s")
            .output()?;
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{mode}: {err}");
        assert!(begun.elapsed() < Duration::from_secs(60), "{mode}: waited");
        assert!(err.contains(words), "{mode}: {err}");
        assert!(err.contains(summary), "{mode}: {err}");
        assert!(!err.contains("the host is rebooting"), "{mode}: {err}");
        let records = daemon.state_dir().join("reboot-requests.log");
        assert_eq!(records.exists(), mode == "record", "{mode}");

        // The JSON view names the action beside the wire's status.
        let config = config_with_script(&fx, &format!("reboot-{mode}-json"), "true");
        let out = trident_command(daemon.socket_path())
            .args([
                "install",
                config.to_str().unwrap_or_default(),
                "--progress",
                "json",
            ])
            .env("TRIDENT_REBOOT_TIMEOUT", "90s")
            .output()?;
        assert_eq!(out.status.code(), Some(0), "{mode}: {}", stderr(&out));
        let lines = json_lines(&String::from_utf8_lossy(&out.stdout));
        let completed = lines
            .iter()
            .find(|l| l["type"] == "completed")
            .expect("a completed line");
        assert_eq!(completed["reboot_status"], "started", "{completed}");
        assert_eq!(completed["reboot_action"], action, "{completed}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_detaches_and_the_operation_goes_on_for_watch_to_reattach() -> anyhow::Result<()> {
    let fx = InstallFixture::small();
    let daemon = daemon().await;
    let config = config_with_script(&fx, "detach", "echo detach-me; sleep 2; echo still-running");
    let mut install = install_running(daemon.socket_path(), &config, "detach-me");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(install.child.id())?);
    nix::sys::signal::kill(pid, Signal::SIGINT)?;
    assert_eq!(install.wait(), Some(130), "{}", install.stderr());
    assert!(
        install.stderr().contains("reattach with `trident watch`"),
        "{}",
        install.stderr()
    );
    let watched = run(daemon.socket_path(), &["watch", "--progress", "plain"]);
    let err = stderr(&watched);
    assert_eq!(watched.status.code(), Some(0), "{err}");
    assert!(
        err.contains("still-running") && err.contains("operation succeeded"),
        "{err}"
    );
    Ok(())
}
