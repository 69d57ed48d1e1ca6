//! Our opt-in additions to the servicing stream, end to end: a client that
//! sends `trident-additions: error-report` gets the failing operation's full
//! error report in the stream; a client that does not, gets the stream it
//! always got. And enum values a request names that the daemon does not
//! know are INVALID_ARGUMENT naming the field.

#![allow(clippy::unwrap_used)]

mod servicing_support;

use servicing_support::{Clients, Collected, Fixture, collect, daemon, hc};
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{self, GetLastErrorRequest, RebootManagement, TridentErrorKind};
use trident_proto::v1preview::{self, FinalizeInstallRequest, InstallRequest, StageInstallRequest};
use trident_proto::{ADDITION_ERROR_REPORT, ADDITIONS_HEADER};

/// An install request; with `opt_in`, carrying the additions header.
fn install_request(config: &str, opt_in: bool) -> tonic::Request<InstallRequest> {
    let mut request = tonic::Request::new(InstallRequest {
        stage: Some(StageInstallRequest {
            config: Some(hc(config)),
        }),
        finalize: Some(FinalizeInstallRequest { reboot: None }),
    });
    if opt_in {
        request.metadata_mut().insert(
            ADDITIONS_HEADER,
            format!("some-future-addition, {ADDITION_ERROR_REPORT}")
                .parse()
                .unwrap(),
        );
    }
    request
}

async fn install(c: &mut Clients, config: &str, opt_in: bool) -> Collected {
    collect(c.install.install(install_request(config, opt_in)).await).await
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_client_that_opted_in_gets_the_full_error_report_in_the_stream() {
    let fx = Fixture::new();
    let v1 = fx.image("v1", 121, None);
    // Too small for the image: the install fails with a structured error.
    std::fs::File::create(&fx.disk)
        .unwrap()
        .set_len(32 << 20)
        .unwrap();
    let d = daemon().await;
    let mut c = Clients::new(&d).await;

    let default = install(&mut c, &fx.config(&v1, ""), false).await;
    assert!(!default.succeeded());
    assert!(
        default.error_reports.is_empty() && !default.order.contains(&"error-report"),
        "a default stream carries no error report: {:?}",
        default.order
    );

    let opted_in = install(&mut c, &fx.config(&v1, ""), true).await;
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
    let last = TelemetryServiceClient::new(c.channel.clone())
        .get_last_error(GetLastErrorRequest {})
        .await
        .unwrap()
        .into_inner()
        .error
        .unwrap();
    assert_eq!(&last, report);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_enum_value_is_invalid_argument_naming_the_field() {
    let d = daemon().await;
    let mut c = Clients::new(&d).await;

    let status = c
        .update
        .update_finalize(v1::FinalizeUpdateRequest {
            reboot: Some(RebootManagement { handling: 99 }),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(
        status.message().contains("reboot.handling"),
        "{}",
        status.message()
    );

    let status = c
        .rollback
        .rollback_stage(v1preview::RollbackStageRequest { kind: 99 })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().contains("kind"), "{}", status.message());

    // Nothing was started: the servicing lock is free.
    assert_eq!(
        c.state().await,
        v1preview::ServicingState::NotProvisioned,
        "no operation ran"
    );
}
