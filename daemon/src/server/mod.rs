//! The transport of tridentd: where it listens ([`listener`]), who may call
//! it ([`security`]), when it exits ([`idle`], [`shutdown`]). What it serves
//! (the gRPC routes) is built by `crate::grpc` and handed in by `crate::app`.

pub mod decode_status;
pub mod idle;
pub mod listener;
pub mod peer;
pub mod refusal_log;
pub mod security;
pub mod shutdown;

use std::{path::PathBuf, sync::Arc, time::Duration};

use sd_notify::NotifyState;
use tonic::service::Routes;
use tonic::transport::Server;

use crate::config::Config;
use decode_status::DecodeStatusLayer;
use idle::{Activity, ActivityLayer};
use listener::{Listening, StartMode};
use security::PeerAuthLayer;
use shutdown::{ShutdownHooks, ShutdownReason, ShutdownTrigger};

/// The future of the transport's own tower services ([`idle`], [`security`],
/// [`decode_status`]): each wraps the gRPC routes, answers with their
/// response type and boxes its future, since an async block cannot be named.
pub type ResponseFuture<E> =
    futures::future::BoxFuture<'static, Result<http::Response<tonic::body::Body>, E>>;

/// Why the daemon could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Not started as root.
    #[error("tridentd must run as root (effective uid is {euid})")]
    NotRoot {
        /// The effective uid it ran with.
        euid: u32,
    },
    /// `--socket-group` names no group.
    #[error("unknown group {0:?} (--socket-group)")]
    UnknownGroup(String),
    /// Group database lookup failed.
    #[error("cannot look up group {name:?}: {source}")]
    GroupLookup {
        /// The group name.
        name: String,
        /// The error.
        source: nix::Error,
    },
    /// Socket activation handed over something unusable.
    #[error("socket activation: {0}")]
    Activation(String),
    /// Another instance answers on the socket.
    #[error("another tridentd is serving {}{}", path.display(), pid.map(|pid| format!(" (pid {pid})")).unwrap_or_default())]
    AlreadyServed {
        /// The socket path.
        path: PathBuf,
        /// The serving process, from SO_PEERCRED.
        pid: Option<i32>,
    },
    /// The socket path exists and is not a socket.
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
    /// Filesystem or socket operation on the socket path failed.
    #[error("socket {}: {what}: {source}", path.display())]
    Socket {
        /// The socket path.
        path: PathBuf,
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// Runtime or server I/O failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The gRPC server failed.
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// What the transport needs besides the routes: settings, the activity
/// count, shutdown hooks and the shutdown trigger (shared with the services
/// `crate::app` builds).
#[derive(Debug, Clone)]
pub struct ServerContext {
    /// The daemon's configuration.
    pub config: Arc<Config>,
    /// Connections, requests and background operations that keep the
    /// daemon alive.
    pub activity: Activity,
    /// Work to run on shutdown after in-flight requests end (e.g. flushes).
    pub shutdown_hooks: ShutdownHooks,
    /// Run when the grace period is over with work still in flight: they
    /// ask it to stop (the running operation is interrupted and recorded
    /// so), then the transport waits [`INTERRUPT_WAIT`] more for it.
    pub grace_over_hooks: ShutdownHooks,
    /// Fires when the daemon starts shutting down.
    pub shutdown: ShutdownTrigger,
}

impl ServerContext {
    /// A context for `config` with nothing active and no hooks.
    pub fn new(config: Config) -> Self {
        ServerContext {
            config: Arc::new(config),
            activity: Activity::new(),
            shutdown_hooks: ShutdownHooks::default(),
            grace_over_hooks: ShutdownHooks::default(),
            shutdown: ShutdownTrigger::new(),
        }
    }
}

/// First step of start-up, run by `main` before logging or any thread
/// exists: refuses to run unless root (so a wrong start touches nothing),
/// then takes the socket-activated sockets (unsetting LISTEN_*) or creates
/// the socket.
pub fn prepare(config: &Config) -> Result<Listening, ServerError> {
    security::require_root()?;
    listener::open(config)
}

/// Serves `routes` on `listening` (from [`prepare`]) until shutdown:
/// SIGTERM/SIGINT or the inactivity timeout.
pub async fn serve(
    ctx: ServerContext,
    listening: Listening,
    routes: Routes,
) -> Result<ShutdownReason, ServerError> {
    let Listening {
        listeners,
        mode,
        policy,
        notes,
    } = listening;
    for note in notes {
        tracing::info!("{note}");
    }
    let listeners = register(listeners)?;
    shutdown::spawn_signal_listener(ctx.shutdown.clone()).map_err(|source| ServerError::Io {
        what: "install signal handlers",
        source,
    })?;
    spawn_idle_exit(&ctx);

    let incoming = listener::incoming(listeners, Arc::new(policy.clone()), ctx.activity.clone());
    let server = Server::builder()
        .layer(ActivityLayer::new(ctx.activity.clone()))
        .layer(PeerAuthLayer::new(ctx.config.refused_peer_log_interval))
        .layer(DecodeStatusLayer)
        .add_routes(routes);
    let trigger = ctx.shutdown.clone();
    let serving = server.serve_with_incoming_shutdown(incoming, async move {
        trigger.triggered().await;
    });
    spawn_shutdown_announcer(&ctx);
    let described = Listening {
        listeners: Vec::new(),
        mode,
        policy,
        notes: Vec::new(),
    };
    announce_ready(&ctx, &described);

    let served = wait_for_shutdown(&ctx, serving).await;
    let reason = ctx
        .shutdown
        .reason()
        .unwrap_or(ShutdownReason::Signal("server stopped"));
    ctx.shutdown_hooks.run().await;
    if let StartMode::Manual { files } = described.mode {
        drop(files);
    }
    served?;
    tracing::info!(%reason, "tridentd stopped");
    Ok(reason)
}

/// Hands the listening sockets to the async runtime.
fn register(
    listeners: Vec<std::os::unix::net::UnixListener>,
) -> Result<Vec<tokio::net::UnixListener>, ServerError> {
    listeners
        .into_iter()
        .map(tokio::net::UnixListener::from_std)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| ServerError::Io {
            what: "register listener",
            source,
        })
}

/// Triggers shutdown after the inactivity timeout with nothing active.
fn spawn_idle_exit(ctx: &ServerContext) {
    if let Some(timeout) = ctx.config.idle_timeout() {
        let (activity, trigger) = (ctx.activity.clone(), ctx.shutdown.clone());
        tokio::spawn(async move {
            activity.idle_for(timeout).await;
            trigger.trigger(ShutdownReason::Idle(timeout));
        });
    }
}

/// Announces shutdown the moment it starts, whichever future sees it first.
fn spawn_shutdown_announcer(ctx: &ServerContext) {
    let announcer = ctx.shutdown.clone();
    tokio::spawn(async move {
        let reason = announcer.triggered().await;
        notify(&[NotifyState::Stopping]);
        tracing::info!(%reason, "shutting down: no longer accepting connections");
    });
}

/// The "ready" log line and `READY=1` to systemd.
fn announce_ready(ctx: &ServerContext, described: &Listening) {
    tracing::info!(
        version = crate::VERSION,
        commit = crate::GIT_COMMIT,
        pid = std::process::id(),
        socket = %described.describe(),
        allowed = %described.policy.requirement(),
        inactivity_timeout = %humantime::format_duration(ctx.config.inactivity_timeout),
        "tridentd ready"
    );
    notify(&[NotifyState::Ready]);
}

/// How long, once no work is left, connections get to flush and close
/// before the daemon exits anyway. A response counts as work until its body
/// yields its last frame, but hyper writes that frame (a servicing stream's
/// `Completed`, the trailers) to the socket afterwards: exiting at once could
/// cut it. Writing takes milliseconds; a graceful HTTP/2 close also waits for
/// the peer to answer a PING, so the bound covers a peer that stopped reading.
const FLUSH_AFTER_WORK: Duration = Duration::from_secs(1);

/// How long, once the grace period is over and the running work was asked
/// to stop, the daemon waits for it to record itself as interrupted.
pub const INTERRUPT_WAIT: Duration = Duration::from_secs(5);

/// Serves until shutdown, then stops accepting and waits (bounded by the
/// grace period, counted from the trigger) for in-flight requests and
/// background operations, then (bounded by [`FLUSH_AFTER_WORK`]) for the
/// connections to write what is left and close. A connection still open
/// after that is closed when the runtime stops.
async fn wait_for_shutdown(
    ctx: &ServerContext,
    serving: impl std::future::Future<Output = Result<(), tonic::transport::Error>>,
) -> Result<(), tonic::transport::Error> {
    let grace = ctx.config.shutdown_grace;
    let trigger = ctx.shutdown.clone();
    let activity = ctx.activity.clone();
    let work_done = async {
        trigger.triggered().await;
        tokio::time::timeout(grace, activity.wait_no_work())
            .await
            .is_ok()
    };
    tokio::pin!(serving, work_done);
    let (served, finished) = tokio::select! {
        // Every connection closed by itself; background work may remain.
        served = &mut serving => (served, work_done.await),
        finished = &mut work_done => {
            let served = tokio::time::timeout(FLUSH_AFTER_WORK, &mut serving)
                .await
                .unwrap_or(Ok(()));
            (served, finished)
        }
    };
    if !finished {
        tracing::warn!(
            grace = %humantime::format_duration(grace),
            working = activity.working(),
            "grace period over with requests or operations still in flight: interrupting them"
        );
        // The running operation stops at its next write and records itself
        // as interrupted (datastore, journal, last error) before we exit.
        ctx.grace_over_hooks.run().await;
        if tokio::time::timeout(INTERRUPT_WAIT, activity.wait_no_work())
            .await
            .is_err()
        {
            tracing::warn!(
                working = activity.working(),
                "exiting with work still in flight: the next start marks its operation interrupted"
            );
        }
    }
    served
}

/// Tells systemd about our state when it asked (NOTIFY_SOCKET set).
fn notify(state: &[NotifyState<'_>]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(error) = sd_notify::notify(state) {
        tracing::warn!(%error, "sd_notify failed");
    }
}
