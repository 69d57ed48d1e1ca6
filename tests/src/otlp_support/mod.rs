//! The receiver side of the OTLP tests: the node receiver process, what it
//! wrote (normalized OTLP requests as JSON lines), a collector that stalls,
//! and the exported-metrics file the dashboards check reads.

mod daemon;
mod received;
pub use daemon::*;
pub use received::*;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use serde_json::Value;

use crate::test_os::repo_root;

/// Targets (and log scopes) that must never be exported.
const INTERNAL: &[&str] = &[
    "tonic",
    "h2",
    "hyper",
    "hyper_util",
    "tower",
    "opentelemetry",
    "tracing_opentelemetry",
    "trident_telemetry",
    "tridentd::otlp",
];

pub fn is_internal(target: &str) -> bool {
    INTERNAL.iter().any(|p| {
        target == *p
            || target.starts_with(&format!("{p}::"))
            || (p.starts_with("opentelemetry") && target.starts_with(p))
    })
}

/// `@elastic/mockotlpserver` on free loopback ports.
#[derive(Debug)]
pub struct Receiver {
    child: Child,
    out: PathBuf,
    pub grpc: String,
    pub http: String,
    _dir: tempfile::TempDir,
}

impl Receiver {
    /// On free ports.
    pub fn start() -> anyhow::Result<Self> {
        Self::start_on(None)
    }

    /// gRPC on `grpc_port` when given (HTTP always on a free port).
    pub fn start_on(grpc_port: Option<u16>) -> anyhow::Result<Self> {
        let root = repo_root();
        if !root.join("node_modules/@elastic/mockotlpserver").is_dir() {
            bail!(
                "@elastic/mockotlpserver is not installed: run `npm ci` in {}",
                root.display()
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("otlp-receiver-")
            .tempdir()?;
        let out = dir.path().join("received.jsonl");
        let mut child = Command::new("node")
            .arg(root.join("tests/otlp/receiver.js"))
            .arg(&out)
            .args(grpc_port.map(|p| p.to_string()))
            .current_dir(&root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("start node tests/otlp/receiver.js (is node installed?)")?;
        let stdout = child.stdout.take().context("receiver stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if !line.trim().is_empty() => line,
            other => {
                let _ = child.kill();
                let _ = child.wait();
                bail!("receiver did not start: {other:?}");
            }
        };
        let urls: Value = serde_json::from_str(line.trim()).context("receiver's address line")?;
        let url = |key: &str| {
            urls.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .context("receiver url")
        };
        Ok(Self {
            grpc: url("grpc")?,
            http: url("http")?,
            child,
            out,
            _dir: dir,
        })
    }

    /// Everything received so far.
    pub fn received(&self) -> Received {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        Received {
            requests: text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        }
    }

    /// Polls until `done` holds or `timeout` passes (then fails with what arrived).
    pub fn wait_for(
        &self,
        timeout: Duration,
        done: impl Fn(&Received) -> bool,
    ) -> anyhow::Result<Received> {
        let deadline = Instant::now() + timeout;
        loop {
            let received = self.received();
            if done(&received) {
                return Ok(received);
            }
            if Instant::now() > deadline {
                bail!(
                    "receiver did not get what was expected within {timeout:?}; got {} requests, metrics {:?}, log bodies {:?}",
                    received.requests.len(),
                    received.metric_names(),
                    received
                        .logs()
                        .iter()
                        .map(|l| l.body.clone())
                        .collect::<Vec<_>>()
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP listener that accepts connections and never answers (a hung collector).
#[derive(Debug)]
pub struct StalledCollector {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl StalledCollector {
    pub fn start() -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut held = Vec::new();
            while !stopping.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Ok(Self {
            port,
            stop,
            thread: Some(thread),
        })
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for StalledCollector {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// An endpoint where nothing listens.
pub fn closed_port() -> anyhow::Result<String> {
    Ok(format!("http://127.0.0.1:{}", free_port()?))
}

/// A loopback port nothing listens on (now).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}
