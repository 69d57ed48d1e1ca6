//! The VM scenario's check of issue 26, once the host is back on volume B
//! after the failed update: one timeline per host across reboots, through
//! the real CLI on the guest, then offline from the target disk.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use serde_json::Value;
use trident_proto::v1::{OperationEvent, Record, StatusCode, record};

use crate::mini_os;
use crate::vm_orchestrator::trident_cli;

/// On B (the guest's tridentd at `socket`): the update to v2 (staged and
/// finalized on A) and its commit on B are one trace across the reboot;
/// every boot is listed; the last error is A's failed commit with its
/// recent logs. `root_b`: the device B's root is written to (its write
/// phase is `write/ROOT_B`).
pub async fn on_b(socket: &Path, root_b: &str) {
    let operations = crate::list_operations(socket).await.unwrap();
    for op in &operations {
        println!(
            "operation on B's bus: {} {} result {} continues {:?}",
            op.rpc, op.operation_id, op.result, op.continues_operation_id
        );
    }
    let update_to_v2 = operations
        .iter()
        .find(|op| op.rpc == "Update")
        .expect("the update to v2 is in B's history");
    let commit_on_b = operations
        .iter()
        .find(|op| op.continues_operation_id == update_to_v2.operation_id)
        .expect("the commit of the update to v2 continues its trace");
    assert_eq!(commit_on_b.rpc, "Commit");
    assert_eq!(commit_on_b.trace_id, update_to_v2.trace_id);

    let boots: Vec<Value> =
        serde_json::from_str(&trident_cli(socket, &["logs", "--list-boots", "-o", "json"]).await)
            .unwrap();
    let boot_ids: Vec<&str> = boots
        .iter()
        .map(|b| b["boot_id"].as_str().unwrap())
        .collect();
    println!(
        "trident logs --list-boots on B:\n{}",
        trident_cli(socket, &["logs", "--list-boots"]).await
    );
    // The installer's, A's, B's, A's trial boot and B again.
    assert!(boot_ids.len() >= 5, "{boots:#?}");
    assert_eq!(boots.last().unwrap()["current"], true);

    let id = update_to_v2.operation_id.as_str();
    println!(
        "trident traces --operation {id} on B:\n{}",
        trident_cli(socket, &["traces", "--operation", id]).await
    );
    let tree: Vec<Value> = serde_json::from_str(
        &trident_cli(socket, &["traces", "--operation", id, "-o", "json"]).await,
    )
    .unwrap();
    let all = crate::trace_nodes(&tree);
    let update = crate::trace_operation_node(&all, "Update");
    let commit = crate::trace_operation_node(&all, "Commit");
    let (on_a, on_b) = (
        update["boot_id"].as_str().unwrap(),
        commit["boot_id"].as_str().unwrap(),
    );
    assert_ne!(on_a, on_b, "the update and its commit ran in two boots");
    let position = |boot: &str| boot_ids.iter().position(|b| *b == boot);
    assert!(
        position(on_a) < position(on_b) && position(on_a).is_some(),
        "{on_a} before {on_b} in {boot_ids:?}"
    );
    assert_eq!(commit["reboot"]["from_boot"], on_a, "{commit:#?}");
    assert_eq!(commit["reboot"]["to_boot"], on_b);
    let stage = crate::trace_nodes(update["children"].as_array().unwrap());
    assert!(
        stage
            .iter()
            .any(|n| n["name"] == format!("phase write/{root_b}").as_str()),
        "the stage's write on A: {update:#?}"
    );
    assert!(
        crate::trace_nodes(commit["children"].as_array().unwrap())
            .iter()
            .any(|n| n["name"] == "phase health-checks"),
        "the commit's health checks on B: {commit:#?}"
    );
    let chrome: Value = serde_json::from_str(
        &trident_cli(socket, &["traces", "--operation", id, "--format", "chrome"]).await,
    )
    .unwrap();
    let reboots = chrome["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "reboot")
        .count();
    assert_eq!(reboots, 1, "one reboot in the update's Chrome trace");

    // The last error: the commit that failed on A, from B's bus, with the
    // log lines that led to it.
    let failed_commit = operations
        .iter()
        .rev()
        .find(|op| op.rpc == "Commit" && op.result == StatusCode::Failure as i32)
        .expect("A's failed commit is in B's history");
    let error: Value = serde_json::from_str(
        &trident_cli(socket, &["--output", "json", "get", "last-error"]).await,
    )
    .unwrap();
    assert_eq!(
        error["operation_id"], failed_commit.operation_id,
        "{error:#}"
    );
    let recent = error["recent_logs"].as_array().unwrap();
    assert!(!recent.is_empty(), "recent logs of A's commit: {error:#}");
    println!("last error on B, recent logs: {recent:#?}");
}

fn operation_of(rec: &Record) -> Option<&str> {
    let id = match rec.record.as_ref()? {
        record::Record::Log(l) => &l.operation_id,
        record::Record::Span(s) => &s.operation_id,
        record::Record::Progress(p) => &p.operation_id,
        record::Record::Error(e) => &e.operation_id,
        record::Record::Operation(o) => &o.operation_id,
        _ => return None,
    };
    (!id.is_empty()).then_some(id.as_str())
}

/// After the VM stopped: B's journal, read offline from the target disk,
/// holds every operation of B's datastore history, each started and ended,
/// with its records.
pub fn in_the_booted_volumes_journal(target: &Path, partition: &str, dir: &str, work: &Path) {
    let state = mini_os::trident_state_after_power_off(target, partition, dir, work);
    let datastore =
        trident_host::datastore::Datastore::open(state.join("datastore.sqlite")).unwrap();
    let operations = datastore.operations(10_000).unwrap();
    datastore.verify().unwrap();
    let records = trident_telemetry::journal::read_records(&state.join("journal")).unwrap();
    println!(
        "B's journal offline: {} records; B's datastore: {} operations",
        records.len(),
        operations.len()
    );
    assert!(operations.len() >= 6, "{operations:#?}");
    for op in &operations {
        let of_op: Vec<&Record> = records
            .iter()
            .filter(|r| operation_of(r) == Some(op.id.as_str()))
            .collect();
        let events: Vec<i32> = of_op
            .iter()
            .filter_map(|r| match &r.record {
                Some(record::Record::Operation(o)) => Some(o.event),
                _ => None,
            })
            .collect();
        println!(
            "  {} {} ({}): {} records",
            op.rpc,
            op.id,
            op.result.as_str(),
            of_op.len()
        );
        assert_eq!(
            events.first(),
            Some(&(OperationEvent::Started as i32)),
            "{} {} starts in B's journal",
            op.rpc,
            op.id
        );
        assert_eq!(
            events.last(),
            Some(&(OperationEvent::Completed as i32)),
            "{} {} ends in B's journal",
            op.rpc,
            op.id
        );
        assert!(
            of_op.len() > events.len(),
            "{} {} has its records in B's journal",
            op.rpc,
            op.id
        );
    }
}
