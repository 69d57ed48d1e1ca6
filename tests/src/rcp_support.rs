//! The processes of the reverse-connect proxy tests: `trident rcp-listen`
//! (its JSON events read line by line), `trident-rcp` agents (stderr kept
//! for the reasons they log), a throw-away CA, and a TCP relay the test can
//! cut to drop a tunnel without killing either end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use trident_rcp::TlsFiles;
use trident_rcp::pki::{LeafSpec, TestCa};

use crate::bin_path;

/// Generous: the machine is shared.
pub const WAIT: Duration = Duration::from_secs(60);
pub const ORCHESTRATOR: &str = "orchestrator.test";

/// A CA and the orchestrator's files, in a temp dir.
#[derive(Debug)]
pub struct Pki {
    pub dir: tempfile::TempDir,
    pub ca: TestCa,
    pub orchestrator: TlsFiles,
}

impl Pki {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("rcp e2e CA").unwrap();
        let orchestrator = ca
            .write_files(dir.path(), "orchestrator", &LeafSpec::dns(ORCHESTRATOR))
            .unwrap();
        Pki {
            dir,
            ca,
            orchestrator,
        }
    }

    /// A host's files signed by this CA.
    pub fn host(&self, name: &str, spec: &LeafSpec) -> TlsFiles {
        self.ca.write_files(self.dir.path(), name, spec).unwrap()
    }

    pub fn sockets_dir(&self) -> PathBuf {
        self.dir.path().join("hosts")
    }
}

impl Default for Pki {
    fn default() -> Self {
        Self::new()
    }
}

/// Lines of a child's pipe, collected by a thread.
#[derive(Debug, Clone, Default)]
pub struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    pub fn follow(pipe: impl std::io::Read + Send + 'static) -> Self {
        let lines = Lines::default();
        let sink = lines.clone();
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                sink.0.lock().unwrap().push(line);
            }
        });
        lines
    }

    pub fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    pub fn text(&self) -> String {
        self.all().join("\n")
    }

    /// Waits until a line satisfies `pred`; returns it.
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(line) = self.all().into_iter().find(|l| pred(l)) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within {WAIT:?}:\n{}",
                self.text()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `--ca CA --cert CERT --key KEY`: the flags that give `trident
/// rcp-listen` and `trident-rcp` their TLS files.
pub fn tls_args(files: &TlsFiles) -> [&OsStr; 6] {
    [
        OsStr::new("--ca"),
        files.ca.as_os_str(),
        OsStr::new("--cert"),
        files.cert.as_os_str(),
        OsStr::new("--key"),
        files.key.as_os_str(),
    ]
}

/// `trident rcp-listen` on 127.0.0.1:0.
#[derive(Debug)]
pub struct ListenerProc {
    child: Child,
    pub events: Lines,
    pub stderr: Lines,
    pub addr: SocketAddr,
}

impl ListenerProc {
    pub fn start(pki: &Pki, extra: &[&str]) -> Self {
        Self::start_with(&pki.orchestrator, &pki.sockets_dir(), extra)
    }

    /// With any TLS files (e.g. upstream's certificates) and sockets dir.
    pub fn start_with(files: &TlsFiles, sockets_dir: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(bin_path("trident"))
            .arg("rcp-listen")
            .args(["--listen", "127.0.0.1:0"])
            .args(tls_args(files))
            .arg("--sockets-dir")
            .arg(sockets_dir)
            .args(["--keepalive-interval", "1s", "--keepalive-timeout", "5s"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start trident rcp-listen");
        let events = Lines::follow(child.stdout.take().unwrap());
        let stderr = Lines::follow(child.stderr.take().unwrap());
        let mut listener = ListenerProc {
            child,
            events,
            stderr,
            addr: "0.0.0.0:0".parse().unwrap(),
        };
        let listening = listener.event("listening", |_| true);
        listener.addr = listening["addr"].as_str().unwrap().parse().unwrap();
        listener
    }

    /// Every event so far.
    pub fn all_events(&self) -> Vec<Value> {
        self.events
            .all()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
            .collect()
    }

    /// Waits for the `nth` (0-based) event of `kind` matching `pred`.
    pub fn nth_event(&self, kind: &str, nth: usize, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let found: Vec<Value> = self
                .all_events()
                .into_iter()
                .filter(|e| e["event"] == kind && pred(e))
                .collect();
            if let Some(event) = found.get(nth) {
                return event.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no {kind} event #{nth} within {WAIT:?}; events:\n{}\nstderr:\n{}",
                self.events.text(),
                self.stderr.text()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn event(&self, kind: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.nth_event(kind, 0, pred)
    }

    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        signal_child(&self.child, signal);
    }

    /// Waits (up to [`WAIT`]) for the listener to exit; its status.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "rcp-listen still running after {WAIT:?}; stderr:\n{}",
                self.stderr.text()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

fn signal_child(child: &Child, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, signal).unwrap();
}

impl Drop for ListenerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `trident-rcp` agent.
#[derive(Debug)]
pub struct AgentProc {
    child: Child,
    pub stderr: Lines,
}

impl AgentProc {
    /// An agent whose state file lies beside its certificate.
    pub fn start(addr: SocketAddr, server_name: &str, files: &TlsFiles, socket: &Path) -> Self {
        let state_file = files.cert.with_extension("state.json");
        Self::start_with_state_file(addr, server_name, files, socket, &state_file)
    }

    pub fn start_with_state_file(
        addr: SocketAddr,
        server_name: &str,
        files: &TlsFiles,
        socket: &Path,
        state_file: &Path,
    ) -> Self {
        Self::start_with_args(addr, server_name, files, socket, state_file, &[])
    }

    /// As [`start_with_state_file`](Self::start_with_state_file), with more flags.
    pub fn start_with_args(
        addr: SocketAddr,
        server_name: &str,
        files: &TlsFiles,
        socket: &Path,
        state_file: &Path,
        extra: &[&str],
    ) -> Self {
        let mut child = Command::new(bin_path("trident-rcp"))
            .arg("--state-file")
            .arg(state_file)
            .arg("--config")
            .arg("/dev/null")
            .args(["--connect", &addr.to_string(), "--server-name", server_name])
            .args(tls_args(files))
            .arg("--socket")
            .arg(socket)
            .args(["--backoff-initial", "100ms", "--backoff-max", "1s"])
            .args(["--keepalive-interval", "1s", "--keepalive-timeout", "5s"])
            .args(extra)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start trident-rcp");
        let stderr = Lines::follow(child.stderr.take().unwrap());
        AgentProc { child, stderr }
    }

    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        signal_child(&self.child, signal);
    }

    /// SIGKILL: the tunnel is cut without any goodbye.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for AgentProc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A TCP relay in front of the listener; `cut()` drops every relayed
/// connection at once while the relay keeps accepting new ones.
#[derive(Debug)]
pub struct Relay {
    pub addr: SocketAddr,
    cut: watch::Sender<u64>,
}

impl Relay {
    pub async fn start(target: SocketAddr) -> Self {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let (cut, cuts) = watch::channel(0u64);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = tcp.accept().await {
                let mut cuts = cuts.clone();
                cuts.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cuts.changed() => {}
                    }
                });
            }
        });
        Relay { addr, cut }
    }

    pub fn cut(&self) {
        self.cut.send_modify(|n| *n += 1);
    }
}

/// The host's tridentd: a real daemon on a temp socket, no idle exit.
pub async fn host_daemon() -> crate::Daemon {
    crate::Daemon::builder()
        .args(["--inactivity-timeout", "0"])
        .spawn()
        .await
        .unwrap()
}

/// Waits until `path` exists (or, with `present` false, is gone).
pub async fn wait_path(path: &Path, present: bool) {
    let deadline = Instant::now() + WAIT;
    while path.exists() != present {
        assert!(
            Instant::now() < deadline,
            "{} still {} after {WAIT:?}",
            path.display(),
            if present { "absent" } else { "present" }
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
