//! What a manually started daemon serves: Version, gRPC health, reflection
//! (v1 and v1alpha), and clear UNIMPLEMENTED answers for RPCs still in flight.

use tonic::Code;
use tonic_health::pb::{
    HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
};
use tonic_reflection::pb::{v1, v1alpha};
use trident_e2e::Daemon;
use trident_proto::v1preview;

const TRIDENT_SERVICES: &[&str] = &[
    "trident.v1.VersionService",
    "trident.v1.TelemetryService",
    "trident.v1.StreamingService",
    "trident.v1.UpdateService",
    "trident.v1.CommitService",
    "trident.v1.HostStatusService",
    "trident.v1preview.InstallService",
    "trident.v1preview.CommitService",
    "trident.v1preview.RebuildRaidService",
    "trident.v1preview.RollbackService",
    "trident.v1.RollbackService",
    "trident.v1preview.StatusService",
    "trident.v1preview.ValidationService",
];

#[tokio::test]
async fn version_reports_crate_version_and_git_commit() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let version = trident_e2e::version(daemon.socket_path()).await?;
    assert_eq!(version.version, env!("CARGO_PKG_VERSION"));
    assert!(!version.git_commit.is_empty(), "git commit is empty");
    Ok(())
}

#[tokio::test]
async fn health_reports_serving_for_the_server_and_every_trident_service() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let mut health = HealthClient::new(daemon.channel().await?);
    for service in std::iter::once("").chain(TRIDENT_SERVICES.iter().copied()) {
        let status = health
            .check(HealthCheckRequest {
                service: service.to_owned(),
            })
            .await?
            .into_inner()
            .status;
        assert_eq!(status, ServingStatus::Serving as i32, "service {service:?}");
    }
    let unknown = health
        .check(HealthCheckRequest {
            service: "no.such.Service".to_owned(),
        })
        .await
        .expect_err("unknown service must not be SERVING");
    assert_eq!(unknown.code(), Code::NotFound);
    Ok(())
}

#[tokio::test]
async fn reflection_v1_lists_trident_health_and_reflection_services() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let mut client =
        v1::server_reflection_client::ServerReflectionClient::new(daemon.channel().await?);
    let request = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await?
        .into_inner();
    let response = responses.message().await?.expect("one reflection response");
    let Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
        response.message_response
    else {
        panic!("unexpected reflection answer: {response:?}");
    };
    let names: Vec<String> = list
        .service
        .into_iter()
        .map(|service| service.name)
        .collect();
    for expected in TRIDENT_SERVICES.iter().chain(&[
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
    ]) {
        assert!(
            names.iter().any(|name| name == expected),
            "{expected} missing from {names:?}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn reflection_v1alpha_resolves_a_trident_file_by_symbol() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let mut client =
        v1alpha::server_reflection_client::ServerReflectionClient::new(daemon.channel().await?);
    let request = v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(
            v1alpha::server_reflection_request::MessageRequest::FileContainingSymbol(
                "trident.v1.VersionService".to_owned(),
            ),
        ),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await?
        .into_inner();
    let response = responses.message().await?.expect("one reflection response");
    let Some(v1alpha::server_reflection_response::MessageResponse::FileDescriptorResponse(files)) =
        response.message_response
    else {
        panic!("unexpected reflection answer: {response:?}");
    };
    assert!(!files.file_descriptor_proto.is_empty());
    Ok(())
}

#[tokio::test]
async fn rpcs_still_in_flight_answer_unimplemented_naming_what_is_missing() -> anyhow::Result<()> {
    let daemon = Daemon::start().await?;
    let mut status =
        v1preview::status_service_client::StatusServiceClient::new(daemon.channel().await?);
    let error = status
        .get_servicing_state(v1preview::GetServicingStateRequest {})
        .await;
    // Once the engine lands this RPC answers for real; until then the
    // answer must say what is missing rather than "unknown service".
    if let Err(error) = error {
        assert_eq!(error.code(), Code::Unimplemented, "{error:?}");
        assert!(
            error.message().contains("not built yet")
                && error.message().contains("GetServicingState"),
            "{}",
            error.message()
        );
    }
    Ok(())
}
