//! Fleet scale of the reverse-connect proxy: N agents (default 1000, in
//! this process, each with its own certificate) dial one real
//! `trident rcp-listen` process; every tunnel ends at one in-process
//! TelemetryService (a bus served on a Unix socket, standing in for
//! tridentd). Reports the time until all are connected, the listener's RSS
//! per connected host, one unary call through every tunnel (baseline: the
//! same calls over the local socket), and snapshot-Watch throughput through
//! one tunnel as a ratio to the same Watch over the local socket.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{GetBusStatusRequest, WatchOptions, WatchRequest, stream_event};
use trident_rcp::agent::{Agent, AgentConfig};
use trident_rcp::pki::{LeafSpec, TestCa};
use trident_rcp::{Keepalive, TlsFiles};
use trident_telemetry::{Bus, BusConfig};

use crate::report;
use crate::uds::{Served, channel};

const BENCH: &str = "rcp";
const ORCHESTRATOR: &str = "orchestrator.bench";
const WAIT: Duration = Duration::from_secs(300);
/// Concurrent unary calls in flight.
const CONCURRENCY: usize = 64;

/// `trident rcp-listen`, killed on drop; its JSON events on a channel.
struct ListenerProc {
    child: Child,
    events: mpsc::Receiver<serde_json::Value>,
}

impl Drop for ListenerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ListenerProc {
    fn start(files: &TlsFiles, sockets: &Path) -> anyhow::Result<Self> {
        let exe = std::env::current_exe()?;
        let bin = exe.parent().map(|d| d.join("trident")).unwrap_or_default();
        let mut child = Command::new(&bin)
            .arg("rcp-listen")
            .args(["--listen", "127.0.0.1:0", "--sockets-dir"])
            .arg(sockets)
            .arg("--ca")
            .arg(&files.ca)
            .arg("--cert")
            .arg(&files.cert)
            .arg("--key")
            .arg(&files.key)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {} (build it with --release first)", bin.display()))?;
        let stdout = child.stdout.take().context("listener stdout")?;
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str(&line)
                    && tx.send(value).is_err()
                {
                    break;
                }
            }
        });
        Ok(ListenerProc { child, events })
    }

    fn next(&self, kind: &str) -> anyhow::Result<serde_json::Value> {
        loop {
            let event = self
                .events
                .recv_timeout(WAIT)
                .context("listener went quiet")?;
            if event["event"] == kind {
                return Ok(event);
            }
            if event["event"] == "refused" {
                bail!("a host was refused: {event}");
            }
        }
    }

    fn rss_kib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0)
    }
}

pub fn run(quick: bool) -> anyhow::Result<()> {
    let hosts: usize = std::env::var("TRIDENT_BENCH_RCP_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 100 } else { 1000 });
    let records: u64 = if quick { 50_000 } else { 200_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(fleet(hosts, records))
}

fn fill(bus: &Bus, records: u64) {
    tracing::subscriber::with_default(bus.subscriber(), || {
        for i in 0..records {
            tracing::info!(target: "tridentd::bench", disk = "/dev/sda", bytes = i, ok = true, "wrote block");
        }
    });
}

async fn fleet(hosts: usize, records: u64) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let bus = Bus::in_memory(BusConfig::default());
    fill(&bus, records);
    let served = Served::start(&bus)?;
    let ca = TestCa::new("bench CA")?;
    let orchestrator = ca.write_files(dir.path(), "orchestrator", &LeafSpec::dns(ORCHESTRATOR))?;
    let mut agents = Vec::with_capacity(hosts);
    for i in 0..hosts {
        let name = format!("host-{i}");
        let tls = ca.write_files(dir.path(), &name, &LeafSpec::dns(&name))?;
        agents.push(tls);
    }
    let sockets = dir.path().join("hosts");
    let listener = ListenerProc::start(&orchestrator, &sockets)?;
    let addr = listener.next("listening")?["addr"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let rss_idle = listener.rss_kib();

    let start = Instant::now();
    let mut tasks = Vec::with_capacity(hosts);
    for tls in agents {
        let agent = Agent::new(AgentConfig {
            connect: addr.clone(),
            server_name: ORCHESTRATOR.into(),
            tls,
            socket: served.socket.clone(),
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_secs(5),
            keepalive: Keepalive::default(),
            connect_timeout: Duration::from_secs(60),
            protocol: trident_rcp::Protocol::Trident,
        })?;
        tasks.push(tokio::spawn(async move { agent.run().await }));
    }
    let listener = tokio::task::spawn_blocking(move || {
        for _ in 0..hosts {
            listener.next("connected")?;
        }
        anyhow::Ok(listener)
    })
    .await??;
    let connected_in = start.elapsed();
    report::line(BENCH, "hosts", hosts as f64, "hosts", None);
    report::line(
        BENCH,
        "all_connected_ms",
        connected_in.as_secs_f64() * 1e3,
        "ms",
        None,
    );
    let rss = listener.rss_kib();
    report::line(BENCH, "listener_rss_idle_kib", rss_idle, "KiB", None);
    report::line(
        BENCH,
        "listener_rss_per_host_kib",
        (rss - rss_idle) / hosts as f64,
        "KiB",
        None,
    );

    let tunnel_sockets: Vec<PathBuf> = (0..hosts)
        .map(|i| sockets.join(format!("host-{i}.sock")))
        .collect();
    let local_sockets = vec![served.socket.clone(); hosts];
    let local = unary_calls(&local_sockets).await?;
    let tunnelled = unary_calls(&tunnel_sockets).await?;
    report::line(
        BENCH,
        "unary_every_tunnel_total_ms",
        tunnelled.0,
        "ms",
        Some(local.0),
    );
    report::line(
        BENCH,
        "unary_every_tunnel_median_ms",
        tunnelled.1,
        "ms",
        Some(local.1),
    );

    let mut local_rates = Vec::new();
    let mut tunnel_rates = Vec::new();
    for _ in 0..3 {
        local_rates.push(watch_rate(&served.socket).await?);
        tunnel_rates.push(watch_rate(&tunnel_sockets[0]).await?);
    }
    report::line(
        BENCH,
        "watch_snapshot_records_per_second",
        report::median(tunnel_rates),
        "records/s",
        Some(report::median(local_rates)),
    );
    for task in tasks {
        task.abort();
    }
    drop(listener);
    Ok(())
}

/// One new connection and one GetBusStatus per socket, `CONCURRENCY` at a
/// time: (total ms, median ms per call).
async fn unary_calls(sockets: &[PathBuf]) -> anyhow::Result<(f64, f64)> {
    let start = Instant::now();
    let latencies: Vec<anyhow::Result<f64>> = futures::stream::iter(sockets.iter().cloned())
        .map(|socket| async move {
            let t = Instant::now();
            let mut client = TelemetryServiceClient::new(channel(&socket).await?);
            client.get_bus_status(GetBusStatusRequest {}).await?;
            Ok(t.elapsed().as_secs_f64() * 1e3)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let latencies = latencies
        .into_iter()
        .collect::<anyhow::Result<Vec<f64>>>()?;
    Ok((
        start.elapsed().as_secs_f64() * 1e3,
        report::median(latencies),
    ))
}

/// Records per second of a snapshot Watch of the whole ring over `socket`.
async fn watch_rate(socket: &Path) -> anyhow::Result<f64> {
    let mut client =
        TelemetryServiceClient::new(channel(socket).await?).max_decoding_message_size(64 << 20);
    let start = Instant::now();
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                snapshot: true,
                ..WatchOptions::default()
            }),
            kinds: vec![],
        })
        .await?
        .into_inner();
    let mut count = 0u64;
    while let Some(batch) = stream.next().await {
        count += batch?
            .events
            .iter()
            .filter(|e| matches!(e.event, Some(stream_event::Event::Record(_))))
            .count() as u64;
    }
    Ok(count as f64 / start.elapsed().as_secs_f64())
}
