//! The sections of `report.html` below the waterfall: phases with
//! throughput, the structured error, recent logs and the Host Status. All
//! text passes through [`escape`].

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use trident_proto::v1::{ErrorReport, LogLevel, LogRecord, ProgressRecord, ProgressUnit, Record};

use super::escape::escape;
use super::spans::micros;
use crate::render::format;

/// How many of the operation's last log records the page lists.
pub const RECENT_LOGS: usize = 200;

/// Phases (last record of each, in order of first appearance) with done /
/// total, duration and, for byte phases, throughput in bytes/s.
pub(super) fn phases_section(progress: &[&ProgressRecord]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut last: HashMap<&str, &ProgressRecord> = HashMap::new();
    for p in progress {
        if last.insert(&p.phase_id, p).is_none() {
            order.push(&p.phase_id);
        }
    }
    let mut out = String::from(
        "<h2>Phases</h2>\n<table id=\"phases\"><tr><th>phase</th><th>state</th>\
         <th>done</th><th>duration</th><th>throughput</th></tr>\n",
    );
    for id in order {
        out.push_str(&phase_row(last[id]));
    }
    if progress.is_empty() {
        out.push_str("<tr><td colspan=\"5\" class=\"muted\">no progress records</td></tr>\n");
    }
    out.push_str("</table>\n");
    out
}

fn phase_row(p: &ProgressRecord) -> String {
    let bytes = p.unit() == ProgressUnit::Bytes;
    let amount = |n: u64| {
        if bytes {
            indicatif::BinaryBytes(n).to_string()
        } else {
            n.to_string()
        }
    };
    let done = match p.total {
        Some(total) => format!("{} / {}", amount(p.current), amount(total)),
        None => amount(p.current),
    };
    let elapsed = match (micros(p.started.as_ref()), micros(p.updated.as_ref())) {
        (Some(start), Some(end)) if end > start => Some(Duration::from_micros(end - start)),
        _ => None,
    };
    let throughput = match elapsed {
        Some(d) if bytes && p.current > 0 => {
            let per_sec = p.current as f64 / d.as_secs_f64();
            format!(
                "{} ({per_sec:.0} bytes/s)",
                format::rate(ProgressUnit::Bytes, per_sec)
            )
        }
        _ => "-".into(),
    };
    format!(
        "<tr class=\"phase\"><td>{name}</td><td>{state}</td><td>{done}</td>\
         <td>{duration}</td><td>{throughput}</td></tr>\n",
        name = escape(if p.name.is_empty() {
            &p.phase_id
        } else {
            &p.name
        }),
        state = escape(&enum_word(p.state().as_str_name(), "PHASE_STATE_")),
        done = escape(&done),
        duration = escape(&elapsed.map_or("-".into(), format::duration)),
        throughput = escape(&throughput),
    )
}

/// The error: the operation's error report if the records carry one, else
/// the daemon's last error as `trident get last-error` renders it.
pub(super) fn error_section(report: Option<&ErrorReport>, last_error: Option<&Value>) -> String {
    let mut out = String::from("<h2>Error</h2>\n<div id=\"error\">\n");
    match (report, last_error) {
        (Some(e), _) => {
            let location = e
                .location
                .as_ref()
                .map(|l| format!("{}:{}", l.path, l.line));
            out.push_str(&error_head(&e.subkind, &e.message, location.as_deref()));
            let context: Vec<String> = e.context.iter().map(|c| c.message.clone()).collect();
            out.push_str(&list("Context", "error-context", &context));
            out.push_str(&list("Causes", "error-causes", &e.causes));
            let logs: Vec<String> = e
                .recent_logs
                .iter()
                .map(|l| {
                    let level = enum_word(l.level().as_str_name(), "LOG_LEVEL_");
                    format!("{level} {}: {}", l.target, l.message)
                })
                .collect();
            out.push_str(&list("Recent logs at the failure", "error-logs", &logs));
        }
        (None, Some(view)) if !view.is_null() => {
            let text = |key: &str| view[key].as_str().unwrap_or_default().to_string();
            let strings = |key: &str| -> Vec<String> {
                view[key]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|v| {
                                v.as_str().map_or_else(
                                    || v["message"].as_str().unwrap_or_default().to_string(),
                                    str::to_string,
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            out.push_str(&error_head(
                &text("error"),
                &text("message"),
                Some(&text("location")),
            ));
            out.push_str(&list("Context", "error-context", &strings("context")));
            out.push_str(&list("Causes", "error-causes", &strings("causes")));
            out.push_str(&list(
                "Recent logs at the failure",
                "error-logs",
                &strings("recent_logs"),
            ));
        }
        _ => out.push_str("<p class=\"muted\">no error</p>\n"),
    }
    out.push_str("</div>\n");
    out
}

fn error_head(subkind: &str, message: &str, location: Option<&str>) -> String {
    format!(
        "<p class=\"error\"><b id=\"error-subkind\">{}</b>: <span id=\"error-message\">{}</span></p>\n\
         <p class=\"muted\">at {}</p>\n",
        escape(subkind),
        escape(message),
        escape(location.unwrap_or("-")),
    )
}

fn list(title: &str, id: &str, items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = format!("<h3>{}</h3>\n<ol id=\"{id}\">\n", escape(title));
    for item in items {
        out.push_str(&format!("<li>{}</li>\n", escape(item)));
    }
    out.push_str("</ol>\n");
    out
}

/// The operation's last [`RECENT_LOGS`] log records.
pub(super) fn logs_section(logs: &[(&Record, &LogRecord)]) -> String {
    let skip = logs.len().saturating_sub(RECENT_LOGS);
    let mut out = format!(
        "<h2>Recent logs ({} of {})</h2>\n<table id=\"logs\">\n",
        logs.len() - skip,
        logs.len()
    );
    for (rec, log) in &logs[skip..] {
        let class = match log.level() {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            _ => "",
        };
        let time = crate::render::event::system_time(rec.timestamp.as_ref())
            .map(format::timestamp)
            .unwrap_or_default();
        out.push_str(&format!(
            "<tr class=\"{class}\"><td class=\"muted\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&time),
            escape(&enum_word(log.level().as_str_name(), "LOG_LEVEL_")),
            escape(&log.target),
            escape(&log.message),
        ));
    }
    out.push_str("</table>\n");
    out
}

/// `PHASE_STATE_DONE` → `done`: an enum value name as a reader's word.
fn enum_word(name: &str, prefix: &str) -> String {
    name.strip_prefix(prefix)
        .unwrap_or(name)
        .to_ascii_lowercase()
}

/// The full Host Status as indented JSON.
pub(super) fn host_status_section(status: Option<&Value>) -> String {
    let text = match status {
        Some(v) if !v.is_null() => serde_json::to_string_pretty(v).unwrap_or_default(),
        _ => "(not collected)".into(),
    };
    format!(
        "<h2>Host Status</h2>\n<pre id=\"host-status\">{}</pre>\n",
        escape(&text)
    )
}
