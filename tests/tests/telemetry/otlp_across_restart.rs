//! OTLP delivery survives the reboot, and the update's trace is one trace
//! in the export too. Real receiver (`@elastic/mockotlpserver`), real
//! daemons on one state directory: the first (boot A) provisions the host
//! while the receiver is up (delivered), then the receiver goes away and the
//! update is staged and finalized (its spans and logs cannot be delivered);
//! the daemon stops (the stand-in for the reboot) and a second one (boot B)
//! starts with the receiver back on the same port and commits. The receiver
//! then holds the stage's and the finalize's spans (exported from the
//! journal after the restart) and the commit's, each exactly once, in one
//! trace: the commit's root span a child of the finalize's, the finalize's
//! of the stage's; nothing the first receiver got is sent again.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use trident_e2e::otlp_support::{FAST_EXPORT_ENV, Receiver, SpanRecord, attr};
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{Daemon, list_operations};

const BOOT_A: &str = "07e10a00-0000-4000-8000-00000000000a";
const BOOT_B: &str = "07e10b00-0000-4000-8000-00000000000b";
const WAIT: Duration = Duration::from_secs(30);

async fn exporting_daemon_in_boot(
    state: &Path,
    boot_id_file: &Path,
    boot: &str,
    endpoint: &str,
) -> Daemon {
    let mut builder = Daemon::builder()
        .state_dir(state)
        .boot(boot_id_file, boot)
        .args(["--inactivity-timeout", "0", "--otlp-timeout", "1s"])
        .arg("--otlp-endpoint")
        .arg(endpoint);
    for (key, value) in FAST_EXPORT_ENV {
        builder = builder.env(key, value);
    }
    builder.spawn().await.unwrap()
}

/// The operation root span of `rpc` among `spans`.
fn root_of<'a>(spans: &'a [SpanRecord], rpc: &str) -> Option<&'a SpanRecord> {
    spans
        .iter()
        .find(|s| s.name == "servicing_operation" && attr(&s.attributes, "rpc") == Some(rpc))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_not_delivered_before_a_restart_are_exported_after_it_once_in_one_trace() {
    let first_receiver = Receiver::start().unwrap();
    let port: u16 = first_receiver
        .grpc
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("the receiver's gRPC port");
    let f = Fixture::new();
    let (state, boot_id_file) = (f.dir.path().join("state"), f.dir.path().join("boot_id"));
    let endpoint = first_receiver.grpc.clone();
    let mut first = exporting_daemon_in_boot(&state, &boot_id_file, BOOT_A, &endpoint).await;
    let mut c = Clients::new(&first).await;
    c.provision(&f.config(&f.image("v1", 1, None), "")).await;
    first_receiver
        .wait_for(WAIT, |r| {
            root_of(&r.spans(), "Install").is_some() && root_of(&r.spans(), "Commit").is_some()
        })
        .unwrap();
    // Let the last batches (logs of the commit) go out before the outage.
    std::thread::sleep(Duration::from_millis(1500));
    let delivered_first = first_receiver.received();
    drop(first_receiver);

    let v2 = f.config(&f.image("v2", 2, None), "");
    let (stage, finalize) = c.stage_and_finalize(&v2).await;
    drop(c);
    let exit = first.stop();
    assert!(exit.is_some_and(|s| s.success()), "first daemon: {exit:?}");
    // The cursor says what the first run delivered (its run, its sequence).
    let cursor = std::fs::read_to_string(state.join("journal/otlp-traces.cursor")).unwrap();
    let run_a = delivered_first
        .resource()
        .and_then(|r| attr(&r, "service.instance.id").map(str::to_owned))
        .expect("the first run's instance id");
    assert!(cursor.starts_with(&format!("{run_a} ")), "{cursor}");

    let receiver = Receiver::start_on(Some(port)).unwrap();
    let second = exporting_daemon_in_boot(&state, &boot_id_file, BOOT_B, &endpoint).await;
    let commit = Clients::new(&second).await.commit().await;
    commit.assert_success();
    let trace_id = list_operations(second.socket_path())
        .await
        .unwrap()
        .iter()
        .find(|op| op.operation_id == stage.operation_id())
        .expect("the stage is listed")
        .trace_id
        .clone();
    receiver
        .wait_for(WAIT, |r| {
            let spans = r.spans();
            ["UpdateStage", "UpdateFinalize", "Commit"]
                .iter()
                .all(|rpc| root_of(&spans, rpc).is_some())
        })
        .unwrap();
    // Stragglers (a second copy would come within the export interval).
    std::thread::sleep(Duration::from_millis(1500));
    let got = receiver.received();
    let spans = got.spans();

    // Each span once, and nothing the first receiver already had.
    let mut seen = HashMap::new();
    for span in &spans {
        *seen.entry(span.span_id.clone()).or_insert(0) += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "spans exported twice: {twice:?}");
    let before: HashSet<String> = delivered_first
        .spans()
        .into_iter()
        .map(|s| s.span_id)
        .collect();
    let again: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| before.contains(&s.span_id))
        .collect();
    assert!(
        again.is_empty(),
        "delivered before the restart and sent again: {again:#?}"
    );
    assert!(
        root_of(&spans, "Install").is_none(),
        "the install was delivered before the restart"
    );

    // One trace: stage -> finalize -> commit, by the bus's ids.
    let stage_root = root_of(&spans, "UpdateStage").unwrap();
    let finalize_root = root_of(&spans, "UpdateFinalize").unwrap();
    let commit_root = root_of(&spans, "Commit").unwrap();
    for root in [stage_root, finalize_root, commit_root] {
        assert_eq!(root.trace_id, trace_id, "{root:#?}");
    }
    assert_eq!(
        attr(&finalize_root.attributes, "operation_id"),
        Some(finalize.operation_id().as_str())
    );
    assert_eq!(finalize_root.parent_span_id, stage_root.span_id);
    assert_eq!(commit_root.parent_span_id, finalize_root.span_id);
    assert_eq!(
        stage_root.attributes.get("trident.replayed"),
        Some(&serde_json::Value::Bool(true)),
        "the stage came from the journal: {stage_root:#?}"
    );
    assert!(commit_root.attributes.get("trident.replayed").is_none());
    // The stage's phases came along, in its trace, under its root.
    let stage_spans: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| s.trace_id == trace_id && s.attributes.get("trident.replayed").is_some())
        .collect();
    let ids: HashSet<&str> = stage_spans.iter().map(|s| s.span_id.as_str()).collect();
    assert!(stage_spans.len() > 3, "{stage_spans:#?}");
    assert!(
        stage_spans
            .iter()
            .all(|s| s.parent_span_id.is_empty() || ids.contains(s.parent_span_id.as_str())),
        "every replayed span's parent is exported too: {stage_spans:#?}"
    );

    // The stage's log lines too, once, in its trace.
    let started: Vec<_> = got
        .logs()
        .into_iter()
        .filter(|l| l.body == "servicing operation started" && l.trace_id == trace_id)
        .collect();
    let rpcs: Vec<&str> = started
        .iter()
        .filter_map(|l| attr(&l.attributes, "rpc"))
        .collect();
    assert_eq!(
        rpcs.iter().filter(|r| **r == "UpdateStage").count(),
        1,
        "{started:#?}"
    );
}
