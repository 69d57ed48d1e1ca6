//! The receiver side of the OTLP tests: the node receiver process, what it
//! wrote (normalized OTLP requests as JSON lines), a collector that stalls,
//! and the exported-metrics file the dashboards check reads.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

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

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".."))
}

/// `@elastic/mockotlpserver` on free loopback ports.
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

#[derive(Debug, Clone)]
pub struct LogRecord {
    pub scope: String,
    pub body: String,
    pub severity_text: String,
    pub severity_number: i64,
    pub trace_id: String,
    pub span_id: String,
    pub attributes: Value,
}

#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub target: String,
    pub attributes: Value,
}

#[derive(Debug, Clone)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    /// counter, updowncounter, gauge or histogram.
    pub kind: String,
    pub attributes: BTreeSet<String>,
    pub points: Vec<Value>,
}

impl Metric {
    /// Latest value per value of one attribute (cumulative metrics).
    pub fn values_by(&self, key: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for point in &self.points {
            if let Some(label) = point
                .get("attributes")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
            {
                out.insert(label.to_string(), number(point));
            }
        }
        out
    }

    /// Sum over the attribute sets of the last export's points.
    pub fn total(&self) -> f64 {
        let mut latest: BTreeMap<String, f64> = BTreeMap::new();
        for point in &self.points {
            let key = point
                .get("attributes")
                .map(Value::to_string)
                .unwrap_or_default();
            latest.insert(key, number(point));
        }
        latest.values().sum()
    }
}

/// A point's value: asInt (a protobufjs Long or a number), asDouble, or a histogram's count.
fn number(point: &Value) -> f64 {
    let long = |v: &Value| -> Option<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.parse().ok(),
            Value::Object(o) => {
                let low = o.get("low")?.as_i64()? as u32 as f64;
                let high = o.get("high")?.as_i64()? as f64;
                Some(high * 4_294_967_296.0 + low)
            }
            _ => None,
        }
    };
    point
        .get("asInt")
        .and_then(long)
        .or_else(|| point.get("asDouble").and_then(Value::as_f64))
        .or_else(|| point.get("count").and_then(long))
        .unwrap_or(0.0)
}

/// What the receiver wrote.
#[derive(Debug, Clone)]
pub struct Received {
    pub requests: Vec<Value>,
}

fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Received {
    fn of(&self, signal: &str) -> impl Iterator<Item = &Value> {
        let signal = signal.to_string();
        self.requests
            .iter()
            .filter(move |r| r.get("signal").and_then(Value::as_str) == Some(signal.as_str()))
            .filter_map(|r| r.get("data"))
    }

    /// Resource attributes of the first request.
    pub fn resource(&self) -> Option<Value> {
        self.requests.iter().find_map(|r| {
            let data = r.get("data")?;
            ["resourceSpans", "resourceLogs", "resourceMetrics"]
                .iter()
                .find_map(|k| {
                    data.get(k)?
                        .get(0)?
                        .get("resource")?
                        .get("attributes")
                        .cloned()
                })
        })
    }

    pub fn logs(&self) -> Vec<LogRecord> {
        let mut out = Vec::new();
        for data in self.of("logs") {
            for rl in items(data, "resourceLogs") {
                for sl in items(rl, "scopeLogs") {
                    let scope = sl.get("scope").map(|s| text(s, "name")).unwrap_or_default();
                    for lr in items(sl, "logRecords") {
                        out.push(LogRecord {
                            scope: scope.clone(),
                            body: match lr.get("body") {
                                Some(Value::String(s)) => s.clone(),
                                Some(other) => other
                                    .get("stringValue")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_string(),
                                None => String::new(),
                            },
                            severity_text: text(lr, "severityText"),
                            severity_number: lr
                                .get("severityNumber")
                                .and_then(Value::as_i64)
                                .unwrap_or(0),
                            trace_id: text(lr, "traceId"),
                            span_id: text(lr, "spanId"),
                            attributes: lr.get("attributes").cloned().unwrap_or(Value::Null),
                        });
                    }
                }
            }
        }
        out
    }

    pub fn has_log_body(&self, body: &str) -> bool {
        self.logs().iter().any(|l| l.body == body)
    }

    pub fn spans(&self) -> Vec<SpanRecord> {
        let mut out = Vec::new();
        for data in self.of("traces") {
            for rs in items(data, "resourceSpans") {
                for ss in items(rs, "scopeSpans") {
                    for span in items(ss, "spans") {
                        let attributes = span.get("attributes").cloned().unwrap_or(Value::Null);
                        out.push(SpanRecord {
                            name: text(span, "name"),
                            trace_id: text(span, "traceId"),
                            span_id: text(span, "spanId"),
                            parent_span_id: text(span, "parentSpanId"),
                            target: attributes
                                .get("target")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_string(),
                            attributes,
                        });
                    }
                }
            }
        }
        out
    }

    /// Every metric, its data points from all exports in arrival order.
    pub fn metrics(&self) -> Vec<Metric> {
        let mut by_name: BTreeMap<String, Metric> = BTreeMap::new();
        for data in self.of("metrics") {
            for rm in items(data, "resourceMetrics") {
                for sm in items(rm, "scopeMetrics") {
                    for m in items(sm, "metrics") {
                        let (kind, body) = if let Some(sum) = m.get("sum") {
                            let monotonic = sum
                                .get("isMonotonic")
                                .and_then(Value::as_bool)
                                .unwrap_or(false);
                            (
                                if monotonic {
                                    "counter"
                                } else {
                                    "updowncounter"
                                },
                                sum,
                            )
                        } else if let Some(h) = m.get("histogram") {
                            ("histogram", h)
                        } else if let Some(g) = m.get("gauge") {
                            ("gauge", g)
                        } else {
                            continue;
                        };
                        let name = text(m, "name");
                        let entry = by_name.entry(name.clone()).or_insert_with(|| Metric {
                            name,
                            unit: text(m, "unit"),
                            kind: kind.to_string(),
                            attributes: BTreeSet::new(),
                            points: Vec::new(),
                        });
                        for point in items(body, "dataPoints") {
                            if let Some(attrs) = point.get("attributes").and_then(Value::as_object)
                            {
                                entry.attributes.extend(attrs.keys().cloned());
                            }
                            entry.points.push(point.clone());
                        }
                    }
                }
            }
        }
        by_name.into_values().collect()
    }

    pub fn metric_names(&self) -> BTreeSet<String> {
        self.metrics().into_iter().map(|m| m.name).collect()
    }
}

/// Merges `metrics` (name, unit, kind, attribute keys) into
/// target/otlp/exported-metrics.json for dashboards/check.py.
pub fn record_exported_metrics(metrics: &[Metric]) -> anyhow::Result<()> {
    let dir = repo_root().join("target").join("otlp");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("exported-metrics.json");
    let mut known: BTreeMap<String, Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<Value>>(&t).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| Some((m.get("name")?.as_str()?.to_string(), m)))
        .collect();
    for metric in metrics {
        let mut attributes: BTreeSet<String> = known
            .get(&metric.name)
            .and_then(|m| m.get("attributes"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        attributes.extend(metric.attributes.iter().cloned());
        known.insert(
            metric.name.clone(),
            serde_json::json!({
                "name": metric.name,
                "unit": metric.unit,
                "kind": metric.kind,
                "attributes": attributes,
            }),
        );
    }
    let list: Vec<Value> = known.into_values().collect();
    // Written whole then renamed: tests running in parallel never see half a file.
    let tmp = dir.join(format!("exported-metrics.json.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(&list)?)?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}
