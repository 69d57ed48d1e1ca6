//! `trident logs`: upstream Trident's history on a host it serviced (its
//! full log, `/var/log/trident-full.log`, read by the daemon:
//! `TelemetryService.ReadUpstreamLog`), printed before the daemon's own
//! records and marked `upstream`. The two agents never run at once and
//! `trident logs` shows the daemon's current run, so upstream's records
//! are the older ones: printing them first keeps time order.
//!
//! Best effort: without the RPC (an older daemon) or without a daemon
//! (its own stream, next, says so) nothing is printed; any other failure
//! is a notice on stderr and the daemon's records follow.

use std::time::SystemTime;

use tokio_stream::StreamExt;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    ReadUpstreamLogRequest, Record, RecordKind, UpstreamLogSummary, WatchOptions, WatchRequest,
    stream_event,
};

use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult};
use crate::render::event::system_time;

/// What to ask upstream's log for.
#[derive(Debug)]
pub struct UpstreamQuery {
    pub min_level: i32,
    pub target_prefixes: Vec<String>,
    pub since: Option<SystemTime>,
    /// The last N records (after the daemon's own are counted).
    pub tail: Option<u32>,
}

/// Hands upstream's records to `show`, a batch at a time (it prints them;
/// false when whoever reads them is gone, which ends the reading).
/// Returns what the last `show` said.
pub async fn print(
    ctx: &Ctx,
    query: UpstreamQuery,
    show: impl FnMut(&[Record]) -> CliResult<bool>,
) -> CliResult<bool> {
    match stream(ctx, query, show).await {
        Ok(going_on) => Ok(going_on),
        Err(CliError::Rpc { status, .. }) if status.code() == tonic::Code::Unimplemented => {
            Ok(true)
        }
        Err(err @ CliError::Local(_)) => Err(err),
        // The daemon's own stream, next, says it in its one line (or
        // reconnects, with -f).
        Err(CliError::Connect { .. }) => Ok(true),
        Err(err) => {
            eprintln!("trident: upstream Trident's log not shown: {err}");
            Ok(true)
        }
    }
}

async fn stream(
    ctx: &Ctx,
    query: UpstreamQuery,
    mut show: impl FnMut(&[Record]) -> CliResult<bool>,
) -> CliResult<bool> {
    let request = ReadUpstreamLogRequest {
        min_level: query.min_level,
        target_prefixes: query.target_prefixes,
        since: query.since.map(prost_types::Timestamp::from),
        tail: query.tail,
        max_batch: 0,
    };
    let what = "ReadUpstreamLog";
    let mut stream = TelemetryServiceClient::new(ctx.channel().await?)
        .read_upstream_log(request)
        .await
        .map_err(|s| CliError::rpc(what, s))?
        .into_inner();
    while let Some(response) = stream.next().await {
        let response = response.map_err(|s| CliError::rpc(what, s))?;
        if !show(&response.records)? {
            return Ok(false);
        }
        if let Some(summary) = response.summary {
            notices(&summary);
        }
    }
    Ok(true)
}

/// What a support engineer should know about the file, on stderr.
fn notices(summary: &UpstreamLogSummary) {
    if !summary.error.is_empty() {
        eprintln!(
            "trident: upstream Trident's log {}: {} (records after it are not shown)",
            summary.path, summary.error
        );
    }
    if summary.unparsed_lines > 0 {
        eprintln!(
            "trident: upstream Trident's log {}: {} of {} lines are not its records \
             (shown as they are, marked \"not parsed\")",
            summary.path, summary.unparsed_lines, summary.lines
        );
    }
}

/// How many of the daemon's records `-n N` shows (those at or after
/// `since`), so upstream's fill only the rest of the N. Read as a snapshot
/// just before the real stream: records logged in between can make the
/// total a few more than N.
pub async fn daemon_records_in_tail(
    ctx: &Ctx,
    options: WatchOptions,
    since: Option<SystemTime>,
) -> CliResult<u32> {
    let mut stream = TelemetryServiceClient::new(ctx.channel().await?)
        .watch(WatchRequest {
            options: Some(WatchOptions {
                snapshot: true,
                ..options
            }),
            kinds: vec![RecordKind::Log as i32],
        })
        .await
        .map_err(|s| CliError::rpc("Watch", s))?
        .into_inner();
    let mut count = 0u32;
    while let Some(response) = stream.next().await {
        let response = response.map_err(|s| CliError::rpc("Watch", s))?;
        for event in &response.events {
            let Some(stream_event::Event::Record(rec)) = &event.event else {
                continue;
            };
            let at = system_time(rec.timestamp.as_ref());
            let shown = match (since, at) {
                (Some(since), Some(at)) => at >= since,
                _ => true,
            };
            count = count.saturating_add(u32::from(shown));
        }
    }
    Ok(count)
}
