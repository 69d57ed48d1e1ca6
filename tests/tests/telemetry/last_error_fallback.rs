//! `TelemetryService.GetLastError` when the bus never saw the error: the
//! host came back on a volume whose journal does not hold a failure that
//! its handed-back datastore records (an A/B commit that failed on the
//! other volume). Shown with two daemons on one datastore (record backend,
//! disk-image file): the first fails an update, the second starts with a
//! fresh state directory, so a fresh bus journal. Every client, not only
//! `trident get last-error`, gets the Host Status's `lastError` from the
//! one RPC, structured, with `origin` saying where it came from.

#![allow(clippy::unwrap_used)]

use trident_e2e::servicing_support::{Clients, Fixture, daemon_with_datastore};
use trident_e2e::{Daemon, trident_cli};
use trident_proto::v1::{
    GetLastErrorRequest, GetLastErrorResponse, LastErrorOrigin, TridentErrorKind,
    telemetry_service_client::TelemetryServiceClient,
};

async fn get_last_error(daemon: &Daemon) -> GetLastErrorResponse {
    TelemetryServiceClient::new(daemon.channel().await.unwrap())
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
}

#[tokio::test(flavor = "multi_thread")]
async fn get_last_error_answers_from_the_host_status_when_the_bus_never_saw_the_error() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 51, None);
    let v2 = fx.image("v2", 52, None);
    let datastore = fx.dir.path().join("datastore.sqlite");

    // First daemon: provisioned, then an update whose image hash is wrong.
    let mut first = daemon_with_datastore(&datastore).await;
    let mut c = Clients::new(&first).await;
    c.provision(&fx.config(&v1, "")).await;
    let stage = c
        .update_stage(&fx.config_with_hash(&v2, &"a".repeat(96), ""))
        .await;
    assert!(!stage.succeeded(), "a wrong hash must fail the stage");
    let from_bus = get_last_error(&first).await;
    assert_eq!(from_bus.origin(), LastErrorOrigin::Bus);
    let bus_error = from_bus.error.expect("the bus saw the failure");
    assert_eq!(bus_error.subkind, "image-hash-mismatch");
    drop(c);
    let exit = first.stop();
    assert!(exit.is_some_and(|s| s.success()), "first daemon: {exit:?}");

    // Second daemon: the same datastore, a fresh state dir and journal.
    let second = daemon_with_datastore(&datastore).await;
    assert_ne!(second.state_dir(), first.state_dir());
    let answer = get_last_error(&second).await;
    assert_eq!(answer.origin(), LastErrorOrigin::HostStatus);
    let error = answer.error.expect("the Host Status's lastError");
    assert_eq!(error.category(), TridentErrorKind::InvalidInputError);
    assert_eq!(error.subkind, "image-hash-mismatch");
    assert_eq!(error.message, bus_error.message);
    assert_eq!(error.location, bus_error.location);
    assert_eq!(error.causes, bus_error.causes);
    assert!(!error.causes.is_empty(), "cause chain kept: {error:?}");
    assert_eq!(error.operation_id, stage.operation_id());
    assert!(error.timestamp.is_some(), "{error:?}");
    assert!(
        error.report.contains("image-hash-mismatch"),
        "{}",
        error.report
    );
    // The datastore has no log lines to give.
    assert!(error.recent_logs.is_empty());

    // The CLI calls that one RPC and prints the same error.
    let out = trident_cli(
        second.socket_path(),
        &["--output", "json", "get", "last-error"],
    );
    assert!(out.status.success(), "{out:?}");
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["error"], "image-hash-mismatch", "{printed}");
    assert_eq!(printed["category"], "invalid-input", "{printed}");
    assert_eq!(printed["message"], error.message.as_str(), "{printed}");
    assert_eq!(
        printed["operation_id"],
        stage.operation_id().as_str(),
        "{printed}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn get_last_error_has_no_origin_when_there_is_no_error() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = daemon_with_datastore(&dir.path().join("datastore.sqlite")).await;
    let answer = get_last_error(&daemon).await;
    assert_eq!(answer.error, None);
    assert_eq!(answer.origin(), LastErrorOrigin::Unspecified);
}
