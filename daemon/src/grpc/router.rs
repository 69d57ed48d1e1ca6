//! The one place where every gRPC service of tridentd is registered.
//!
//! To add or replace a service: construct it in `add_services` from the
//! [`GrpcParts`] (the bus, the servicing engine, the `--disk` candidates)
//! and pass it to `registry.add(...)`. Health status and reflection pick it
//! up by name.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use tonic::{
    body::Body,
    server::NamedService,
    service::{Routes, RoutesBuilder},
};
use tonic_health::{ServingStatus, server::HealthReporter};
use trident_engine::machinery::Engine;
use trident_proto::{v1, v1preview};
use trident_telemetry::Bus;

use super::last_error::HostStatusLastError;
use super::servicing::ServicingApi;
use super::stream_disk::StreamDiskService;
use super::version::Version;

/// What the services are built on, from the composition root.
#[derive(Debug, Clone)]
pub struct GrpcParts {
    /// The telemetry bus the daemon's layer writes to (served as is).
    pub bus: Bus,
    /// The servicing engine every servicing service shares.
    pub engine: Arc<Engine>,
    /// Disks StreamDisk may write (`--disk`).
    pub disks: Vec<PathBuf>,
    /// The host's boot id, told by Version (empty when unknown).
    pub boot_id: String,
    /// Upstream Trident's full log (`--upstream-log`), which
    /// `TelemetryService.ReadUpstreamLog` reads.
    pub upstream_log: PathBuf,
}

/// Collects services and their names.
#[derive(Debug, Default)]
pub struct ServiceRegistry {
    routes: RoutesBuilder,
    names: Vec<&'static str>,
}

impl ServiceRegistry {
    /// Registers a tonic service.
    pub fn add<S>(&mut self, service: S) -> &mut Self
    where
        S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Future: Send + 'static,
    {
        self.names.push(S::NAME);
        self.routes.add_service(service);
        self
    }

    /// Fully-qualified names of the registered services.
    pub fn names(&self) -> &[&'static str] {
        &self.names
    }
}

/// Adds every Trident service. Other parts of the daemon register here.
fn add_services(registry: &mut ServiceRegistry, parts: &GrpcParts) {
    registry.add(v1::version_service_server::VersionServiceServer::new(
        Version::new(parts.boot_id.clone()),
    ));
    registry.add(
        parts
            .bus
            .service()
            .with_last_error_fallback(Arc::new(HostStatusLastError::new(Arc::clone(
                &parts.engine,
            ))))
            .with_upstream_log(&parts.upstream_log),
    );

    let servicing = ServicingApi::new(Arc::clone(&parts.engine));
    registry.add(v1::streaming_service_server::StreamingServiceServer::new(
        StreamDiskService::new(servicing.clone(), &parts.disks),
    ));
    registry.add(v1::update_service_server::UpdateServiceServer::new(
        servicing.clone(),
    ));
    registry.add(v1::commit_service_server::CommitServiceServer::new(
        servicing.clone(),
    ));
    registry.add(v1preview::install_service_server::InstallServiceServer::new(servicing.clone()));
    registry.add(v1preview::commit_service_server::CommitServiceServer::new(
        servicing.clone(),
    ));
    registry.add(
        v1preview::rebuild_raid_service_server::RebuildRaidServiceServer::new(servicing.clone()),
    );
    registry.add(v1preview::rollback_service_server::RollbackServiceServer::new(servicing.clone()));
    registry.add(v1::rollback_service_server::RollbackServiceServer::new(
        servicing.clone(),
    ));
    registry.add(v1preview::status_service_server::StatusServiceServer::new(
        servicing.clone(),
    ));
    registry.add(
        v1::host_status_service_server::HostStatusServiceServer::new(
            super::host_status::HostStatusApi::new(Arc::clone(&parts.engine)),
        ),
    );
    registry.add(v1preview::validation_service_server::ValidationServiceServer::new(servicing));
}

/// Builds the routes: Trident services, health (SERVING for "" and each
/// service) and reflection v1 + v1alpha. Returns the health reporter so
/// shutdown can flip everything to NOT_SERVING.
pub async fn build(
    parts: &GrpcParts,
) -> Result<(Routes, HealthReporter), tonic_reflection::server::Error> {
    let mut registry = ServiceRegistry::default();
    add_services(&mut registry, parts);

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_service_status("", ServingStatus::Serving).await;
    for name in registry.names() {
        health
            .set_service_status(*name, ServingStatus::Serving)
            .await;
    }

    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(trident_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(trident_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    registry.add(health_service);
    registry.add(reflection_v1);
    registry.add(reflection_v1alpha);
    tracing::debug!(services = ?registry.names(), "services registered");
    Ok((registry.routes.routes(), health))
}
