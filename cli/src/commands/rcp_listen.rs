//! `trident rcp-listen`: the orchestrator's end of the reverse-connect
//! proxy. Hosts running `trident-rcp` dial in over mutual TLS; each
//! authenticated host gets `DIR/<host-id>.sock` (0600), through which any
//! standard client (this CLI with `--socket`, grpcurl, grpcio) reaches that
//! host's tridentd. Every connect, disconnect and refusal is one JSON line
//! on stdout — the "host is up" signal phonehome used to give — and the
//! optional hooks run with the host's id, address and socket.

use std::collections::HashMap;
use std::fs;
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::net::UnixListener;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::task::JoinHandle;
use trident_rcp::duplicates::DuplicatePolicy;
use trident_rcp::tunnel::splice;
use trident_rcp::{Event, Host, Keepalive, Listener, ListenerConfig, TlsFiles};

use crate::args::RcpListenArgs;
use crate::exit::{CliError, CliResult, Exit};

/// One host's socket and the task serving it.
struct Served {
    generation: u64,
    socket: PathBuf,
    task: JoinHandle<()>,
}

/// The sockets of the connected hosts; dropping it (end of the command,
/// Ctrl-C) removes every socket file so none is left stale.
#[derive(Default)]
struct Sockets(HashMap<String, Served>);

impl Drop for Sockets {
    fn drop(&mut self) {
        for served in self.0.values() {
            served.task.abort();
            let _ = fs::remove_file(&served.socket);
        }
    }
}

pub async fn run(args: &RcpListenArgs) -> CliResult<Exit> {
    let config = ListenerConfig {
        keepalive: Keepalive {
            interval: args.keepalive_interval,
            timeout: args.keepalive_timeout,
        },
        protocol: args.protocol,
        duplicates: DuplicatePolicy {
            limit: args.duplicate_limit,
            backoff: args.duplicate_backoff,
            ..DuplicatePolicy::default()
        },
        ..ListenerConfig::new(
            args.listen,
            TlsFiles {
                ca: args.ca.clone(),
                cert: args.cert.clone(),
                key: args.key.clone(),
            },
        )
    };
    fs::create_dir_all(&args.sockets_dir)
        .map_err(|e| CliError::file("cannot create sockets directory", &args.sockets_dir, e))?;
    let mut listener = Listener::bind(config)
        .await
        .map_err(|e| CliError::Local(e.to_string()))?;
    emit(json!({"event": "listening", "addr": listener.local_addr().to_string()}));
    let mut sockets = Sockets::default();
    let mut stop = StopSignals::install()?;
    loop {
        let event = tokio::select! {
            event = listener.next_event() => event,
            signal = stop.next() => {
                // `sockets` drops on return: every host socket is removed.
                eprintln!("trident: {signal}: stopping; host sockets removed");
                return Ok(Exit::Success);
            }
        };
        match event {
            Some(Event::Connected(host)) => connected(args, &mut sockets, host),
            Some(Event::Disconnected {
                host,
                addr,
                generation,
                reason,
            }) => disconnected(args, &mut sockets, &host, addr, generation, &reason),
            Some(Event::Refused { addr, reason }) => {
                eprintln!("trident: refused {addr}: {reason}");
                emit(json!({"event": "refused", "addr": addr.to_string(), "reason": reason}));
            }
            Some(Event::Duplicate {
                host,
                addr,
                other_addr,
                replacements,
                backoff,
            }) => duplicate(&host, addr, other_addr, replacements, backoff),
            None => return Err(CliError::Local("the listener stopped".into())),
        }
    }
}

/// SIGTERM (systemd stop) and SIGINT (Ctrl-C): the listener's normal end.
struct StopSignals {
    terminate: Signal,
    interrupt: Signal,
}

impl StopSignals {
    fn install() -> CliResult<StopSignals> {
        let install = |kind: SignalKind, name: &str| {
            signal(kind).map_err(|e| CliError::Local(format!("cannot handle {name}: {e}")))
        };
        Ok(StopSignals {
            terminate: install(SignalKind::terminate(), "SIGTERM")?,
            interrupt: install(SignalKind::interrupt(), "SIGINT")?,
        })
    }

    /// Waits for either signal; returns its name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.terminate.recv() => "SIGTERM",
            _ = self.interrupt.recv() => "SIGINT",
        }
    }
}

/// One JSON object per line on stdout. A reader that went away must not
/// take the tunnels down with it (println! would panic on EPIPE).
fn emit(value: serde_json::Value) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{value}").and_then(|()| stdout.flush());
}

fn connected(args: &RcpListenArgs, sockets: &mut Sockets, host: Host) {
    let path = args.sockets_dir.join(format!("{}.sock", host.id()));
    let listener = match bind_private(&path, host.generation()) {
        Ok(listener) => listener,
        Err(err) => {
            eprintln!("trident: cannot create {}: {err}", path.display());
            return;
        }
    };
    let id = host.id().to_owned();
    let addr = host.addr();
    let served = Served {
        generation: host.generation(),
        socket: path.clone(),
        task: tokio::spawn(serve_socket(listener, host, path.clone())),
    };
    if let Some(old) = sockets.0.insert(id.clone(), served) {
        old.task.abort();
    }
    emit(json!({"event": "connected", "host": id, "addr": addr.to_string(), "socket": path}));
    run_hook(args.on_connect.as_deref(), &id, addr, &path);
}

fn disconnected(
    args: &RcpListenArgs,
    sockets: &mut Sockets,
    id: &str,
    addr: SocketAddr,
    generation: u64,
    reason: &str,
) {
    let path = args.sockets_dir.join(format!("{id}.sock"));
    if sockets.0.get(id).map(|s| s.generation) == Some(generation)
        && let Some(served) = sockets.0.remove(id)
    {
        served.task.abort();
        let _ = fs::remove_file(&served.socket);
    }
    eprintln!("trident: host {id} ({addr}) disconnected: {reason}");
    emit(
        json!({"event": "disconnected", "host": id, "addr": addr.to_string(), "socket": path, "reason": reason}),
    );
    run_hook(args.on_disconnect.as_deref(), id, addr, &path);
}

/// Two connections with one identity replaced each other too often.
fn duplicate(
    host: &str,
    addr: SocketAddr,
    other_addr: SocketAddr,
    replacements: u32,
    backoff: Duration,
) {
    let reason = format!(
        "connections from {addr} and {other_addr} replaced each other {replacements} times within a minute: two agents with one certificate? keeping {addr}, holding newcomers for {}s",
        backoff.as_secs()
    );
    eprintln!("trident: duplicate host identity {host}: {reason}");
    emit(json!({
        "event": "duplicate",
        "host": host,
        "addr": addr.to_string(),
        "other_addr": other_addr.to_string(),
        "replacements": replacements,
        "backoff_s": backoff.as_secs(),
        "reason": reason,
    }));
}

/// Binds `path` with mode 0600 from the first moment it is visible: bind a
/// temporary name, chmod, then rename over the final name (atomic, and it
/// replaces a stale socket of an earlier run).
fn bind_private(path: &Path, generation: u64) -> std::io::Result<UnixListener> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{generation}.tmp"));
    let _ = fs::remove_file(&temporary);
    let listener = UnixListener::bind(&temporary)?;
    fs::set_permissions(&temporary, fs::Permissions::from_mode(0o600))?;
    fs::rename(&temporary, path)?;
    Ok(listener)
}

/// Carries every local connection to the host's socket through its tunnel.
async fn serve_socket(listener: UnixListener, host: Host, path: PathBuf) {
    loop {
        let local = match listener.accept().await {
            Ok((local, _)) => local,
            Err(err) => {
                eprintln!("trident: accept on {}: {err}", path.display());
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let host = host.clone();
        let path = path.clone();
        tokio::spawn(async move {
            match host.open_stream().await {
                Ok(stream) => splice(stream, local, &path).await,
                Err(err) => eprintln!("trident: host {}: cannot open a stream: {err}", host.id()),
            }
        });
    }
}

/// Runs a hook through `sh -c` without waiting for it; its stdout goes to
/// our stderr so stdout stays pure JSON lines.
fn run_hook(command: Option<&str>, id: &str, addr: SocketAddr, socket: &Path) {
    let Some(command) = command else {
        return;
    };
    let stdout = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("TRIDENT_HOST_ID", id)
        .env("TRIDENT_HOST_ADDR", addr.to_string())
        .env("TRIDENT_HOST_SOCKET", socket)
        .stdin(Stdio::null())
        .stdout(stdout)
        .kill_on_drop(false)
        .spawn();
    match child {
        Ok(mut child) => {
            let command = command.to_owned();
            tokio::spawn(async move {
                match child.wait().await {
                    Ok(status) if !status.success() => {
                        eprintln!("trident: hook {command:?} exited with {status}");
                    }
                    Err(err) => eprintln!("trident: hook {command:?}: {err}"),
                    Ok(_) => {}
                }
            });
        }
        Err(err) => eprintln!("trident: cannot run hook {command:?}: {err}"),
    }
}
