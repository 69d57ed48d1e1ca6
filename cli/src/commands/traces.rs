//! `trident traces [--operation ID] [--format chrome]`: the span tree of an
//! operation with durations and status, from the bus (and journal) span
//! records; or the same spans as Chrome trace-event JSON (`crate::report::chrome`).
//!
//! An operation and the operations that settle it across its reboot (the
//! commit after an install, A/B update or rollback; `continues_operation_id`)
//! are one trace: the tree shows them all, the commit's root span under the
//! operation's, and a line for each reboot between them with both boot ids
//! and the time without records.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use tokio_stream::StreamExt;

use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    OperationSummary, RecordKind, SpanEvent, SpanRecord, SpanStatus, WatchOptions, WatchRequest,
    record, stream_event,
};

use crate::args::{OutputFormat, TraceFormat, TracesArgs};
use crate::client::Channel;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::output;
use crate::render::event::system_time;
use crate::render::format;
use crate::report::spans::{Reboot, reboots};
use crate::report::{self, chrome};

/// Name of an operation's root span (the daemon's
/// `trident_telemetry::operation::OPERATION_SPAN_NAME`).
const OPERATION_SPAN_NAME: &str = "servicing_operation";

/// One span of the tree.
#[derive(Debug, Clone, Serialize)]
pub struct SpanNode {
    pub name: String,
    pub span_id: String,
    pub target: String,
    pub start: Option<String>,
    pub duration_ms: Option<f64>,
    /// ok, error, or running (no close record yet).
    pub status: String,
    /// The host boot it ran in (empty when unknown).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub boot_id: String,
    /// The RPC of an operation's root span (`servicing_operation`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc: Option<String>,
    /// Set on the first span after a reboot: the boots and the time
    /// without records between them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reboot: Option<RebootGap>,
    pub children: Vec<SpanNode>,
}

/// A reboot before a span of the tree.
#[derive(Debug, Clone, Serialize)]
pub struct RebootGap {
    pub from_boot: String,
    pub to_boot: String,
    pub gap_ms: f64,
}

impl From<&Reboot> for RebootGap {
    fn from(reboot: &Reboot) -> Self {
        RebootGap {
            from_boot: reboot.from_boot.clone(),
            to_boot: reboot.to_boot.clone(),
            gap_ms: reboot.gap_us() as f64 / 1000.0,
        }
    }
}

pub async fn run(ctx: &Ctx, args: &TracesArgs) -> CliResult<Exit> {
    let mut client = TelemetryServiceClient::new(ctx.channel().await?);
    let operations = crate::client::list_operations(&mut client).await?;
    let operation_id = match &args.operation {
        Some(id) => id.clone(),
        None => operations
            .last()
            .map(|op| op.operation_id.clone())
            .ok_or_else(|| CliError::Usage("the daemon knows no servicing operation yet".into()))?,
    };
    let trace = trace_operations(&operations, &operation_id);
    let mut spans = Vec::new();
    let mut boots = HashMap::new();
    for op in &trace {
        for (span, boot_id) in operation_spans(&mut client, &op.operation_id).await? {
            boots.entry(span.span_id.clone()).or_insert(boot_id);
            spans.push(span);
        }
    }
    let mut flat = report::spans::spans(&spans);
    for span in &mut flat {
        span.boot_id = boots.get(&span.span_id).cloned().unwrap_or_default();
    }
    let reboots = reboots(&flat);
    if args.format == TraceFormat::Chrome {
        let trace = chrome::trace(&operation_id, &flat);
        let text = serde_json::to_string_pretty(&trace)
            .map_err(|e| CliError::Local(format!("cannot encode the trace: {e}")))?;
        output::emit(&format!("{text}\n"), None)?;
        return Ok(Exit::Success);
    }
    let roots = build_tree(&spans, &boots, &reboots);
    let text = match ctx.format(args.output, OutputFormat::Human) {
        OutputFormat::Human => {
            let mut text = format!("operation {operation_id}\n");
            for op in trace.iter().filter(|op| op.operation_id != operation_id) {
                text.push_str(&format!(
                    "  same trace: {} operation {}\n",
                    op.rpc, op.operation_id
                ));
            }
            for (i, root) in roots.iter().enumerate() {
                tree_lines(root, "", i + 1 == roots.len(), &mut text);
            }
            if roots.is_empty() {
                text.push_str("(no span records)\n");
            }
            text
        }
        other => output::encode(&roots, other)?,
    };
    output::emit(&text, None)?;
    Ok(Exit::Success)
}

/// The operations of `operation_id`'s trace across reboots, oldest first:
/// the operation it continues (back to the first), and every operation that
/// continues one of them. Just the operation when the daemon does not list it.
pub fn trace_operations(
    operations: &[OperationSummary],
    operation_id: &str,
) -> Vec<OperationSummary> {
    let by_id: HashMap<&str, &OperationSummary> = operations
        .iter()
        .map(|op| (op.operation_id.as_str(), op))
        .collect();
    let Some(mut first) = by_id.get(operation_id).copied() else {
        return vec![OperationSummary {
            operation_id: operation_id.to_owned(),
            ..OperationSummary::default()
        }];
    };
    let mut seen = HashSet::from([first.operation_id.as_str()]);
    while let Some(earlier) = by_id.get(first.continues_operation_id.as_str()) {
        if !seen.insert(earlier.operation_id.as_str()) {
            break;
        }
        first = earlier;
    }
    let mut members = HashSet::from([first.operation_id.as_str()]);
    // Oldest first, so a continuation is met after what it continues.
    for op in operations {
        if members.contains(op.continues_operation_id.as_str()) {
            members.insert(op.operation_id.as_str());
        }
    }
    operations
        .iter()
        .filter(|op| members.contains(op.operation_id.as_str()))
        .cloned()
        .collect()
}

/// The span records of one operation with the boot each was emitted in.
async fn operation_spans(
    client: &mut TelemetryServiceClient<Channel>,
    operation_id: &str,
) -> CliResult<Vec<(SpanRecord, String)>> {
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                operation_id: operation_id.to_owned(),
                snapshot: true,
                with_boot_ids: true,
                ..WatchOptions::default()
            }),
            kinds: vec![RecordKind::Span as i32],
        })
        .await
        .map_err(|s| CliError::rpc("Watch", s))?
        .into_inner();
    let mut spans = Vec::new();
    while let Some(response) = stream.next().await {
        for event in response.map_err(|s| CliError::rpc("Watch", s))?.events {
            if let Some(stream_event::Event::Record(rec)) = event.event
                && let Some(record::Record::Span(span)) = rec.record
            {
                spans.push((span, rec.boot_id));
            }
        }
    }
    Ok(spans)
}

/// Builds the span forest from open/close records (order of opening), each
/// span with its boot (`boots`: span id to boot id) and the reboot before it.
pub fn build_tree(
    records: &[SpanRecord],
    boots: &HashMap<String, String>,
    reboots: &[Reboot],
) -> Vec<SpanNode> {
    let mut order: Vec<String> = Vec::new();
    let mut nodes: HashMap<String, (String, SpanNode)> = HashMap::new();
    for rec in records {
        let entry = nodes.entry(rec.span_id.clone()).or_insert_with(|| {
            order.push(rec.span_id.clone());
            (
                rec.parent_span_id.clone(),
                SpanNode {
                    name: rec.name.clone(),
                    span_id: rec.span_id.clone(),
                    target: rec.target.clone(),
                    start: None,
                    duration_ms: None,
                    status: "running".into(),
                    boot_id: boots.get(&rec.span_id).cloned().unwrap_or_default(),
                    rpc: None,
                    reboot: reboots
                        .iter()
                        .find(|r| r.first_span_id == rec.span_id)
                        .map(RebootGap::from),
                    children: Vec::new(),
                },
            )
        });
        if rec.name == OPERATION_SPAN_NAME && entry.1.rpc.is_none() {
            entry.1.rpc = rec
                .fields
                .iter()
                .find(|f| f.name == "rpc")
                .map(report::spans::field_text);
        }
        let start: Option<SystemTime> = system_time(rec.start.as_ref());
        if let Some(start) = start {
            entry.1.start = Some(format::timestamp(start));
        }
        if rec.event() == SpanEvent::Closed {
            entry.1.duration_ms = rec
                .duration
                .as_ref()
                .map(|d| d.seconds as f64 * 1000.0 + f64::from(d.nanos) / 1e6);
            entry.1.status = match rec.status() {
                SpanStatus::Error => "error",
                _ => "ok",
            }
            .into();
        }
    }
    // Attach children bottom-up, in opening order.
    let mut roots = Vec::new();
    for id in order.iter().rev() {
        let Some((parent, node)) = nodes.remove(id) else {
            continue;
        };
        match nodes.get_mut(&parent) {
            Some((_, parent_node)) => parent_node.children.insert(0, node),
            None => roots.insert(0, node),
        }
    }
    roots
}

fn tree_lines(node: &SpanNode, prefix: &str, last: bool, out: &mut String) {
    tree_node(node, prefix, last, true, out);
}

fn tree_node(node: &SpanNode, prefix: &str, last: bool, root: bool, out: &mut String) {
    let branch = if root {
        ""
    } else if last {
        "└─ "
    } else {
        "├─ "
    };
    if let Some(reboot) = &node.reboot {
        let mark = if root { "" } else { "├─ " };
        out.push_str(&format!(
            "{prefix}{mark}-- reboot: boot {} -> boot {}, {} without records --\n",
            reboot.from_boot,
            reboot.to_boot,
            format::duration(Duration::from_secs_f64(reboot.gap_ms / 1000.0)),
        ));
    }
    let duration = node
        .duration_ms
        .map(|ms| format::duration(Duration::from_secs_f64(ms / 1000.0)))
        .unwrap_or_else(|| "-".into());
    let name = match &node.rpc {
        Some(rpc) => format!("{} {rpc}", node.name),
        None => node.name.clone(),
    };
    let boot = if node.reboot.is_some() || (root && !node.boot_id.is_empty()) {
        format!("  boot {}", node.boot_id)
    } else {
        String::new()
    };
    out.push_str(&format!(
        "{prefix}{branch}{name}  {duration}  {}{boot}\n",
        node.status
    ));
    let child_prefix = if branch.is_empty() {
        prefix.to_string()
    } else if last {
        format!("{prefix}   ")
    } else {
        format!("{prefix}│  ")
    };
    for (i, child) in node.children.iter().enumerate() {
        tree_node(
            child,
            &child_prefix,
            i + 1 == node.children.len(),
            false,
            out,
        );
    }
}
