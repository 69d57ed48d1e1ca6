//! Strict upstream streams by default and our opt-in additions, end to end
//! through a real daemon. A client without the `trident-additions` header
//! (what a client built from upstream's schema sends) gets exactly what
//! upstream Trident sends: one `Started` with none of our fields, `Log`
//! messages, one `Completed`; a failed operation's `Completed` says
//! `REBOOT_NOT_REQUIRED` with no servicing kind. Each addition name turns on
//! its own part only. And a request that lacks a part upstream requires, or
//! names an enum value the daemon does not know, is INVALID_ARGUMENT naming
//! the field.

#![allow(clippy::unwrap_used)]

use trident_e2e::servicing_support::{Clients, Collected, Fixture, collect, hc};
use trident_e2e::{Daemon, daemon};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::version_service_client::VersionServiceClient;
use trident_proto::v1::{
    self, GetLastErrorRequest, RebootAction, RebootManagement, RebootStatus, Started,
    TridentErrorKind, VersionRequest, commit_service_client::CommitServiceClient,
    update_service_client::UpdateServiceClient,
};
use trident_proto::v1preview::{
    self, FinalizeInstallRequest, InstallRequest, StageInstallRequest,
    install_service_client::InstallServiceClient,
};
use trident_proto::{
    ADDITION_ERROR_REPORT, ADDITION_IDS, ADDITION_PROGRESS, ADDITION_REBOOT_ACTION,
    ADDITIONS_HEADER,
};

/// `message` as a request; with `additions`, carrying the header.
fn request<T>(message: T, additions: Option<&str>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(names) = additions {
        request
            .metadata_mut()
            .insert(ADDITIONS_HEADER, names.parse().unwrap());
    }
    request
}

fn install_message(config: &str) -> InstallRequest {
    InstallRequest {
        stage: Some(StageInstallRequest {
            config: Some(hc(config)),
        }),
        finalize: Some(FinalizeInstallRequest { reboot: None }),
    }
}

/// Install over a plain channel (no header unless `additions`).
async fn install(d: &Daemon, config: &str, additions: Option<&str>) -> Collected {
    let mut client = InstallServiceClient::new(d.strict_channel().await.unwrap());
    collect(
        client
            .install(request(install_message(config), additions))
            .await,
    )
    .await
}

/// Commit over a plain channel (no header unless `additions`).
async fn commit(d: &Daemon, additions: Option<&str>) -> Collected {
    let mut client = CommitServiceClient::new(d.strict_channel().await.unwrap());
    let message = v1::CommitRequest { reboot: None };
    collect(client.commit(request(message, additions)).await).await
}

/// Asserts `stream` is exactly upstream's shape: Started, Log..., Completed.
fn assert_upstream_shape(stream: &Collected) {
    let middle = &stream.order[1..stream.order.len() - 1];
    assert!(
        middle.iter().all(|kind| *kind == "log"),
        "only Log between Started and Completed: {:?}",
        stream.order
    );
    assert_eq!(
        stream.started.as_ref().unwrap(),
        &Started::default(),
        "Started carries none of our fields"
    );
}

/// Asserts `error` carries upstream's fields and none of ours (1000+).
fn assert_upstream_error(error: &v1::TridentError) {
    assert!(
        !error.message.is_empty() && !error.subkind.is_empty(),
        "{error:?}"
    );
    assert!(
        error.context.is_empty()
            && error.causes.is_empty()
            && error.operation_id.is_empty()
            && error.trace_id.is_empty()
            && error.timestamp.is_none(),
        "no field of ours in the error: {error:?}"
    );
}

/// A fixture whose target disk is too small for its image: installs fail
/// with a structured error.
fn failing_fixture() -> (Fixture, String) {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 121, None);
    std::fs::File::create(&fx.disk)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let config = fx.config(&v1, "");
    (fx, config)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_default_stream_is_exactly_upstreams_and_each_name_adds_only_its_part() {
    let fx = Fixture::new();
    let config = fx.config(&fx.image("v1", 7, None), "");
    let d = daemon().await;

    let strict = install(&d, &config, None).await;
    strict.assert_success();
    // Trident handles the reboot (the request leaves it to the server):
    // REBOOT_STARTED as upstream's server answers, even though this daemon
    // (`--reboot record`) reboots nothing; what it does is not said by default.
    assert_eq!(
        strict.completed().reboot_status(),
        RebootStatus::RebootStarted
    );
    assert_eq!(strict.completed().reboot_action, None);
    assert_upstream_shape(&strict);
    assert!(strict.completed().servicing_kind.is_some(), "{strict:?}");

    // Unknown names are ignored; `ids` fills Started, without progress.
    let with_ids = commit(&d, Some(&format!("not-yet-invented, {ADDITION_IDS}"))).await;
    with_ids.assert_success();
    assert!(
        !with_ids.order.contains(&"progress"),
        "{:?}",
        with_ids.order
    );
    let started = with_ids.started.as_ref().unwrap();
    assert!(!started.operation_id.is_empty() && started.trace_id.len() == 32);
    assert!(started.cursor.is_some(), "{started:?}");

    // `progress` alone: progress messages, and still no id in Started.
    let fx = Fixture::new();
    let config = fx.config(&fx.image("v1", 8, None), "");
    let d = daemon().await;
    let with_progress = install(&d, &config, Some(ADDITION_PROGRESS)).await;
    with_progress.assert_success();
    assert!(
        with_progress.order.contains(&"progress"),
        "`progress` adds progress: {:?}",
        with_progress.order
    );
    assert!(
        with_progress.order.contains(&"overall-progress")
            && !with_ids.order.contains(&"overall-progress")
            && !strict.order.contains(&"overall-progress"),
        "overall progress comes with `progress` only: {:?}",
        with_progress.order
    );
    assert_eq!(with_progress.started.as_ref().unwrap(), &Started::default());
    assert_eq!(with_progress.completed().reboot_action, None);

    // `reboot-action`: Completed says the reboot was only recorded.
    let fx = Fixture::new();
    let config = fx.config(&fx.image("v1", 9, None), "");
    let d = daemon().await;
    let with_action = install(&d, &config, Some(ADDITION_REBOOT_ACTION)).await;
    with_action.assert_success();
    assert_upstream_shape(&with_action);
    let completed = with_action.completed();
    assert_eq!(completed.reboot_status(), RebootStatus::RebootStarted);
    assert_eq!(completed.reboot_action(), RebootAction::Recorded);
    let records = std::fs::read_to_string(d.state_dir().join("reboot-requests.log")).unwrap();
    assert_eq!(records.lines().count(), 1, "{records}");

    // The caller handles it: REBOOT_REQUIRED, nothing recorded, no action.
    let fx = Fixture::new();
    let config = fx.config(&fx.image("v1", 10, None), "");
    let d = daemon().await;
    let mut message = install_message(&config);
    message.finalize = Some(FinalizeInstallRequest {
        reboot: Some(RebootManagement {
            handling: v1::RebootHandling::CallerHandlesReboot as i32,
        }),
    });
    let mut client = InstallServiceClient::new(d.strict_channel().await.unwrap());
    let caller = collect(client.install(request(message, Some("all"))).await).await;
    caller.assert_success();
    assert_eq!(
        caller.completed().reboot_status(),
        RebootStatus::RebootRequired
    );
    assert_eq!(caller.completed().reboot_action, None);
    assert!(!d.state_dir().join("reboot-requests.log").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_operation_completes_as_upstreams_does() {
    let (_fx, config) = failing_fixture();
    let d = daemon().await;

    let strict = install(&d, &config, None).await;
    assert!(!strict.succeeded());
    assert_upstream_shape(&strict);
    let completed = strict.completed();
    assert_eq!(completed.reboot_status(), RebootStatus::RebootNotRequired);
    assert_eq!(completed.servicing_kind, None, "{completed:?}");
    assert_eq!(completed.image_hash, None, "{completed:?}");
    assert_upstream_error(strict.error());

    // The same failure with `ids`: our fields of the error are there.
    let with_ids = install(&d, &config, Some(ADDITION_IDS)).await;
    assert_eq!(
        with_ids.completed().reboot_status(),
        RebootStatus::RebootNotRequired
    );
    let error = with_ids.error();
    assert_eq!(error.operation_id, with_ids.operation_id());
    assert_eq!(error.trace_id.len(), 32, "{error:?}");
    assert!(
        !error.causes.is_empty() && error.timestamp.is_some(),
        "{error:?}"
    );

    // GetLastError of v1preview: upstream's fields only, unless opted in.
    let mut status = v1preview::status_service_client::StatusServiceClient::new(
        d.strict_channel().await.unwrap(),
    );
    let last = status
        .get_last_error(request(v1preview::GetLastErrorRequest {}, None))
        .await
        .unwrap()
        .into_inner()
        .error
        .unwrap();
    assert_upstream_error(&last);
    let last = status
        .get_last_error(request(v1preview::GetLastErrorRequest {}, Some("ids")))
        .await
        .unwrap()
        .into_inner()
        .error
        .unwrap();
    assert_eq!(last.operation_id, with_ids.operation_id());
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_client_that_opted_in_gets_the_full_error_report_in_the_stream() {
    let (_fx, config) = failing_fixture();
    let d = daemon().await;

    let default = install(&d, &config, None).await;
    assert!(!default.succeeded());
    assert!(
        default.error_reports.is_empty() && !default.order.contains(&"error-report"),
        "a default stream carries no error report: {:?}",
        default.order
    );

    let names = format!("some-future-addition, {ADDITION_ERROR_REPORT}, {ADDITION_IDS}");
    let opted_in = install(&d, &config, Some(&names)).await;
    assert!(!opted_in.succeeded());
    assert_eq!(opted_in.error_reports.len(), 1, "{:?}", opted_in.order);
    let report = &opted_in.error_reports[0];
    let completed_at = opted_in.order.len() - 1;
    let report_at = opted_in
        .order
        .iter()
        .position(|kind| *kind == "error-report")
        .unwrap();
    assert!(
        report_at < completed_at,
        "the report comes before Completed"
    );
    assert_eq!(
        report.category,
        TridentErrorKind::ExecutionEnvironmentMisconfigurationError as i32
    );
    assert_eq!(report.subkind, "target-disk-too-small");
    assert_eq!(report.subkind, opted_in.error().subkind);
    assert_eq!(report.operation_id, opted_in.operation_id());
    assert!(report.message.contains("disk.img"), "{}", report.message);
    assert!(
        report.location.as_ref().is_some_and(|l| !l.path.is_empty()),
        "location: {report:?}"
    );
    assert!(!report.causes.is_empty(), "cause chain: {report:?}");
    assert!(!report.recent_logs.is_empty(), "recent logs: {report:?}");

    // It is the full report, the same one GetLastError answers with.
    let last = TelemetryServiceClient::new(d.channel().await.unwrap())
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
        .error
        .unwrap();
    assert_eq!(&last, report);
}

#[tokio::test(flavor = "multi_thread")]
async fn version_says_its_git_commit_and_boot_id_only_to_clients_that_opted_in() {
    let d = daemon().await;
    let mut client = VersionServiceClient::new(d.strict_channel().await.unwrap());
    let strict = client
        .version(request(VersionRequest {}, None))
        .await
        .unwrap()
        .into_inner();
    assert!(!strict.version.is_empty());
    assert_eq!(strict.git_commit, "", "no field of ours by default");
    assert_eq!(strict.boot_id, "", "no field of ours by default");
    let with_ids = client
        .version(request(VersionRequest {}, Some("IDS")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(with_ids.version, strict.version);
    assert!(!with_ids.git_commit.is_empty(), "{with_ids:?}");
    // By default the daemon tells this host's boot id (/proc).
    let own = std::fs::read_to_string(trident_host::boot_id::BOOT_ID_PATH).unwrap();
    assert_eq!(with_ids.boot_id, own.trim(), "{with_ids:?}");
}

/// Asserts `result` is INVALID_ARGUMENT whose message names `field`.
fn assert_invalid<T: std::fmt::Debug>(result: Result<T, tonic::Status>, field: &str) {
    let status = result.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains(field),
        "names {field}: {}",
        status.message()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_missing_stage_config_or_finalize_is_invalid_argument() {
    let d = daemon().await;
    let channel = d.strict_channel().await.unwrap();
    let mut install = InstallServiceClient::new(channel.clone());
    let mut update = UpdateServiceClient::new(channel);
    let full = install_message("storage: {}\n");

    let no_stage = InstallRequest {
        stage: None,
        ..full.clone()
    };
    assert_invalid(install.install(no_stage).await, "`stage`");
    let no_config = InstallRequest {
        stage: Some(StageInstallRequest { config: None }),
        ..full.clone()
    };
    assert_invalid(install.install(no_config).await, "`stage.config`");
    let no_finalize = InstallRequest {
        finalize: None,
        ..full.clone()
    };
    assert_invalid(install.install(no_finalize).await, "`finalize`");

    let update_full = v1::UpdateRequest {
        stage: Some(v1::StageUpdateRequest {
            config: Some(hc("storage: {}\n")),
        }),
        finalize: Some(v1::FinalizeUpdateRequest { reboot: None }),
    };
    let no_finalize = v1::UpdateRequest {
        finalize: None,
        ..update_full.clone()
    };
    assert_invalid(update.update(no_finalize).await, "`finalize`");
    let no_stage = v1::UpdateRequest {
        stage: None,
        ..update_full
    };
    assert_invalid(update.update(no_stage).await, "`stage`");
    assert_invalid(
        update
            .update_stage(v1::StageUpdateRequest { config: None })
            .await,
        "`config`",
    );

    // Nothing was started: no operation ran.
    let mut c = Clients::new(&d).await;
    assert_eq!(c.state().await, v1preview::ServicingState::NotProvisioned);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_enum_value_is_invalid_argument_naming_the_field() {
    let d = daemon().await;
    let mut c = Clients::new(&d).await;

    assert_invalid(
        c.update
            .update_finalize(v1::FinalizeUpdateRequest {
                reboot: Some(RebootManagement { handling: 99 }),
            })
            .await,
        "reboot.handling",
    );
    assert_invalid(
        c.rollback
            .rollback_stage(v1preview::RollbackStageRequest { kind: 99 })
            .await,
        "kind",
    );

    // Nothing was started: the servicing lock is free.
    assert_eq!(
        c.state().await,
        v1preview::ServicingState::NotProvisioned,
        "no operation ran"
    );
}
