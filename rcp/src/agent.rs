//! The host's side: dial the orchestrator forever, authenticate, and carry
//! every stream it opens to tridentd's Unix socket.
//!
//! States (logged, and published on [`Agent::state`] for whoever hosts the
//! agent): dialling -> connected (with our identity) -> tunnel closed ->
//! backoff -> dialling; or dialling -> refused (with the reason) -> backoff.

use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};
use tokio_rustls::TlsConnector;

use crate::backoff::Backoff;
use crate::error::RcpError;
use crate::identity::identity_of;
use crate::tls::{Protocol, TlsFiles, client_config, describe_tls_error, load_certs};
use crate::tunnel::{Keepalive, serve_host};
use crate::validity::check_validity;

/// Everything the agent needs (see `config` for flags and YAML).
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The orchestrator's listener, `HOST:PORT`.
    pub connect: String,
    /// The name the orchestrator's certificate must be valid for.
    pub server_name: String,
    /// This host's certificate and key, and the CA of both sides.
    pub tls: TlsFiles,
    /// tridentd's Unix socket.
    pub socket: PathBuf,
    /// First delay after a failed or closed tunnel.
    pub backoff_initial: Duration,
    /// Longest delay between two dials.
    pub backoff_max: Duration,
    /// Tunnel keepalive.
    pub keepalive: Keepalive,
    /// Bound on TCP connect plus TLS handshake.
    pub connect_timeout: Duration,
    /// The wire protocol (ours, or upstream Trident's).
    pub protocol: Protocol,
}

/// What the agent is doing now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentState {
    /// Opening a TCP connection and handshaking.
    Dialling,
    /// The orchestrator accepted us; the tunnel is up.
    Connected { identity: String },
    /// The connection failed or was refused.
    Refused { reason: String },
    /// An established tunnel closed.
    Disconnected { reason: String },
    /// Waiting before the next dial.
    Backoff { delay: Duration },
}

/// The agent, ready to [`run`](Agent::run).
pub struct Agent {
    config: AgentConfig,
    connector: TlsConnector,
    server_name: ServerName<'static>,
    identity: String,
    /// Our leaf certificate, to tell an expired one from one not valid yet.
    leaf: Vec<u8>,
    state: watch::Sender<AgentState>,
    /// The `Refused`/`Disconnected` that ended the last attempt, until the
    /// next connection: the backoff and dial after it are still "because of" it.
    last_end: std::sync::Mutex<Option<AgentState>>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("config", &self.config)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Loads the TLS files (refusing a key readable by others) and checks
    /// the configuration; no network yet.
    pub fn new(config: AgentConfig) -> Result<Agent, RcpError> {
        let connector = TlsConnector::from(client_config(&config.tls, config.protocol)?);
        let server_name = ServerName::try_from(config.server_name.clone())
            .map_err(|e| RcpError::Config(format!("server name {:?}: {e}", config.server_name)))?;
        let chain = load_certs("certificate", &config.tls.cert)?;
        let identity = chain
            .first()
            .map(|cert| identity_of(cert))
            .transpose()?
            .unwrap_or_default();
        let leaf = chain.first().map(|cert| cert.to_vec()).unwrap_or_default();
        let (state, _) = watch::channel(AgentState::Dialling);
        Ok(Agent {
            config,
            connector,
            server_name,
            identity,
            leaf,
            state,
            last_end: std::sync::Mutex::new(None),
        })
    }

    /// This host's identity as the orchestrator will see it.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Follows the agent's state.
    pub fn state(&self) -> watch::Receiver<AgentState> {
        self.state.subscribe()
    }

    /// What ended the last attempt (`Refused` or `Disconnected`), while the
    /// agent backs off and dials again; `None` once connected.
    pub fn last_end(&self) -> Option<AgentState> {
        self.last_end
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_state(&self, state: AgentState) {
        {
            let mut last_end = self
                .last_end
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match &state {
                AgentState::Refused { .. } | AgentState::Disconnected { .. } => {
                    *last_end = Some(state.clone());
                }
                AgentState::Connected { .. } => *last_end = None,
                AgentState::Dialling | AgentState::Backoff { .. } => {}
            }
        }
        self.state.send_replace(state);
    }

    /// Dials, serves and re-dials forever.
    pub async fn run(&self) {
        let mut backoff = Backoff::new(self.config.backoff_initial, self.config.backoff_max);
        loop {
            self.set_state(AgentState::Dialling);
            tracing::info!(orchestrator = %self.config.connect, "dialling");
            match self.session().await {
                Ok(reason) if self.config.protocol == Protocol::Upstream => {
                    // Upstream's agent dials again at once after each
                    // closed connection (one connection, one stream).
                    backoff.reset();
                    tracing::info!(orchestrator = %self.config.connect, %reason, "connection closed; dialling again");
                    self.set_state(AgentState::Disconnected { reason });
                    continue;
                }
                Ok(reason) => {
                    // The tunnel was up: start the next dial sequence afresh.
                    backoff.reset();
                    tracing::warn!(orchestrator = %self.config.connect, %reason, "tunnel closed");
                    self.set_state(AgentState::Disconnected { reason });
                }
                Err(reason) => {
                    let reason = self.explain_refusal(reason);
                    tracing::warn!(orchestrator = %self.config.connect, %reason, "refused");
                    self.set_state(AgentState::Refused { reason });
                }
            }
            let delay = backoff.next_delay();
            tracing::info!(delay = %humantime::format_duration(round_ms(delay)), "backoff");
            self.set_state(AgentState::Backoff { delay });
            tokio::time::sleep(delay).await;
        }
    }

    /// The orchestrator's `certificate_expired` alert covers a certificate
    /// not valid yet too: say which, from our own certificate and clock.
    fn explain_refusal(&self, reason: String) -> String {
        if !reason.contains("CertificateExpired") {
            return reason;
        }
        match check_validity(&self.leaf, std::time::SystemTime::now()) {
            Err(own) => format!("refused by the orchestrator: {own}"),
            Ok(()) => reason,
        }
    }

    /// One connection: `Ok(reason)` if the tunnel was established and later
    /// closed, `Err(reason)` if it never was.
    async fn session(&self) -> Result<String, String> {
        let addr = &self.config.connect;
        let handshake = async {
            let tcp = TcpStream::connect(addr)
                .await
                .map_err(|e| format!("cannot connect: {e}"))?;
            let _ = tcp.set_nodelay(true);
            self.connector
                .connect(self.server_name.clone(), tcp)
                .await
                .map_err(|e| format!("TLS handshake failed: {}", describe_tls_error(&e)))
        };
        let tls = tokio::time::timeout(self.config.connect_timeout, handshake)
            .await
            .map_err(|_| "connect and TLS handshake timed out".to_owned())??;
        if self.config.protocol == Protocol::Upstream {
            // Upstream's protocol: this connection carries one byte stream
            // to tridentd (as upstream's agent, connected right away).
            tracing::info!(orchestrator = %addr, identity = %self.identity, "connected (upstream protocol)");
            self.set_state(AgentState::Connected {
                identity: self.identity.clone(),
            });
            return crate::raw::carry(tls, &self.config.socket).await;
        }
        // With TLS 1.3 the orchestrator checks our certificate after our
        // handshake completed: the tunnel is up only once it speaks.
        let (io, first_bytes) = FirstRead::new(tls);
        let serve = serve_host(io, self.config.keepalive, self.config.socket.clone());
        tokio::pin!(serve);
        tokio::select! {
            result = &mut serve => return Err(match result {
                Ok(()) => "closed by the orchestrator before the tunnel was up".to_owned(),
                Err(err) => format!("refused by the orchestrator: {}", root_cause(&err)),
            }),
            accepted = first_bytes => if accepted.is_err() {
                return Err("closed by the orchestrator before the tunnel was up".to_owned());
            },
        }
        tracing::info!(orchestrator = %addr, identity = %self.identity, "connected");
        self.set_state(AgentState::Connected {
            identity: self.identity.clone(),
        });
        Ok(match serve.await {
            Ok(()) => "closed by the orchestrator".to_owned(),
            Err(err) => format!("tunnel lost: {}", root_cause(&err)),
        })
    }
}

fn round_ms(delay: Duration) -> Duration {
    Duration::from_millis(delay.as_millis() as u64)
}

/// The innermost message of an error chain (hyper wraps the TLS alert).
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    if cause.to_string() == err.to_string() {
        err.to_string()
    } else {
        format!("{err}: {cause}")
    }
}

/// Passes bytes through and signals once when the first byte arrives.
struct FirstRead<IO> {
    inner: IO,
    first: Option<oneshot::Sender<()>>,
}

impl<IO> FirstRead<IO> {
    fn new(inner: IO) -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (
            FirstRead {
                inner,
                first: Some(tx),
            },
            rx,
        )
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for FirstRead<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before
            && let Some(first) = self.first.take()
        {
            let _ = first.send(());
        }
        poll
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for FirstRead<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
