//! Telemetry faults while servicing runs: the journal's file system full,
//! a Watch subscriber that never reads, a Watch client that disconnects
//! mid-stream. Servicing completes; what was lost is counted and told
//! (bus drop counters, the subscriber's Gap); nothing panics. (The OTLP
//! collector down or stalling is `otlp_outage`.) No durations are asserted:
//! servicing time under these faults belongs in a benchmark.

#![allow(clippy::unwrap_used)]

use std::ffi::OsStr;
use std::time::Duration;

use futures::StreamExt;
use trident_e2e::crash_support::{Tmpfs, fill};
use trident_e2e::servicing_support::{Clients, Fixture};
use trident_e2e::{Daemon, daemon_on};
use trident_proto::v1::{
    GetBusStatusRequest, ListOperationsRequest, WatchOptions, WatchRequest, stream_event,
    telemetry_service_client::TelemetryServiceClient,
};

async fn journal_drops(d: &Daemon) -> u64 {
    TelemetryServiceClient::new(d.channel().await.unwrap())
        .get_bus_status(GetBusStatusRequest {})
        .await
        .unwrap()
        .into_inner()
        .drops
        .unwrap_or_default()
        .journal
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_journal_file_system_costs_servicing_nothing_and_the_loss_is_counted() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 701, None);
    let v2 = fx.image("v2", 702, None);
    let state = fx.dir.path().join("state");
    // Only the journal's file system is full; the datastore and boot
    // record (servicing state) live beside it on a healthy one.
    let journal = Tmpfs::mount(&state.join("journal"), "1m");
    let d = daemon_on(&state, &[]).await;
    let filler = fill(&journal.0);
    let mut c = Clients::new(&d).await;
    c.provision(&fx.config(&v1, "")).await;
    c.update_stage(&fx.config(&v2, "")).await.assert_success();
    // The journal thread writes (and fails) after the operation's end.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut lost = journal_drops(&d).await;
    while lost == 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        lost = journal_drops(&d).await;
    }
    eprintln!("journal drops while full: {lost}");
    assert!(
        lost > 0,
        "records the full journal could not take are counted"
    );

    // Space comes back: the journal takes records again, and what it
    // holds stays readable (no torn frame in the middle of a segment).
    std::fs::remove_file(&filler).unwrap();
    c.update_finalize().await.assert_success();
    let finalize_id = {
        let ops = TelemetryServiceClient::new(d.channel().await.unwrap())
            .list_operations(ListOperationsRequest {})
            .await
            .unwrap()
            .into_inner()
            .operations;
        ops.last().unwrap().operation_id.clone()
    };
    let mut d = d;
    assert!(d.stop().is_some_and(|s| s.success()), "{}", d.stderr());
    assert!(!d.stderr().contains("panicked"), "{}", d.stderr());
    let d2 = daemon_on(&state, &[]).await;
    let ops = TelemetryServiceClient::new(d2.channel().await.unwrap())
        .list_operations(ListOperationsRequest {})
        .await
        .unwrap()
        .into_inner()
        .operations;
    assert!(
        ops.iter().any(|o| o.operation_id == finalize_id),
        "the operation journaled after the disk freed up replays: {ops:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscriber_that_never_reads_and_one_that_leaves_cost_servicing_nothing() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 711, None);
    let state = fx.dir.path().join("state");
    // A small ring, so the silent subscriber falls out of it.
    let d = daemon_on(
        &state,
        &["--bus-ring-records", "256", "--shutdown-grace", "2s"].map(OsStr::new),
    )
    .await;
    // The silent subscriber's connection takes at most 4 KiB unread (HTTP/2
    // stream window), so the daemon's side of it falls behind at once.
    let small_window = trident_proto::client::uds_endpoint().initial_stream_window_size(4096);
    let silent_channel = trident_proto::client::connect_uds(small_window, d.socket_path())
        .await
        .unwrap();
    let mut telemetry = TelemetryServiceClient::new(d.channel().await.unwrap());
    let follow = || WatchRequest {
        options: Some(WatchOptions::default()),
        kinds: vec![],
    };
    // Never polled until servicing is over.
    let mut silent = TelemetryServiceClient::new(silent_channel)
        .watch(follow())
        .await
        .unwrap()
        .into_inner();
    // Reads one response, then goes away mid-stream.
    let mut leaving = telemetry.watch(follow()).await.unwrap().into_inner();

    let mut c = Clients::new(&d).await;
    // A chatty script: 20000 log records, far more than the silent
    // subscriber's window, buffers and the ring hold.
    let chatty = "scripts:\n  postConfigure:\n  - name: chatty\n    runOn: [all]\n    content: \"seq 1 20000\"\n";
    let config = fx.config(&v1, chatty);
    let install = c.install(&config);
    let leave = async {
        let _ = leaving.next().await;
        drop(leaving);
    };
    let (installed, ()) = tokio::join!(install, leave);
    installed.assert_success();
    c.commit().await.assert_success();

    // The silent subscriber is told what it missed: a Gap with a count.
    let mut missed = 0;
    while let Ok(Some(Ok(response))) =
        tokio::time::timeout(Duration::from_secs(10), silent.next()).await
    {
        for event in response.events {
            if let Some(stream_event::Event::Gap(gap)) = event.event {
                missed += gap.count;
            }
        }
        if missed > 0 {
            break;
        }
    }
    eprintln!("silent subscriber: {missed} records reported missing");
    assert!(
        missed > 0,
        "the silent subscriber gets a Gap counting its loss"
    );
    // Still open and silent, it holds SIGTERM's exit no longer than the
    // grace: the daemon exits by itself, with success.
    let mut d = d;
    d.signal(nix::sys::signal::Signal::SIGTERM).unwrap();
    let exit = d.wait_exit(Duration::from_secs(120)).await.unwrap();
    assert!(
        exit.is_some_and(|s| s.success()),
        "{exit:?}: {}",
        d.stderr()
    );
    assert!(!d.stderr().contains("panicked"), "{}", d.stderr());
    drop(silent);
}
