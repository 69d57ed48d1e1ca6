//! The one place where every gRPC service of tridentd is registered.
//!
//! To add or replace a service: construct it in [`add_services`] from the
//! [`ServerContext`] (config, activity handle, shutdown hooks) and pass it
//! to `registry.add(...)`. Health status and reflection pick it up by name.

use std::convert::Infallible;

use tonic::{
    body::Body,
    server::NamedService,
    service::{Routes, RoutesBuilder},
};
use tonic_health::{ServingStatus, server::HealthReporter};
use trident_proto::{v1, v1preview};

use super::{ServerContext, ServerError, version::Version};

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
fn add_services(registry: &mut ServiceRegistry, ctx: &ServerContext) {
    registry.add(v1::version_service_server::VersionServiceServer::new(
        Version,
    ));

    // --- Telemetry: the bus installed by observability::init (or an
    // in-memory one when the daemon runs without it, e.g. in-process tests).
    let bus = trident_telemetry::Bus::current()
        .unwrap_or_else(|| trident_telemetry::Bus::in_memory(Default::default()));
    let flushed = bus.clone();
    ctx.shutdown_hooks
        .register("telemetry-journal", move || async move { flushed.flush() });
    let (closing, trigger) = (bus.clone(), ctx.shutdown.clone());
    tokio::spawn(async move {
        trigger.triggered().await;
        closing.end_remote_streams();
    });
    registry.add(bus.service());

    // --- Servicing (engine helper). StreamDisk: build it on `servicing.engine()`.
    let servicing = crate::servicing::api(ctx);
    registry.add(v1::streaming_service_server::StreamingServiceServer::new(
        crate::servicing::stream_disk::StreamDiskService::new(&servicing, &ctx.config.disks),
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
    registry.add(v1preview::status_service_server::StatusServiceServer::new(
        servicing.clone(),
    ));
    registry.add(
        v1::host_status_service_server::HostStatusServiceServer::new(
            crate::servicing::host_status::HostStatusApi::new(servicing.engine().clone()),
        ),
    );
    registry.add(v1preview::validation_service_server::ValidationServiceServer::new(servicing));
}

/// Builds the routes: Trident services, health (SERVING for "" and each
/// service) and reflection v1 + v1alpha. Returns the health reporter so
/// shutdown can flip everything to NOT_SERVING.
pub async fn build(ctx: &ServerContext) -> Result<(Routes, HealthReporter), ServerError> {
    let mut registry = ServiceRegistry::default();
    add_services(&mut registry, ctx);

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
        .build_v1()
        .map_err(ServerError::Reflection)?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(trident_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(ServerError::Reflection)?;

    registry.add(health_service);
    registry.add(reflection_v1);
    registry.add(reflection_v1alpha);
    tracing::debug!(services = ?registry.names(), "services registered");
    Ok((registry.routes.routes(), health))
}
