//! The orchestrator's side as a library: accept hosts over mutual TLS, get
//! one [`Host`] per authenticated host (its identity, its address, a tonic
//! channel to its tridentd) and one [`Event`] per connect, disconnect and
//! refusal. `trident rcp-listen` is this plus a Unix socket per host.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;
use tonic::transport::{Channel, Endpoint};

use crate::error::RcpError;
use crate::identity::{identity_of, is_valid_host_id};
use crate::raw::RawSlot;
use crate::tls::{Protocol, TlsFiles, describe_tls_error, server_config};
use crate::tunnel::{BoxedStream, Keepalive, StreamOpener, client_handshake, open_stream};

/// Upstream protocol: a host whose parked connection closed is gone when
/// its agent (which dials again within a second) has not come back in this.
const RAW_GRACE: Duration = Duration::from_secs(5);

/// Everything the listener needs.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// TCP address to listen on.
    pub listen: SocketAddr,
    /// The orchestrator's certificate, key, and the CA of both sides.
    pub tls: TlsFiles,
    /// Tunnel keepalive.
    pub keepalive: Keepalive,
    /// How long a TCP connection may take to complete the TLS handshake.
    pub handshake_timeout: Duration,
    /// The wire protocol hosts speak.
    pub protocol: Protocol,
}

impl ListenerConfig {
    /// A configuration with default keepalive and handshake timeout.
    pub fn new(listen: SocketAddr, tls: TlsFiles) -> Self {
        ListenerConfig {
            listen,
            tls,
            keepalive: Keepalive::default(),
            handshake_timeout: Duration::from_secs(10),
            protocol: Protocol::Trident,
        }
    }
}

/// What happened to a host.
#[derive(Debug, Clone)]
pub enum Event {
    /// A host authenticated; its tunnel is ready.
    Connected(Host),
    /// A host's tunnel closed (lost, closed by the host, or replaced by a
    /// newer connection with the same identity).
    Disconnected {
        host: String,
        addr: SocketAddr,
        generation: u64,
        reason: String,
    },
    /// A connection was refused before it became a tunnel.
    Refused { addr: SocketAddr, reason: String },
}

/// One authenticated host. Cheap to clone; every clone uses the same tunnel.
#[derive(Debug, Clone)]
pub struct Host {
    id: Arc<str>,
    addr: SocketAddr,
    generation: u64,
    opener: Opener,
    closed: watch::Receiver<bool>,
}

/// How a host's streams are opened.
#[derive(Debug, Clone)]
enum Opener {
    /// Ours: an HTTP/2 CONNECT stream on the host's one tunnel.
    Http2(StreamOpener),
    /// Upstream's: the connection the host's agent parked.
    Raw(Arc<RawSlot>),
}

impl Host {
    /// The host's identity (first DNS SAN of its certificate, else its CN).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The address the host dialled from.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Tells this connection of the host from an earlier or later one with
    /// the same identity (strictly increasing per listener).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Resolves when the tunnel closes.
    pub async fn closed(&self) {
        let mut closed = self.closed.clone();
        // An Err means the tunnel's task is gone, which is closed too.
        let _ = closed.wait_for(|closed| *closed).await;
    }

    /// A new byte stream to the host's tridentd socket (upstream
    /// protocol: the host's next connection, one at a time).
    pub async fn open_stream(&self) -> Result<BoxedStream, RcpError> {
        match &self.opener {
            Opener::Http2(opener) => open_stream(opener).await,
            Opener::Raw(slot) => slot.claim().await,
        }
    }

    /// A gRPC channel to the host's tridentd; each (re)connection of the
    /// channel is a new stream through the tunnel.
    pub async fn channel(&self) -> Result<Channel, RcpError> {
        let host = self.clone();
        let connector = tower::service_fn(move |_: http::Uri| {
            let host = host.clone();
            async move { host.open_stream().await.map(TokioIo::new) }
        });
        Ok(Endpoint::from_static("http://tridentd")
            .connect_with_connector(connector)
            .await?)
    }
}

/// The listening side. Events arrive in order through [`Listener::next_event`];
/// dropping the listener closes every tunnel.
#[derive(Debug)]
pub struct Listener {
    local_addr: SocketAddr,
    events: mpsc::UnboundedReceiver<Event>,
    // Dropped with the listener: every task watching it ends.
    _shutdown: watch::Sender<bool>,
}

/// Live tunnels by identity, and the event channel. Events are sent while
/// the lock is held, so a replaced host's `Disconnected` always precedes
/// its successor's `Connected`. The channel is unbounded because events are
/// few and small (one per connect/disconnect) and the orchestrator must see
/// every one: dropping a "connected" would lose a host.
#[derive(Debug)]
struct Registry {
    next_generation: u64,
    hosts: HashMap<String, Live>,
    events: mpsc::UnboundedSender<Event>,
}

#[derive(Debug)]
struct Live {
    generation: u64,
    addr: SocketAddr,
    replace: watch::Sender<bool>,
    /// Upstream protocol: the host's parked connection, and its closed
    /// signal (held here: no task lives as long as the host).
    raw: Option<(Arc<RawSlot>, watch::Sender<bool>)>,
}

type Shared = Arc<Mutex<Registry>>;

impl Listener {
    /// Loads the TLS files (refusing a key readable by others), binds the
    /// TCP port and starts accepting hosts.
    pub async fn bind(config: ListenerConfig) -> Result<Listener, RcpError> {
        let acceptor = TlsAcceptor::from(server_config(&config.tls, config.protocol)?);
        let tcp = TcpListener::bind(config.listen)
            .await
            .map_err(|e| RcpError::io(format!("cannot listen on {}", config.listen), e))?;
        let local_addr = tcp
            .local_addr()
            .map_err(|e| RcpError::io("listening address", e))?;
        let (events_tx, events) = mpsc::unbounded_channel();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let registry = Arc::new(Mutex::new(Registry {
            next_generation: 1,
            hosts: HashMap::new(),
            events: events_tx,
        }));
        tokio::spawn(accept_loop(tcp, acceptor, config, registry, shutdown_rx));
        Ok(Listener {
            local_addr,
            events,
            _shutdown: shutdown,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The next event; `None` only if the accept loop died.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }
}

async fn accept_loop(
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    config: ListenerConfig,
    registry: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = tcp.accept() => accepted,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, addr)) => {
                tokio::spawn(serve_connection(
                    stream,
                    addr,
                    acceptor.clone(),
                    config.clone(),
                    Arc::clone(&registry),
                    shutdown.clone(),
                ));
            }
            Err(err) => {
                // EMFILE and the like: wait rather than spin.
                tracing::warn!(error = %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

fn send(registry: &Registry, event: Event) {
    // The receiver is gone only when the listener was dropped.
    let _ = registry.events.send(event);
}

fn refuse(registry: &Shared, addr: SocketAddr, reason: String) {
    tracing::warn!(%addr, %reason, "host refused");
    if let Ok(registry) = registry.lock() {
        send(&registry, Event::Refused { addr, reason });
    }
}

/// Handshake, authenticate, register, then drive the tunnel until it ends.
async fn serve_connection(
    stream: TcpStream,
    addr: SocketAddr,
    acceptor: TlsAcceptor,
    config: ListenerConfig,
    registry: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let tls = match tokio::time::timeout(config.handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            return refuse(
                &registry,
                addr,
                format!("TLS handshake failed: {}", describe_tls_error(&err)),
            );
        }
        Err(_) => return refuse(&registry, addr, "TLS handshake timed out".into()),
    };
    let identity = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .ok_or_else(|| RcpError::Identity("no client certificate".into()))
        .and_then(|cert| identity_of(cert));
    let id = match identity {
        Ok(id) if is_valid_host_id(&id) => id,
        Ok(id) => {
            return refuse(
                &registry,
                addr,
                format!("host identity {id:?} is not usable as a socket name"),
            );
        }
        Err(err) => return refuse(&registry, addr, err.to_string()),
    };
    if config.protocol == Protocol::Upstream {
        return serve_raw(tls, &id, addr, &registry, shutdown).await;
    }
    let (opener, connection) = match client_handshake(tls, config.keepalive).await {
        Ok(pair) => pair,
        Err(err) => return refuse(&registry, addr, format!("HTTP/2 handshake failed: {err}")),
    };
    let (closed_tx, closed_rx) = watch::channel(false);
    let (replace_tx, mut replace_rx) = watch::channel(false);
    let Some(generation) = register(&registry, &id, addr, opener, closed_rx, replace_tx) else {
        return;
    };
    let reason = tokio::select! {
        result = connection => match result {
            Ok(()) => "closed by the host".to_owned(),
            Err(err) => format!("tunnel lost: {err}"),
        },
        _ = replace_rx.changed() => "replaced by a newer connection of the same host".to_owned(),
        _ = shutdown.changed() => "listener shut down".to_owned(),
    };
    let _ = closed_tx.send(true);
    unregister(&registry, &id, addr, generation, reason);
}

/// Upstream protocol: parks the connection in its host's slot (the first
/// one since the host was last seen registers it: `Connected`); a host
/// whose parked connection closed and whose agent did not dial again
/// within [`RAW_GRACE`] is `Disconnected`.
async fn serve_raw<S>(
    stream: S,
    id: &str,
    addr: SocketAddr,
    registry: &Shared,
    mut shutdown: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let Some((slot, generation)) = register_raw(registry, id, addr) else {
        return;
    };
    let arrivals = slot.arrivals();
    let closed = tokio::select! {
        closed = slot.park(stream) => closed,
        _ = shutdown.changed() => return,
    };
    if !closed {
        return;
    }
    let registry = Arc::clone(registry);
    let id = id.to_owned();
    tokio::spawn(async move {
        tokio::time::sleep(RAW_GRACE).await;
        let Ok(mut shared) = registry.lock() else {
            return;
        };
        let same = shared.hosts.get(&id).is_some_and(|live| {
            live.generation == generation
                && live
                    .raw
                    .as_ref()
                    .is_some_and(|(slot, _)| slot.arrivals() == arrivals + 1)
        });
        if !same {
            return;
        }
        if let Some(live) = shared.hosts.remove(&id) {
            if let Some((_, closed)) = &live.raw {
                let _ = closed.send(true);
            }
            let reason = format!(
                "the host's agent closed its connection and did not dial again within {}s",
                RAW_GRACE.as_secs()
            );
            tracing::info!(host = %id, addr = %live.addr, %reason, "host disconnected");
            send(
                &shared,
                Event::Disconnected {
                    host: id.clone(),
                    addr: live.addr,
                    generation,
                    reason,
                },
            );
        }
    });
}

/// The slot of a host seen on the upstream protocol, registering the host
/// (`Connected`) when it is new; with its generation.
fn register_raw(registry: &Shared, id: &str, addr: SocketAddr) -> Option<(Arc<RawSlot>, u64)> {
    let mut shared = registry.lock().ok()?;
    if let Some(live) = shared.hosts.get(id)
        && let Some((slot, _)) = &live.raw
    {
        return Some((Arc::clone(slot), live.generation));
    }
    let generation = shared.next_generation;
    shared.next_generation += 1;
    let slot = Arc::new(RawSlot::default());
    let (closed_tx, closed_rx) = watch::channel(false);
    let (replace, _) = watch::channel(false);
    shared.hosts.insert(
        id.to_owned(),
        Live {
            generation,
            addr,
            replace,
            raw: Some((Arc::clone(&slot), closed_tx)),
        },
    );
    tracing::info!(host = id, %addr, generation, "host connected (upstream protocol)");
    let host = Host {
        id: Arc::from(id),
        addr,
        generation,
        opener: Opener::Raw(Arc::clone(&slot)),
        closed: closed_rx,
    };
    send(&shared, Event::Connected(host));
    Some((slot, generation))
}

/// Records a new tunnel, replacing (and reporting) an older one of the same
/// host; returns its generation.
fn register(
    registry: &Shared,
    id: &str,
    addr: SocketAddr,
    opener: StreamOpener,
    closed: watch::Receiver<bool>,
    replace: watch::Sender<bool>,
) -> Option<u64> {
    let mut registry = registry.lock().ok()?;
    let generation = registry.next_generation;
    registry.next_generation += 1;
    let live = Live {
        generation,
        addr,
        replace,
        raw: None,
    };
    if let Some(old) = registry.hosts.insert(id.to_owned(), live) {
        let _ = old.replace.send(true);
        let reason = format!("replaced by a newer connection from {addr}");
        tracing::info!(host = id, addr = %old.addr, %reason, "host disconnected");
        send(
            &registry,
            Event::Disconnected {
                host: id.to_owned(),
                addr: old.addr,
                generation: old.generation,
                reason,
            },
        );
    }
    tracing::info!(host = id, %addr, generation, "host connected");
    let host = Host {
        id: Arc::from(id),
        addr,
        generation,
        opener: Opener::Http2(opener),
        closed,
    };
    send(&registry, Event::Connected(host));
    Some(generation)
}

/// Forgets a closed tunnel and reports it, unless a newer connection of the
/// same host already replaced (and reported) it.
fn unregister(registry: &Shared, id: &str, addr: SocketAddr, generation: u64, reason: String) {
    let Ok(mut registry) = registry.lock() else {
        return;
    };
    if registry.hosts.get(id).map(|live| live.generation) != Some(generation) {
        return;
    }
    registry.hosts.remove(id);
    tracing::info!(host = id, %addr, %reason, "host disconnected");
    send(
        &registry,
        Event::Disconnected {
            host: id.to_owned(),
            addr,
            generation,
            reason,
        },
    );
}
