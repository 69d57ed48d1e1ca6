//! One trace per operation across its reboot, with the real daemon and CLI
//! (record backend, disk-image file): an A/B update is staged and finalized
//! in one boot, the daemon is restarted with another boot id (the stand-in
//! for the reboot, as in `telemetry_boots`), and the commit runs in the new
//! boot. The finalize continues the stage's trace and the commit the
//! finalize's (the ids kept in the datastore across the restart), so
//! `trident traces --operation <stage id>` shows stage, finalize, a line for
//! the reboot with both boot ids, and the commit with its health checks on
//! one tree; the JSON tree and the Chrome export say the same.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use serde_json::Value;
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{Daemon, list_operations, trident_cli_ok};

const BOOT_A: &str = "7ace0a00-0000-4000-8000-00000000000a";
const BOOT_B: &str = "7ace0b00-0000-4000-8000-00000000000b";

/// A health check that passes: the commit runs the health-checks phase.
const HEALTHY_CHECK: &str = r#"health:
  checks:
  - name: always-healthy
    content: 'echo healthy'
"#;

async fn daemon_in_boot(state: &Path, boot_id_file: &Path, boot: &str) -> Daemon {
    Daemon::builder()
        .state_dir(state)
        .boot(boot_id_file, boot)
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await
        .unwrap()
}

fn cli_ok(daemon: &Daemon, args: &[&str]) -> String {
    trident_cli_ok(daemon.socket_path(), args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_and_its_commit_after_the_reboot_are_one_trace_showing_both_boots() {
    let f = Fixture::new();
    let (state, boot_id_file) = (f.dir.path().join("state"), f.dir.path().join("boot_id"));
    let mut first = daemon_in_boot(&state, &boot_id_file, BOOT_A).await;
    let mut c = Clients::new(&first).await;
    c.provision(&f.config(&f.image("v1", 1, None), "")).await;
    let v2 = f.config(&f.image("v2", 2, None), HEALTHY_CHECK);
    let (stage, finalize) = c.stage_and_finalize(&v2).await;
    drop(c);
    let exit = first.stop();
    assert!(exit.is_some_and(|s| s.success()), "first daemon: {exit:?}");

    let second = daemon_in_boot(&state, &boot_id_file, BOOT_B).await;
    let commit = Clients::new(&second).await.commit().await;
    commit.assert_success();
    // One trace from the stage to the commit, each continuing the one before.
    let listed = list_operations(second.socket_path()).await.unwrap();
    let summary = |id: String| {
        listed
            .iter()
            .find(|op| op.operation_id == id)
            .unwrap_or_else(|| panic!("{id} not listed: {listed:#?}"))
            .clone()
    };
    let (staged_op, finalized_op, committed_op) = (
        summary(stage.operation_id()),
        summary(finalize.operation_id()),
        summary(commit.operation_id()),
    );
    assert_eq!(finalized_op.trace_id, staged_op.trace_id);
    assert_eq!(committed_op.trace_id, staged_op.trace_id);
    assert_eq!(finalized_op.continues_operation_id, staged_op.operation_id);
    assert_eq!(
        committed_op.continues_operation_id,
        finalized_op.operation_id
    );
    assert_eq!(staged_op.continues_operation_id, "");

    // The JSON tree: the stage's root span holds the finalize's, which holds
    // the commit's, marked as the first span after the reboot.
    let stage_id = stage.operation_id();
    let json = cli_ok(&second, &["traces", "--operation", &stage_id, "-o", "json"]);
    let tree: Vec<Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(tree.len(), 1, "one root: {tree:#?}");
    assert_eq!(tree[0]["rpc"], "UpdateStage");
    let all = trident_e2e::trace_nodes(&tree);
    let staged = trident_e2e::trace_operation_node(&all, "UpdateStage");
    let finalized = trident_e2e::trace_operation_node(&all, "UpdateFinalize");
    let committed = trident_e2e::trace_operation_node(&all, "Commit");
    assert_eq!(staged["boot_id"], BOOT_A);
    assert_eq!(finalized["boot_id"], BOOT_A);
    assert_eq!(committed["boot_id"], BOOT_B);
    assert!(
        staged["children"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["span_id"] == finalized["span_id"]),
        "the finalize is a child of the stage: {staged:#?}"
    );
    assert!(
        finalized["children"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["span_id"] == committed["span_id"]),
        "the commit is a child of the finalize: {finalized:#?}"
    );
    assert_eq!(committed["reboot"]["from_boot"], BOOT_A, "{committed:#?}");
    assert_eq!(committed["reboot"]["to_boot"], BOOT_B);
    assert!(committed["reboot"]["gap_ms"].as_f64().unwrap() >= 0.0);
    assert!(
        trident_e2e::trace_nodes(committed["children"].as_array().unwrap())
            .iter()
            .any(|n| n["name"] == "phase health-checks" && n["status"] == "ok"),
        "the commit's health checks: {committed:#?}"
    );
    let reboots = all.iter().filter(|n| !n["reboot"].is_null()).count();
    assert_eq!(reboots, 1, "one reboot in the trace");

    // The same trace from the commit's id; the human tree says the reboot.
    let from_commit = cli_ok(
        &second,
        &[
            "traces",
            "--operation",
            &commit.operation_id(),
            "-o",
            "json",
        ],
    );
    let tree_from_commit: Vec<Value> = serde_json::from_str(&from_commit).unwrap();
    assert_eq!(tree_from_commit[0]["span_id"], tree[0]["span_id"]);
    let human = cli_ok(&second, &["traces", "--operation", &stage_id]);
    let reboot_line = format!("-- reboot: boot {BOOT_A} -> boot {BOOT_B}, ");
    let at = human
        .find(&reboot_line)
        .unwrap_or_else(|| panic!("{human}"));
    let after = &human[at..];
    assert!(
        after.contains("servicing_operation Commit") && after.contains("phase health-checks"),
        "{human}"
    );
    assert!(
        human[..at].contains("servicing_operation UpdateFinalize"),
        "{human}"
    );
    assert!(
        human.contains(&format!(
            "same trace: Commit operation {}",
            commit.operation_id()
        )),
        "{human}"
    );

    // The Chrome/Perfetto export: every span, the reboot as an event
    // between the boots, each span with its boot.
    let chrome: Value = serde_json::from_str(&cli_ok(
        &second,
        &["traces", "--operation", &stage_id, "--format", "chrome"],
    ))
    .unwrap();
    let events = chrome["traceEvents"].as_array().unwrap();
    let reboot: Vec<&Value> = events.iter().filter(|e| e["name"] == "reboot").collect();
    assert_eq!(reboot.len(), 1, "{events:#?}");
    assert_eq!(reboot[0]["args"]["from_boot"], BOOT_A);
    assert_eq!(reboot[0]["args"]["to_boot"], BOOT_B);
    let commit_event = events
        .iter()
        .find(|e| e["args"]["span_id"] == committed["span_id"])
        .expect("the commit's span");
    assert_eq!(commit_event["args"]["boot_id"], BOOT_B);
    let stage_event = events
        .iter()
        .find(|e| e["args"]["span_id"] == staged["span_id"])
        .expect("the stage's span");
    assert!(
        reboot[0]["ts"].as_u64().unwrap() >= stage_event["ts"].as_u64().unwrap()
            && commit_event["ts"].as_u64().unwrap()
                >= reboot[0]["ts"].as_u64().unwrap() + reboot[0]["dur"].as_u64().unwrap(),
        "the reboot lies between the stage and the commit"
    );
}
