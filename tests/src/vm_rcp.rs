//! The orchestrator's side of a VM's reverse-connect proxy: the test OS's
//! `trident-rcp` dials [`GUEST_RCP_ADDR`], QEMU's user network
//! hands each such connection to a `socat` piped to this harness's
//! [`trident_rcp::Listener`] on a free loopback port, and
//! [`GuestSocket`] gives tests a local Unix socket to the guest's tridentd
//! (the real `trident` CLI and tonic channels work unchanged).
//!
//! A guest that reboots (the installer into the installed OS, A into B)
//! dials again with the same identity; the listener replaces its tunnel and
//! the socket follows: every connection made to it goes through the newest
//! tunnel, so a test keeps one socket across reboots.

use std::net::{SocketAddr, TcpListener as StdTcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tempfile::TempDir;
use tokio::net::UnixListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use trident_rcp::{Event, Host, Listener, ListenerConfig, TlsFiles};

/// Where the test OS's agent dials (`/etc/trident/rcp.yaml`, written by
/// `tests/vm/build-image.sh`): an unused address of QEMU's user network
/// that QEMU forwards to the listener (`guestfwd`; the host's own
/// 10.0.2.2 is refused as a guestfwd address).
pub const GUEST_RCP_ADDR: &str = "10.0.2.100:7443";
/// How long a connection to a [`GuestSocket`] waits for a tunnel when no
/// guest is connected (booting, or between a reboot and its new dial).
const TUNNEL_WAIT: Duration = Duration::from_secs(60);

/// Where the VM's tunnel stands.
#[derive(Debug, Clone)]
enum Tunnel {
    Binding,
    Failed(String),
    Waiting,
    Up(Host),
}

/// A listener for one VM's agent, run on the caller's tokio runtime;
/// stopped (every tunnel closed) on drop.
#[derive(Debug)]
pub struct Orchestrator {
    port: u16,
    tunnel: watch::Receiver<Tunnel>,
    task: JoinHandle<()>,
}

fn free_loopback_port() -> anyhow::Result<u16> {
    // The listener binds it a moment later, long before the guest dials.
    let listener = StdTcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

impl Orchestrator {
    /// Starts listening for VM `vm`'s agent with the orchestrator's `tls`
    /// files. Needs a tokio runtime (the listener runs on it).
    pub fn start(vm: &str, tls: TlsFiles) -> anyhow::Result<Orchestrator> {
        let runtime = tokio::runtime::Handle::try_current()
            .context("the VM's reverse-connect listener needs a tokio runtime")?;
        let port = free_loopback_port()?;
        let (state, tunnel) = watch::channel(Tunnel::Binding);
        let task = runtime.spawn(follow_hosts(vm.to_owned(), port, tls, state));
        Ok(Orchestrator { port, tunnel, task })
    }

    /// The loopback port QEMU forwards the guest's dials to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A new local socket to the guest's tridentd.
    pub fn socket(&self) -> anyhow::Result<GuestSocket> {
        GuestSocket::start(self.tunnel.clone())
    }
}

impl Drop for Orchestrator {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds the listener and keeps `state` on the newest tunnel, printing
/// every connect, disconnect and refusal (the test's log shows reconnects).
async fn follow_hosts(vm: String, port: u16, tls: TlsFiles, state: watch::Sender<Tunnel>) {
    let config = ListenerConfig::new(SocketAddr::from(([127, 0, 0, 1], port)), tls);
    let mut listener = match Listener::bind(config).await {
        Ok(listener) => listener,
        Err(err) => {
            state.send_replace(Tunnel::Failed(format!(
                "reverse-connect listener on 127.0.0.1:{port}: {err}"
            )));
            return;
        }
    };
    state.send_replace(Tunnel::Waiting);
    while let Some(event) = listener.next_event().await {
        match event {
            Event::Connected(host) => {
                println!(
                    "vm {vm}: rcp: host {} connected (tunnel {})",
                    host.id(),
                    host.generation()
                );
                state.send_replace(Tunnel::Up(host));
            }
            Event::Disconnected {
                host,
                generation,
                reason,
                ..
            } => {
                println!("vm {vm}: rcp: host {host} disconnected (tunnel {generation}): {reason}");
                state.send_if_modified(|tunnel| match tunnel {
                    Tunnel::Up(up) if up.generation() == generation => {
                        *tunnel = Tunnel::Waiting;
                        true
                    }
                    _ => false,
                });
            }
            Event::Refused { addr, reason } => {
                println!("vm {vm}: rcp: refused {addr}: {reason}");
            }
            Event::Duplicate {
                host,
                addr,
                other_addr,
                ..
            } => {
                println!("vm {vm}: rcp: duplicate identity {host}: {addr} and {other_addr}");
            }
        }
    }
}

/// The newest tunnel, waiting up to [`TUNNEL_WAIT`] for one.
async fn current_host(tunnel: &mut watch::Receiver<Tunnel>) -> Result<Host, String> {
    let wait = tunnel.wait_for(|t| !matches!(t, Tunnel::Binding | Tunnel::Waiting));
    match tokio::time::timeout(TUNNEL_WAIT, wait).await {
        Ok(Ok(state)) => match &*state {
            Tunnel::Up(host) => Ok(host.clone()),
            Tunnel::Failed(err) => Err(err.clone()),
            Tunnel::Binding | Tunnel::Waiting => Err("no tunnel".into()),
        },
        Ok(Err(_)) => Err("the VM's listener stopped".into()),
        Err(_) => Err(format!("no guest connected within {TUNNEL_WAIT:?}")),
    }
}

/// A Unix socket on the host whose every connection is one stream through
/// the VM's newest tunnel to the guest's tridentd. Stops on drop.
#[derive(Debug)]
pub struct GuestSocket {
    path: PathBuf,
    task: JoinHandle<()>,
    _dir: TempDir,
}

impl GuestSocket {
    fn start(tunnel: watch::Receiver<Tunnel>) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("trident-guest-")
            .tempdir()?;
        let path = dir.path().join("tridentd.sock");
        let listener =
            UnixListener::bind(&path).with_context(|| format!("binding {}", path.display()))?;
        let socket = path.clone();
        let task = tokio::spawn(async move {
            while let Ok((local, _)) = listener.accept().await {
                let mut tunnel = tunnel.clone();
                let socket = socket.clone();
                tokio::spawn(async move {
                    // Dropping `local` closes it: the client sees the failure.
                    let host = match current_host(&mut tunnel).await {
                        Ok(host) => host,
                        Err(err) => return eprintln!("guest socket: {err}"),
                    };
                    match host.open_stream().await {
                        Ok(stream) => trident_rcp::tunnel::splice(stream, local, &socket).await,
                        Err(err) => eprintln!("guest socket: opening a stream: {err}"),
                    }
                });
            }
        });
        Ok(GuestSocket {
            path,
            task,
            _dir: dir,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits until the guest's tridentd answers `Version` through this socket.
    pub async fn wait_until_answering(
        &self,
        timeout: Duration,
    ) -> anyhow::Result<trident_proto::v1::VersionResponse> {
        let deadline = Instant::now() + timeout;
        loop {
            let attempt =
                tokio::time::timeout(Duration::from_secs(30), crate::version(&self.path)).await;
            match attempt {
                Ok(Ok(v)) => return Ok(v),
                Ok(Err(e)) if Instant::now() > deadline => {
                    bail!("guest tridentd did not answer within {timeout:?}: {e:#}")
                }
                Err(_) if Instant::now() > deadline => {
                    bail!("guest tridentd did not answer within {timeout:?}")
                }
                _ => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    }
}

impl Drop for GuestSocket {
    fn drop(&mut self) {
        self.task.abort();
    }
}
