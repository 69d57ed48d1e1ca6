//! The orchestrator's side as a library: accept hosts over mutual TLS, get
//! one [`Host`] per authenticated host (its identity, its address, a tonic
//! channel to its tridentd) and one [`Event`] per connect, disconnect,
//! refusal and duplicate identity. `trident rcp-listen` is this plus a Unix
//! socket per host. Two connections with one identity: see
//! [`crate::duplicates`].

mod registry;
mod upstream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tonic::transport::{Channel, Endpoint};

use crate::duplicates::DuplicatePolicy;
use crate::error::RcpError;
use crate::identity::{identity_of, is_valid_host_id};
use crate::raw::{Prefixed, RawSlot};
use crate::sever::{Severable, WeakToken, liveness};
use crate::tls::{Protocol, TlsFiles, describe_tls_error, server_config};
use crate::tunnel::{BoxedStream, Keepalive, StreamOpener, client_handshake, open_stream};
use registry::{Admission, Conn, Registry, Shared};

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
    /// When a second connection of one identity is a duplicate.
    pub duplicates: DuplicatePolicy,
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
            duplicates: DuplicatePolicy::default(),
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
    /// Two connections with one identity kept replacing each other: more
    /// than the policy's limit within its window. Sent once; the listener
    /// keeps the connection from `addr` and holds newcomers (the one from
    /// `other_addr` first) unused for `backoff`.
    Duplicate {
        host: String,
        addr: SocketAddr,
        other_addr: SocketAddr,
        replacements: u32,
        backoff: Duration,
    },
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
    /// Ours: an HTTP/2 CONNECT stream on the host's one tunnel; each
    /// stream holds the tunnel's liveness (see [`crate::sever`]).
    Http2 {
        opener: StreamOpener,
        tunnel: WeakToken,
    },
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
            Opener::Http2 { opener, tunnel } => {
                let token = tunnel
                    .upgrade()
                    .ok_or_else(|| RcpError::TunnelClosed(self.id.to_string()))?;
                let inner = open_stream(opener).await?;
                Ok(Box::new(Prefixed::tracked(inner, token)))
            }
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
        let registry = Registry::shared(events_tx, config.duplicates);
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

/// Handshake, authenticate, admit (see [`crate::duplicates`]), register,
/// then drive the tunnel until it ends.
async fn serve_connection(
    stream: TcpStream,
    addr: SocketAddr,
    acceptor: TlsAcceptor,
    config: ListenerConfig,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let severable = match Severable::new(&stream) {
        Ok(severable) => severable,
        Err(err) => {
            return registry::refuse(&shared, addr, format!("cannot keep the connection: {err}"));
        }
    };
    let tls = match tokio::time::timeout(config.handshake_timeout, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            return registry::refuse(
                &shared,
                addr,
                format!("TLS handshake failed: {}", describe_tls_error(&err)),
            );
        }
        Err(_) => return registry::refuse(&shared, addr, "TLS handshake timed out".into()),
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
            return registry::refuse(
                &shared,
                addr,
                format!("host identity {id:?} is not usable as a socket name"),
            );
        }
        Err(err) => return registry::refuse(&shared, addr, err.to_string()),
    };
    if config.protocol == Protocol::Upstream {
        return upstream::serve_raw(tls, severable, &id, addr, &shared, shutdown).await;
    }
    let Some(turn) = registry::turn(&shared, &id).await else {
        return;
    };
    let admission = registry::admit(&shared, &id, addr);
    if let Admission::Hold(until) = admission {
        drop(turn);
        return hold(tls, &id, addr, until, shutdown).await;
    }
    // Bounded: the identity's turn is held meanwhile.
    let handshake = client_handshake(tls, config.keepalive);
    let (opener, connection) = match tokio::time::timeout(config.handshake_timeout, handshake).await
    {
        Ok(Ok(pair)) => pair,
        Ok(Err(err)) => {
            return registry::refuse(&shared, addr, format!("HTTP/2 handshake failed: {err}"));
        }
        Err(_) => return registry::refuse(&shared, addr, "HTTP/2 handshake timed out".into()),
    };
    match admission {
        Admission::Replace => {
            let reason = format!("replaced by a newer connection from {addr}");
            registry::retire(&shared, &id, None, reason).await;
        }
        Admission::Successor => {
            let reason = format!("closed by the host (it connected again from {addr})");
            registry::retire(&shared, &id, None, reason).await;
        }
        Admission::Fresh | Admission::Hold(_) => {}
    }
    let Some(generation) = registry::next_generation(&shared) else {
        return;
    };
    let (token, liveness) = liveness();
    let (closed_tx, closed_rx) = watch::channel(false);
    let (replace_tx, mut replace_rx) = watch::channel(false);
    let host = Host {
        id: Arc::from(id.as_str()),
        addr,
        generation,
        opener: Opener::Http2 {
            opener,
            tunnel: token.downgrade(),
        },
        closed: closed_rx,
    };
    let conn = Conn {
        severable,
        liveness,
    };
    registry::register(&shared, host, conn, Some(replace_tx), None);
    drop(turn);
    let ended = tokio::select! {
        result = connection => Some(match result {
            Ok(()) => "closed by the host".to_owned(),
            Err(err) => format!("tunnel lost: {err}"),
        }),
        // The replacing connection reports this one's end.
        _ = replace_rx.changed() => None,
        _ = shutdown.changed() => None,
    };
    let _ = closed_tx.send(true);
    drop(token);
    let Some(reason) = ended else { return };
    if let Some(_turn) = registry::turn(&shared, &id).await {
        registry::retire(&shared, &id, Some(generation), reason).await;
    }
}

/// A duplicate identity's newcomer: kept open and unused until `until`,
/// then closed, so an agent that dials again at once does not spin.
async fn hold<S>(
    stream: S,
    id: &str,
    addr: SocketAddr,
    until: Instant,
    mut shutdown: watch::Receiver<bool>,
) {
    tracing::info!(host = id, %addr, "duplicate host identity: holding this connection unused until the back-off ends");
    tokio::select! {
        _ = tokio::time::sleep_until(until) => {}
        _ = shutdown.changed() => {}
    }
    drop(stream);
}
