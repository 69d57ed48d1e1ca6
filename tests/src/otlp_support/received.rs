//! What the receiver wrote, parsed: the normalized OTLP requests as
//! resource, log records, spans and metrics; and the exported-metrics file.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::test_os::repo_root;

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

    /// The newest value of a gauge for servicing kind `kind` (the overall
    /// progress gauges carry the kind of the newest operation).
    pub fn gauge_of_kind(&self, kind: &str) -> anyhow::Result<f64> {
        anyhow::ensure!(
            self.kind == "gauge",
            "{} is not a gauge: {self:?}",
            self.name
        );
        self.values_by("kind")
            .get(kind)
            .copied()
            .ok_or_else(|| anyhow::anyhow!("{}: no {kind} point: {self:?}", self.name))
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

/// Writes `metrics` (name, unit, kind, attribute keys) to
/// target/otlp/exported-metrics/<test>.json for dashboards/check.py, which
/// takes the union of the folder (one file per test: no write races when
/// tests run in parallel processes).
pub fn record_exported_metrics(test: &str, metrics: &[Metric]) -> anyhow::Result<()> {
    let dir = repo_root()
        .join("target")
        .join("otlp")
        .join("exported-metrics");
    std::fs::create_dir_all(&dir)?;
    let list: Vec<Value> = metrics
        .iter()
        .map(|metric| {
            serde_json::json!({
                "name": metric.name,
                "unit": metric.unit,
                "kind": metric.kind,
                "attributes": metric.attributes,
            })
        })
        .collect();
    // Written whole then renamed: a reader never sees half a file.
    let tmp = dir.join(format!(".{test}.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(&list)?)?;
    std::fs::rename(&tmp, dir.join(format!("{test}.json")))?;
    Ok(())
}
