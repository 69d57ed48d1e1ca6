//! `trident logs` shows upstream Trident's history from its full log
//! (`/var/log/trident-full.log`, here the daemon's `--upstream-log`):
//! upstream's records first, in the file's order, each marked as
//! upstream's (`origin` in JSON, `upstream` in the human line), then the
//! daemon's own; filters apply to both, and upstream's records (no
//! operation, no boot, no cursor) are left out where those select. A
//! damaged, unreadable or missing file never fails the command.
//! The fixture is a log upstream's own binary wrote
//! (`tests/fixtures/upstream-full-log/`, see its README); the expected
//! records are read from it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use trident_e2e::{Daemon, failing_update_stage, stderr, trident_cli, trident_cli_ok};
use trident_proto::v1::servicing_response;

const STREAM_TIMEOUT: Duration = Duration::from_secs(60);

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upstream-full-log/trident-full.log")
}

/// The fixture's records as upstream wrote them, in the file's order.
fn fixture_records() -> Vec<Value> {
    std::fs::read_to_string(fixture())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The messages of the fixture's records that `keep` keeps.
fn fixture_messages(keep: impl Fn(usize, &Value) -> bool) -> Vec<String> {
    fixture_records()
        .iter()
        .enumerate()
        .filter(|(i, r)| keep(*i, r))
        .map(|(_, r)| r["message"].as_str().unwrap().to_owned())
        .collect()
}

/// Upstream's RFC 3339 time (nanoseconds) as `trident logs` shows it
/// (milliseconds).
fn shown_time(upstream: &Value) -> String {
    format!("{}Z", &upstream["timestamp"].as_str().unwrap()[..23])
}

async fn daemon_with(upstream_log: &Path) -> Daemon {
    Daemon::builder()
        .upstream_log(upstream_log)
        .spawn()
        .await
        .unwrap()
}

/// The JSON lines of `trident logs -o json ARGS`.
fn json_logs(daemon: &Daemon, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["logs", "-o", "json"];
    all.extend_from_slice(args);
    trident_cli_ok(daemon.socket_path(), &all)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn upstream_messages(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["origin"] == "upstream")
        .map(|l| l["message"].as_str().unwrap().to_owned())
        .collect()
}

/// Upstream's lines come first: no daemon record before an upstream one.
fn assert_upstream_first(lines: &[Value]) {
    let first_ours = lines.iter().position(|l| l["origin"] == "tridentd");
    let last_upstream = lines.iter().rposition(|l| l["origin"] == "upstream");
    if let (Some(ours), Some(upstream)) = (first_ours, last_upstream) {
        assert!(upstream < ours, "upstream after the daemon's: {lines:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_show_upstream_records_first_marked_as_upstream_and_filtered() {
    let upstream = fixture_records();
    assert!(upstream.len() >= 5, "{upstream:#?}");
    let daemon = daemon_with(&fixture()).await;
    let messages = failing_update_stage(daemon.channel().await.unwrap(), STREAM_TIMEOUT)
        .await
        .unwrap();
    let operation = messages
        .into_iter()
        .find_map(|m| match m {
            servicing_response::Response::Started(s) => Some(s.operation_id),
            _ => None,
        })
        .expect("Started");

    // Everything: upstream's records in the file's order, with their level,
    // target, file:line and time, no cursor; then the daemon's.
    let all = json_logs(&daemon, &[]);
    assert_eq!(upstream_messages(&all), fixture_messages(|_, _| true));
    assert_upstream_first(&all);
    for (line, record) in all.iter().zip(&upstream) {
        assert_eq!(line["origin"], "upstream", "{line}");
        for key in ["level", "target", "module"] {
            assert_eq!(line[key], record[key], "{line}");
        }
        let location = format!("{}:{}", record["file"].as_str().unwrap(), record["line"]);
        assert_eq!(line["location"], location, "{line}");
        assert_eq!(line["timestamp"], shown_time(record), "{line}");
        assert!(
            line["cursor"].is_null() && line["operation_id"] == "",
            "{line}"
        );
        assert!(line["boot_id"] == "", "{line}");
    }
    assert!(
        all.iter()
            .any(|l| l["origin"] == "tridentd" && l["operation_id"] == operation),
        "the daemon's own records follow: {all:#?}"
    );

    // The human output marks upstream's lines; a multi-line message stays.
    let human = trident_cli_ok(daemon.socket_path(), &["logs"]);
    let first = format!(
        "{} INFO  upstream trident: Trident version: 0.27.0",
        shown_time(&upstream[0])
    );
    assert!(human.starts_with(&first), "{human}");
    assert!(
        human.contains(
            "ERROR upstream trident: Trident failed due to invalid input\n\nContext:\n    0: "
        ),
        "{human}"
    );

    // The level filter applies to upstream's records too.
    let warn = json_logs(&daemon, &["--level", "warn"]);
    let severe = |_: usize, r: &Value| r["level"] == "error" || r["level"] == "warn";
    assert_eq!(upstream_messages(&warn), fixture_messages(severe));
    assert!(!upstream_messages(&warn).is_empty());
    assert_upstream_first(&warn);
    // So do the target and the time (upstream's error and what follows).
    let prefix = "trident::logging";
    let logging = json_logs(&daemon, &["--target", prefix]);
    let of_target = |_: usize, r: &Value| r["target"].as_str().unwrap().starts_with(prefix);
    assert_eq!(upstream_messages(&logging), fixture_messages(of_target));
    assert!(!upstream_messages(&logging).is_empty());
    let error_at = upstream.iter().position(|r| r["level"] == "error").unwrap();
    let since_time = upstream[error_at]["timestamp"].as_str().unwrap();
    let since = json_logs(&daemon, &["--since", since_time]);
    assert_eq!(
        upstream_messages(&since),
        fixture_messages(|i, _| i >= error_at)
    );
    // An operation's records, a boot's, or a resume after a cursor: none of
    // upstream's (they have no operation, boot or cursor).
    let op = json_logs(&daemon, &["--operation", &operation]);
    assert!(
        !op.is_empty() && upstream_messages(&op).is_empty(),
        "{op:#?}"
    );
    let boot = json_logs(&daemon, &["--boot"]);
    assert!(upstream_messages(&boot).is_empty(), "{boot:#?}");
    let first_ours = all.iter().find_map(|l| l["cursor"].as_str()).unwrap();
    let resumed = json_logs(&daemon, &["--after-cursor", first_ours]);
    assert!(
        !resumed.is_empty() && upstream_messages(&resumed).is_empty(),
        "{resumed:#?}"
    );

    // -n N: the last N of both. The daemon has more than 3 records of its
    // own, so none of upstream's; with a filter only upstream's match:
    // upstream's last N.
    let three = json_logs(&daemon, &["-n", "3"]);
    assert_eq!(three.len(), 3, "{three:#?}");
    assert!(upstream_messages(&three).is_empty(), "{three:#?}");
    let last = json_logs(&daemon, &["-n", "1", "--target", prefix]);
    let newest = fixture_messages(of_target).pop().unwrap();
    assert_eq!(upstream_messages(&last), [newest]);
    let ours = all.iter().filter(|l| l["origin"] == "tridentd").count();
    let more = json_logs(&daemon, &["-n", &(ours + 2).to_string()]);
    let shown = upstream_messages(&more);
    // Upstream's newest, as many as the daemon's own leave room for (its
    // own may have grown by a few since `all`).
    assert!(shown.len() <= 2, "{more:#?}");
    let count = upstream.len();
    let newest = fixture_messages(|i, _| i + shown.len() >= count);
    assert_eq!(shown, newest);
    assert_upstream_first(&more);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_unreadable_or_missing_upstream_log_never_fails_logs() {
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("trident-full.log");
    let mut content = std::fs::read(fixture()).unwrap();
    content.extend_from_slice(b"not one of upstream's records\n\xff\xfe binary \x00 bytes\n");
    // Cut by a crash in the middle of a record: the last line.
    content.extend_from_slice(br#"{"level":"info","message":"cut"#);
    std::fs::write(&damaged, content).unwrap();
    let daemon = daemon_with(&damaged).await;
    let out = trident_cli(daemon.socket_path(), &["logs", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<Value> = String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let upstream: Vec<&Value> = lines.iter().filter(|l| l["origin"] == "upstream").collect();
    let records = fixture_records().len();
    assert_eq!(upstream.len(), records + 3, "{lines:#?}");
    let unparsed = &upstream[records..];
    assert_eq!(unparsed[0]["message"], "not one of upstream's records");
    assert_eq!(
        unparsed[1]["message"],
        "\u{fffd}\u{fffd} binary \u{0} bytes"
    );
    assert_eq!(unparsed[2]["message"], r#"{"level":"info","message":"cut"#);
    for (line, number) in unparsed.iter().zip(records + 1..) {
        assert!(
            line["level"].is_null() && line["timestamp"].is_null(),
            "{line}"
        );
        assert_eq!(line["fields"]["unparsed_line"], number, "{line}");
    }
    assert_upstream_first(&lines);
    let notice = format!("3 of {} lines are not its records", records + 3);
    assert!(stderr(&out).contains(&notice), "{}", stderr(&out));
    let human = trident_cli_ok(daemon.socket_path(), &["logs"]);
    assert!(
        human.contains("- ?     upstream (not parsed): not one of upstream's records"),
        "{human}"
    );
    // A level filter leaves out lines without a level.
    let errors = json_logs(&daemon, &["--level", "error"]);
    let error_records = fixture_records()
        .iter()
        .filter(|r| r["level"] == "error")
        .count();
    assert_eq!(
        upstream_messages(&errors).len(),
        error_records,
        "{errors:#?}"
    );
    drop(daemon);

    // Unreadable (a directory: root reads any file): a notice, then the
    // daemon's records.
    let daemon = daemon_with(dir.path()).await;
    let out = trident_cli(daemon.socket_path(), &["logs", "-o", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("upstream Trident's log"),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!text.is_empty() && !text.contains("\"upstream\""), "{text}");
    drop(daemon);

    // Missing: nothing of upstream's, and nothing said.
    let daemon = daemon_with(&dir.path().join("none")).await;
    let out = trident_cli(daemon.socket_path(), &["logs", "-o", "json"]);
    assert!(
        out.status.success() && stderr(&out).is_empty(),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!text.is_empty() && !text.contains("\"upstream\""), "{text}");
}
