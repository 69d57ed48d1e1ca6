//! `trident logs`: the daemon's log records, like journalctl. With
//! --cursor-file the file is updated as records are shown, so the next run
//! resumes exactly after the last record printed. `--boot` selects one boot
//! of the host and `--list-boots` lists them (`super::boots`); the human
//! output marks each reboot in the stream. Upstream Trident's records
//! (`super::upstream_log`) come first, marked `upstream`, unless the
//! output resumes after a cursor or is limited to an operation or a boot
//! (upstream's records have neither).

use std::io::Write;
use std::time::{Duration, SystemTime};

use serde_json::json;
use tokio_stream::StreamExt;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    Cursor, LogLevel, LogOrigin, LogRecord, Record, RecordKind, StreamEvent, WatchOptions,
    WatchRequest, field, record, stream_event,
};

use super::boots;
use super::upstream_log::{self, UpstreamQuery};
use crate::args::{LogsArgs, OutputFormat};
use crate::ctx::Ctx;
use crate::cursor;
use crate::exit::{CliError, CliResult, Exit};
use crate::live::progress::max_level;
use crate::render::event::system_time;
use crate::render::format;

/// Lines shown by `logs -f` without -n (journalctl's default).
const FOLLOW_DEFAULT_LINES: u32 = 10;
const RECONNECT_DELAY: Duration = Duration::from_secs(1);

pub async fn run(ctx: &Ctx, args: &LogsArgs) -> CliResult<Exit> {
    let format = ctx.format(args.output, OutputFormat::Human);
    if args.list_boots {
        return boots::print_list(ctx, format).await;
    }
    // A past boot has nothing more to come: its stream ends, even with -f.
    let (boot_id, past_boot) = match &args.boot {
        Some(wanted) => {
            let boot = boots::resolve(ctx, wanted).await?;
            (boot.boot_id, !boot.current)
        }
        None => (String::new(), false),
    };
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let mut after = match (&args.after_cursor, &args.cursor_file) {
        (Some(text), _) => Some(cursor::parse(text)?),
        (None, Some(path)) => cursor::read_file(path)?,
        (None, None) => None,
    };
    // A boot's stream starts at the boot's first record.
    let tail = match (args.lines, args.follow, &args.operation) {
        _ if args.boot.is_some() => None,
        (Some(n), _, _) => Some(n),
        (None, true, None) => Some(FOLLOW_DEFAULT_LINES),
        (None, false, None) => Some(u32::MAX),
        (None, _, Some(_)) => None,
    };
    let min_level = args.level.and_then(max_level).map_or(0, |l| l as i32);
    let filters = WatchOptions {
        min_level,
        target_prefixes: args.target.clone(),
        operation_id: args.operation.clone().unwrap_or_default(),
        boot_id: boot_id.clone(),
        with_boot_ids: true,
        ..WatchOptions::default()
    };
    // Upstream's records precede every cursor and have no operation or boot.
    if after.is_none() && args.operation.is_none() && args.boot.is_none() {
        let tail = match tail {
            Some(u32::MAX) | None => None,
            Some(n) => {
                let ours = WatchOptions {
                    tail: Some(n),
                    ..filters.clone()
                };
                // Unreachable: none of upstream's; the stream below
                // reports it (or reconnects, with -f).
                let shown = upstream_log::daemon_records_in_tail(ctx, ours, since).await;
                Some(n.saturating_sub(shown.unwrap_or(n)))
            }
        };
        let query = UpstreamQuery {
            min_level,
            target_prefixes: args.target.clone(),
            since,
            tail,
        };
        let show = |records: &[Record]| write_stdout(&upstream_lines(records, format));
        if tail != Some(0) && !upstream_log::print(ctx, query, show).await? {
            return Ok(Exit::Success);
        }
    }
    let mut first = true;
    let mut boot_seen = None;
    loop {
        let options = WatchOptions {
            after: after.clone(),
            tail: if after.is_none() && first { tail } else { None },
            snapshot: !args.follow,
            ..filters.clone()
        };
        first = false;
        let mut position = Position {
            after: &mut after,
            boot: &mut boot_seen,
        };
        let result = stream_logs(ctx, options, format, since, &mut position, args).await;
        match result {
            Ok(Ended::ReaderGone) => return Ok(Exit::Success),
            Ok(Ended::Stream) if !args.follow || past_boot => return Ok(Exit::Success),
            Ok(Ended::Stream) => eprintln!("trident: the log stream ended; reconnecting"),
            Err(err) if args.follow && retryable(&err) => {
                eprintln!("trident: {err}; reconnecting");
            }
            Err(err) => return Err(err),
        }
        tokio::time::sleep(RECONNECT_DELAY).await;
    }
}

/// Where the output is: the cursor after the last record shown, and the
/// boot of the last record shown (a record of another boot is a reboot).
struct Position<'a> {
    after: &'a mut Option<Cursor>,
    boot: &'a mut Option<String>,
}

/// Why one stream of log records ended without an error.
enum Ended {
    /// The daemon ended it (snapshot done, or the daemon went away cleanly).
    Stream,
    /// Whoever reads our stdout is gone (`trident logs | head`).
    ReaderGone,
}

/// With -f, what a reconnect may cure: the daemon gone or restarting,
/// the connection broken. Not: bad input, permissions, missing RPCs.
fn retryable(err: &CliError) -> bool {
    match err {
        CliError::Connect { .. } | CliError::StreamLost(_) => true,
        CliError::Rpc { status, .. } => matches!(
            status.code(),
            tonic::Code::Unavailable
                | tonic::Code::Unknown
                | tonic::Code::Internal
                | tonic::Code::Cancelled
                | tonic::Code::Aborted
                | tonic::Code::DeadlineExceeded
        ),
        _ => false,
    }
}

async fn stream_logs(
    ctx: &Ctx,
    options: WatchOptions,
    format: OutputFormat,
    since: Option<SystemTime>,
    position: &mut Position<'_>,
    args: &LogsArgs,
) -> CliResult<Ended> {
    let mut stream = TelemetryServiceClient::new(ctx.channel().await?)
        .watch(WatchRequest {
            options: Some(options),
            kinds: vec![RecordKind::Log as i32],
        })
        .await
        .map_err(|s| CliError::rpc("Watch", s))?
        .into_inner();
    while let Some(response) = stream.next().await {
        let response = response.map_err(|s| CliError::rpc("Watch", s))?;
        let out: String = response
            .events
            .iter()
            .map(|event| event_text(event, format, since, position))
            .collect();
        if !write_stdout(&out)? {
            return Ok(Ended::ReaderGone);
        }
        // The cursor file moves only after the lines are out.
        if let (Some(path), Some(c)) = (&args.cursor_file, position.after.as_ref()) {
            cursor::write_file(path, c)?;
        }
    }
    Ok(Ended::Stream)
}

/// The text of one streamed event (log line, gap or run change notice,
/// reboot mark), moving the position past it; empty for what is not shown.
fn event_text(
    event: &StreamEvent,
    format: OutputFormat,
    since: Option<SystemTime>,
    position: &mut Position<'_>,
) -> String {
    let after = &mut *position.after;
    match &event.event {
        Some(stream_event::Event::Record(rec)) => {
            *after = rec.cursor.clone().or(after.take());
            let Some(record::Record::Log(log)) = &rec.record else {
                return String::new();
            };
            let at = system_time(rec.timestamp.as_ref());
            if let (Some(since), Some(at)) = (since, at)
                && at < since
            {
                return String::new();
            }
            let mark = reboot_mark(position.boot, &rec.boot_id, format);
            mark + &log_line(log, rec, at, format)
        }
        Some(stream_event::Event::Gap(gap)) => {
            *after = gap.last_missing.clone().or(after.take());
            match format {
                OutputFormat::Json => format!(
                    "{}\n",
                    json!({"type": "gap", "count": gap.count,
                    "first_missing": gap.first_missing.as_ref().map(cursor::format),
                    "last_missing": gap.last_missing.as_ref().map(cursor::format)})
                ),
                _ => format!(
                    "-- gap: {} records not delivered ({:?}) --\n",
                    gap.count,
                    gap.reason()
                ),
            }
        }
        Some(stream_event::Event::RunChange(change)) => match format {
            OutputFormat::Json => format!(
                "{}\n",
                json!({"type": "run_change",
                "previous_run_id": change.previous_run_id, "current_run_id": change.current_run_id})
            ),
            _ => format!("-- daemon restarted: run {} --\n", change.current_run_id),
        },
        _ => String::new(),
    }
}

/// A line saying the host rebooted, when a record's boot differs from the
/// last shown one (human output; JSON lines carry `boot_id`).
fn reboot_mark(seen: &mut Option<String>, boot_id: &str, format: OutputFormat) -> String {
    if boot_id.is_empty() {
        return String::new();
    }
    let previous = seen.replace(boot_id.to_owned());
    match previous {
        Some(previous) if previous != boot_id && format == OutputFormat::Human => {
            format!("-- reboot: boot {boot_id} (previous boot {previous}) --\n")
        }
        _ => String::new(),
    }
}

/// The lines of upstream's records (`super::upstream_log`).
fn upstream_lines(records: &[Record], format: OutputFormat) -> String {
    records
        .iter()
        .filter_map(|rec| match &rec.record {
            Some(record::Record::Log(log)) => Some(log_line(
                log,
                rec,
                system_time(rec.timestamp.as_ref()),
                format,
            )),
            _ => None,
        })
        .collect()
}

/// Writes `out` to stdout; false when the reader went away (`logs | head`).
fn write_stdout(out: &str) -> CliResult<bool> {
    if out.is_empty() {
        return Ok(true);
    }
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(CliError::Local(format!("cannot write to stdout: {e}"))),
    }
}

/// One record as a line of output. Upstream's records say so: `origin`
/// in JSON (`tridentd` or `upstream`), `upstream` before the target in
/// human output; a line of upstream's log that did not parse has no
/// level (JSON null, `?`) and says "not parsed".
fn log_line(log: &LogRecord, rec: &Record, at: Option<SystemTime>, format: OutputFormat) -> String {
    let c = rec.cursor.as_ref();
    let upstream = log.origin() == LogOrigin::Upstream;
    let level =
        (!upstream || log.level() != LogLevel::Unspecified).then(|| format::level(log.level()));
    match format {
        OutputFormat::Json | OutputFormat::Yaml => {
            let fields: serde_json::Map<String, serde_json::Value> = log
                .fields
                .iter()
                .map(|f| {
                    let v = match &f.value {
                        Some(field::Value::Text(t)) => json!(t),
                        Some(field::Value::Signed(n)) => json!(n),
                        Some(field::Value::Unsigned(n)) => json!(n),
                        Some(field::Value::Real(n)) => json!(n),
                        Some(field::Value::Boolean(b)) => json!(b),
                        None => serde_json::Value::Null,
                    };
                    (f.name.clone(), v)
                })
                .collect();
            format!(
                "{}\n",
                json!({
                    "cursor": c.map(cursor::format),
                    "timestamp": at.map(format::timestamp),
                    "level": level,
                    "target": log.target,
                    "module": log.module,
                    "message": log.message,
                    "location": format::location(log.location.as_ref()),
                    "fields": fields,
                    "trace_id": log.trace_id,
                    "span_id": log.span_id,
                    "operation_id": log.operation_id,
                    "boot_id": rec.boot_id,
                    "origin": if upstream { "upstream" } else { "tridentd" },
                })
            )
        }
        OutputFormat::Human => {
            let when = at.map_or_else(|| "-".to_owned(), format::timestamp);
            let op = if log.operation_id.is_empty() {
                String::new()
            } else {
                format!(" [{}]", format::short_id(&log.operation_id))
            };
            let level = level.unwrap_or("?").to_ascii_uppercase();
            let target = match (upstream, level.as_str()) {
                (false, _) => log.target.clone(),
                (true, "?") => "upstream (not parsed)".to_owned(),
                (true, _) => format!("upstream {}", log.target),
            };
            format!(
                "{when} {level:<5} {target}: {}{op}\n",
                log.message.trim_end()
            )
        }
    }
}

/// RFC 3339 time, or a duration ago ("10m", "2h").
fn parse_since(text: &str) -> CliResult<SystemTime> {
    if let Ok(t) = humantime::parse_rfc3339_weak(text) {
        return Ok(t);
    }
    if let Ok(ago) = humantime::parse_duration(text) {
        return Ok(SystemTime::now() - ago);
    }
    Err(CliError::Usage(format!(
        "--since {text:?}: expected an RFC 3339 time (2026-01-02T15:04:05Z) or a duration ago (10m)"
    )))
}
