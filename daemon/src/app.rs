//! The composition root: builds the engine and the gRPC services on the
//! bus that logging set-up returned, and hands them to the transport.
//! Nothing else in the daemon wires parts together.

use std::sync::Arc;

use trident_engine::keep_alive::{KeepAlive, KeepAliveGuard};
use trident_engine::machinery::Engine;
use trident_host::boot_id::read_boot_id;
use trident_telemetry::Bus;

use crate::config::Config;
use crate::grpc::router::{self, GrpcParts};
use crate::legacy_bridge::LegacyBridge;
use crate::server::idle::Activity;
use crate::server::listener::Listening;
use crate::server::shutdown::{ShutdownHooks, ShutdownReason, ShutdownTrigger};
use crate::server::{self, ServerContext, ServerError};

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The transport failed (socket, runtime, gRPC server).
    #[error(transparent)]
    Server(#[from] ServerError),
    /// Reflection service set-up failed.
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// Servicing operations keep the daemon from exiting as idle by holding
/// the transport's activity count.
impl KeepAlive for Activity {
    fn hold(&self, what: &'static str) -> KeepAliveGuard {
        KeepAliveGuard::new(self.guard(what))
    }
}

/// Runs the daemon on `listening` (from [`server::prepare`]) with `bus`
/// (from [`crate::observability::init`]) until shutdown. `before_serving`
/// runs once the stored Host Status's secrets are known to the redaction
/// (the OTLP export's replay of undelivered records).
pub fn run(
    config: Config,
    listening: Listening,
    bus: Bus,
    before_serving: impl FnOnce() + Send,
) -> Result<ShutdownReason, AppError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("tridentd")
        .build()
        .map_err(|source| ServerError::Io {
            what: "start async runtime",
            source,
        })?;
    let served = runtime.block_on(serve(
        ServerContext::new(config),
        listening,
        bus,
        before_serving,
    ));
    // Blocking work still running (a write that did not stop when
    // interrupted) must not keep the process alive past its shutdown: a
    // dropped runtime would wait for it. The operation is marked
    // interrupted at the next start.
    runtime.shutdown_timeout(RUNTIME_STOP);
    served
}

/// How long the runtime waits for its threads once serving is over.
const RUNTIME_STOP: std::time::Duration = std::time::Duration::from_secs(1);

async fn serve(
    ctx: ServerContext,
    listening: Listening,
    bus: Bus,
    before_serving: impl FnOnce() + Send,
) -> Result<ShutdownReason, AppError> {
    wire_bus_shutdown(&bus, &ctx.shutdown_hooks, &ctx.shutdown);
    tokio::spawn(crate::rcp_agent_state::follow(
        ctx.config.rcp_state_file.clone(),
    ));
    let engine = Engine::new(
        ctx.config.engine_settings(),
        bus.clone(),
        Arc::new(ctx.activity.clone()),
        Arc::new(LegacyBridge::new(bus.clone())),
    );
    engine.remember_stored_secrets();
    // A datastore upstream Trident wrote: fields of a newer upstream kept
    // unread, the host taken over, where its partitions are.
    engine.report_upstream_datastore();
    let interrupt = engine.interrupt.clone();
    ctx.grace_over_hooks.register(
        "interrupt-operation",
        move || async move { interrupt.request() },
    );
    before_serving();
    let parts = GrpcParts {
        bus,
        engine: Arc::new(engine),
        disks: ctx.config.disks.clone(),
        boot_id: read_boot_id(&ctx.config.boot_id_file).unwrap_or_default(),
        upstream_log: ctx.config.upstream_log.clone(),
    };
    let (routes, health) = router::build(&parts).await?;
    // Registered last, so it runs first once the server has stopped.
    ctx.shutdown_hooks.register("health", move || async move {
        health
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
    });
    Ok(server::serve(ctx, listening, routes).await?)
}

/// On shutdown, Watch followers end once caught up (so they do not hold
/// the exit) and the journal is flushed after in-flight work.
fn wire_bus_shutdown(bus: &Bus, hooks: &ShutdownHooks, shutdown: &ShutdownTrigger) {
    let flushed = bus.clone();
    hooks.register("telemetry-journal", move || async move { flushed.flush() });
    let (closing, trigger) = (bus.clone(), shutdown.clone());
    tokio::spawn(async move {
        trigger.triggered().await;
        closing.end_remote_streams();
    });
}
