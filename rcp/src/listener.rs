//! The orchestrator's side as a library: accept hosts over mutual TLS, get
//! one [`Host`] per authenticated host (its identity, its address, a tonic
//! channel to its tridentd) and one [`Event`] per connect, disconnect and
//! refusal. `trident rcp-listen` is this plus a Unix socket per host.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::upgrade::Upgraded;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_rustls::TlsAcceptor;
use tonic::transport::{Channel, Endpoint};

use crate::error::RcpError;
use crate::identity::{identity_of, is_valid_host_id};
use crate::tls::{TlsFiles, describe_tls_error, server_config};
use crate::tunnel::{Keepalive, StreamOpener, client_handshake, open_stream};

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
}

impl ListenerConfig {
    /// A configuration with default keepalive and handshake timeout.
    pub fn new(listen: SocketAddr, tls: TlsFiles) -> Self {
        ListenerConfig {
            listen,
            tls,
            keepalive: Keepalive::default(),
            handshake_timeout: Duration::from_secs(10),
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
    opener: StreamOpener,
    closed: watch::Receiver<bool>,
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

    /// A new byte stream to the host's tridentd socket.
    pub async fn open_stream(&self) -> Result<Upgraded, RcpError> {
        open_stream(&self.opener).await
    }

    /// A gRPC channel to the host's tridentd; each (re)connection of the
    /// channel is a new stream through the tunnel.
    pub async fn channel(&self) -> Result<Channel, RcpError> {
        let host = self.clone();
        let connector = tower::service_fn(move |_: http::Uri| {
            let host = host.clone();
            async move { host.open_stream().await }
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
}

type Shared = Arc<Mutex<Registry>>;

impl Listener {
    /// Loads the TLS files (refusing a key readable by others), binds the
    /// TCP port and starts accepting hosts.
    pub async fn bind(config: ListenerConfig) -> Result<Listener, RcpError> {
        let acceptor = TlsAcceptor::from(server_config(&config.tls)?);
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
        opener,
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
