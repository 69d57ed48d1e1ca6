//! `trident traces [--operation ID] [--format chrome]`: the span tree of an
//! operation with durations and status, from the bus (and journal) span
//! records; or the same spans as Chrome trace-event JSON (`crate::report::chrome`).

use std::collections::HashMap;
use std::time::SystemTime;

use serde::Serialize;
use tokio_stream::StreamExt;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    ListOperationsRequest, RecordKind, SpanEvent, SpanRecord, SpanStatus, WatchOptions,
    WatchRequest, record, stream_event,
};

use crate::args::{OutputFormat, TraceFormat, TracesArgs};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::output;
use crate::render::event::system_time;
use crate::render::format;
use crate::report::{self, chrome};

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
    pub children: Vec<SpanNode>,
}

pub async fn run(ctx: &Ctx, args: &TracesArgs) -> CliResult<Exit> {
    let mut client = TelemetryServiceClient::new(ctx.channel().await?);
    let operation_id = match &args.operation {
        Some(id) => id.clone(),
        None => client
            .list_operations(ListOperationsRequest {})
            .await
            .map_err(|s| CliError::rpc("ListOperations", s))?
            .into_inner()
            .operations
            .last()
            .map(|op| op.operation_id.clone())
            .ok_or_else(|| CliError::Usage("the daemon knows no servicing operation yet".into()))?,
    };
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                operation_id: operation_id.clone(),
                snapshot: true,
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
                spans.push(span);
            }
        }
    }
    if args.format == TraceFormat::Chrome {
        let trace = chrome::trace(&operation_id, &report::spans::spans(&spans));
        let text = serde_json::to_string_pretty(&trace)
            .map_err(|e| CliError::Local(format!("cannot encode the trace: {e}")))?;
        output::emit(&format!("{text}\n"), None)?;
        return Ok(Exit::Success);
    }
    let roots = build_tree(&spans);
    let text = match ctx.format(args.output, OutputFormat::Human) {
        OutputFormat::Human => {
            let mut text = format!("operation {operation_id}\n");
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

/// Builds the span forest from open/close records (order of opening).
pub fn build_tree(records: &[SpanRecord]) -> Vec<SpanNode> {
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
                    children: Vec::new(),
                },
            )
        });
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
    let duration = node
        .duration_ms
        .map(|ms| format::duration(std::time::Duration::from_secs_f64(ms / 1000.0)))
        .unwrap_or_else(|| "-".into());
    out.push_str(&format!(
        "{prefix}{branch}{}  {duration}  {}\n",
        node.name, node.status
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
