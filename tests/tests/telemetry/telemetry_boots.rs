//! Records carry the boot they were emitted in, and `trident logs` selects
//! by boot as `journalctl -b` does. A daemon restarted with another
//! `--boot-id-file` content (TRIDENT_BOOT_ID_FILE) stands in for a reboot:
//! each run does one real servicing operation (an update staged on a host
//! never installed, which fails at once without touching a disk), then
//! `trident logs --list-boots` lists both boots in order with their first
//! and last records, `--boot` selects each, and the human output marks the
//! reboot where the stream crosses it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use trident_e2e::{Daemon, failing_update_stage, trident_cli, trident_cli_ok, trident_command_via};
use trident_proto::v1::{Cursor, servicing_response};

const STREAM_TIMEOUT: Duration = Duration::from_secs(60);
const BOOT_A: &str = "0b0070a1-0000-4000-8000-00000000000a";
const BOOT_B: &str = "0b0070b2-0000-4000-8000-00000000000b";

async fn daemon_in_boot(state: &Path, boot_id_file: &Path, boot: &str) -> Daemon {
    Daemon::builder()
        .state_dir(state)
        .boot(boot_id_file, boot)
        .spawn()
        .await
        .unwrap()
}

/// Runs a failing update stage; returns its operation id and first cursor.
async fn failing_operation(daemon: &Daemon) -> (String, Cursor) {
    let messages = failing_update_stage(daemon.channel().await.unwrap(), STREAM_TIMEOUT)
        .await
        .unwrap();
    let started = messages
        .into_iter()
        .find_map(|m| match m {
            servicing_response::Response::Started(s) => Some(s),
            _ => None,
        })
        .expect("Started");
    (started.operation_id, started.cursor.expect("cursor"))
}

fn cli_ok(daemon: &Daemon, args: &[&str]) -> String {
    trident_cli_ok(daemon.socket_path(), args)
}

/// The JSON lines of `trident logs ARGS -o json`.
fn json_logs(daemon: &Daemon, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["logs", "-o", "json"];
    all.extend_from_slice(args);
    cli_ok(daemon, &all)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn operations_of(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .filter_map(|l| l["operation_id"].as_str())
        .filter(|o| !o.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_list_and_select_the_boots_of_a_daemon_restarted_after_a_reboot() {
    let dir = tempfile::tempdir().unwrap();
    let (state, boot_id_file) = (dir.path().join("state"), dir.path().join("boot_id"));

    let mut first = daemon_in_boot(&state, &boot_id_file, BOOT_A).await;
    let (op_a, cursor_a) = failing_operation(&first).await;
    let exit = first.stop();
    assert!(exit.is_some_and(|s| s.success()), "first daemon: {exit:?}");

    let second = daemon_in_boot(&state, &boot_id_file, BOOT_B).await;
    let (op_b, _) = failing_operation(&second).await;

    // Both boots, oldest first, each with its first and last record.
    let listed: Vec<Value> =
        serde_json::from_str(&cli_ok(&second, &["logs", "--list-boots", "-o", "json"])).unwrap();
    let ids: Vec<&str> = listed
        .iter()
        .map(|b| b["boot_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [BOOT_A, BOOT_B], "{listed:#?}");
    let indexes: Vec<i64> = listed
        .iter()
        .map(|b| b["index"].as_i64().unwrap())
        .collect();
    assert_eq!(indexes, [-1, 0]);
    assert_eq!(listed[1]["current"], true);
    // Fixed-width RFC 3339 (UTC, milliseconds): text order is time order.
    let time = |b: &Value, key: &str| b[key].as_str().expect(key).to_owned();
    assert!(time(&listed[0], "first") <= time(&listed[0], "last"));
    assert!(time(&listed[0], "last") <= time(&listed[1], "first"));
    assert!(time(&listed[1], "first") <= time(&listed[1], "last"));
    assert!(listed[0]["records"].as_u64().unwrap() > 0);
    let human = cli_ok(&second, &["logs", "--list-boots"]);
    assert!(human.starts_with(" IDX BOOT ID"), "{human}");
    assert!(human.contains(&format!("  -1 {BOOT_A}")), "{human}");
    assert!(human.contains(&format!("   0 {BOOT_B}")), "{human}");

    // --boot selects each boot, by index or by id; records say their boot.
    for (selector, boot, op, other) in [
        ("-1", BOOT_A, &op_a, &op_b),
        (BOOT_A, BOOT_A, &op_a, &op_b),
        ("0", BOOT_B, &op_b, &op_a),
        (&BOOT_B[..8], BOOT_B, &op_b, &op_a),
    ] {
        let lines = json_logs(&second, &["--boot", selector]);
        assert!(!lines.is_empty(), "--boot {selector}: no records");
        assert!(
            lines.iter().all(|l| l["boot_id"] == boot),
            "--boot {selector}: {lines:#?}"
        );
        let ops = operations_of(&lines);
        assert!(ops.contains(&op.as_str()), "--boot {selector}: {ops:?}");
        assert!(!ops.contains(&other.as_str()), "--boot {selector}: {ops:?}");
    }
    // A past boot's records end the output, even when following.
    let followed = trident_command_via(&["timeout", "60"], second.socket_path())
        .args(["logs", "-f", "--boot", "-1"])
        .output()
        .unwrap();
    assert!(followed.status.success(), "{followed:?}");
    assert!(String::from_utf8_lossy(&followed.stdout).contains(&op_a[..8]));
    // Without a value, --boot is the current boot.
    let current = json_logs(&second, &["--boot"]);
    assert!(current.iter().all(|l| l["boot_id"] == BOOT_B));
    let unknown = trident_cli(second.socket_path(), &["logs", "--boot", "-2"]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");

    // Across the reboot (from the first boot's operation on), the human
    // output says where the boot changed, between the two boots' lines.
    let cursor = format!("{}:{}", cursor_a.run_id, cursor_a.sequence);
    let text = cli_ok(&second, &["logs", "--after-cursor", &cursor]);
    let mark = format!("-- reboot: boot {BOOT_B} (previous boot {BOOT_A}) --");
    let at = text
        .find(&mark)
        .unwrap_or_else(|| panic!("no reboot mark in:\n{text}"));
    let (before, after) = text.split_at(at);
    assert!(before.contains(&format!("[{}", &op_a[..8])), "{before}");
    assert!(after.contains(&format!("[{}", &op_b[..8])), "{after}");
    assert_eq!(text.matches("-- reboot:").count(), 1, "{text}");
}
