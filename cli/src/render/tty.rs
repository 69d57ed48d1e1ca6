//! The terminal view: one frame (a list of lines) computed from the model.
//! The driver in `live::progress` redraws the frame in place; this file
//! only decides what the frame says.

use std::time::SystemTime;

use trident_proto::v1::{LogLevel, PhaseState, StatusCode};

use super::format;
use super::model::{Model, Notice, PhaseView};

/// Log lines shown under the running phase.
pub const LOG_LINES_SHOWN: usize = 5;
/// Width of a progress bar in cells.
const BAR_WIDTH: usize = 24;

/// How the frame is drawn.
#[derive(Debug, Clone, Copy)]
pub struct TtyStyle {
    pub color: bool,
    /// Terminal columns; lines are cut to fit.
    pub width: usize,
    /// Terminal rows; the frame keeps its last rows when taller.
    pub height: usize,
}

impl Default for TtyStyle {
    fn default() -> Self {
        TtyStyle {
            color: false,
            width: 100,
            height: 40,
        }
    }
}

#[derive(Clone, Copy)]
enum Paint {
    Green,
    Red,
    Yellow,
    Dim,
    Bold,
}

fn paint(style: &TtyStyle, paint: Paint, text: &str) -> String {
    if !style.color {
        return text.to_string();
    }
    let code = match paint {
        Paint::Green => "32",
        Paint::Red => "31",
        Paint::Yellow => "33",
        Paint::Dim => "2",
        Paint::Bold => "1",
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// The live frame: operation line, phases (bars for the running ones),
/// the last log lines under the running phase, stream notices.
pub fn frame(model: &Model, now: SystemTime, style: &TtyStyle) -> Vec<String> {
    let mut lines = vec![operation_line(model, now, style)];
    if let Some(line) = overall_line(model, now, style) {
        lines.push(line);
    }
    let running = model.running_phase_index();
    for (i, phase) in model.phases.iter().enumerate() {
        lines.push(phase_line(phase, now, style));
        if Some(i) == running {
            let indent = "  ".repeat(phase.depth + 3);
            let skip = phase.logs.len().saturating_sub(LOG_LINES_SHOWN);
            for log in phase.logs.iter().skip(skip) {
                let text = format!(
                    "{indent}│ {} {}",
                    format::level(log.level),
                    log.message.trim_end()
                );
                lines.push(paint_log(style, log.level, &text));
            }
        }
    }
    if running.is_none() && model.outcome.is_none() {
        let skip = model.loose_logs.len().saturating_sub(LOG_LINES_SHOWN);
        for log in model.loose_logs.iter().skip(skip) {
            let text = format!(
                "  │ {} {}",
                format::level(log.level),
                log.message.trim_end()
            );
            lines.push(paint_log(style, log.level, &text));
        }
    }
    for notice in &model.notices {
        lines.push(paint(
            style,
            Paint::Yellow,
            &format!("! {}", notice_text(notice)),
        ));
    }
    let lines: Vec<String> = lines.into_iter().map(|l| cut(&l, style.width)).collect();
    let keep = style.height.max(3).saturating_sub(1);
    let skip = lines.len().saturating_sub(keep);
    lines.into_iter().skip(skip).collect()
}

/// Lines printed once after the final frame: the closing summary and, on
/// failure, the structured error and the last log lines of the failed phase.
pub fn failure_block(model: &Model, style: &TtyStyle) -> Vec<String> {
    let mut lines = Vec::new();
    let Some(outcome) = &model.outcome else {
        return lines;
    };
    lines.push(super::summary::summary(model, outcome));
    if outcome.status == StatusCode::Success {
        return lines;
    }
    match model.error_view() {
        Some(view) => {
            for (i, line) in view.text_lines().into_iter().enumerate() {
                let p = if i == 0 { Paint::Red } else { Paint::Dim };
                lines.push(paint(style, p, &line));
            }
        }
        None => lines.push(paint(
            style,
            Paint::Red,
            "error: the operation failed without an error report",
        )),
    }
    let (title, logs) = match model.failed_phase() {
        Some(phase) => (
            format!("last log lines of phase \"{}\":", phase.name),
            &phase.logs,
        ),
        None => ("last log lines:".to_string(), &model.loose_logs),
    };
    if !logs.is_empty() {
        lines.push(title);
        let skip = logs.len().saturating_sub(LOG_LINES_SHOWN * 2);
        for log in logs.iter().skip(skip) {
            lines.push(format!(
                "  {} {}: {}",
                format::level(log.level),
                log.target,
                log.message.trim_end()
            ));
        }
    }
    lines
}

fn paint_log(style: &TtyStyle, level: LogLevel, text: &str) -> String {
    match level {
        LogLevel::Error => paint(style, Paint::Red, text),
        LogLevel::Warn => paint(style, Paint::Yellow, text),
        _ => paint(style, Paint::Dim, text),
    }
}

fn operation_line(model: &Model, now: SystemTime, style: &TtyStyle) -> String {
    let Some(op) = &model.operation else {
        return paint(style, Paint::Dim, "… waiting for the operation to start");
    };
    let name = if op.rpc.is_empty() {
        "operation".to_string()
    } else {
        op.rpc.clone()
    };
    let elapsed = model.elapsed(now).map(format::duration).unwrap_or_default();
    let (mark, state, p) = match model.outcome.as_ref().map(|o| o.status) {
        None => ("●", "running".to_string(), Paint::Bold),
        Some(StatusCode::Success) => ("✔", "succeeded".to_string(), Paint::Green),
        Some(_) => ("✘", "failed".to_string(), Paint::Red),
    };
    let reboot = model
        .outcome
        .as_ref()
        .map(|o| {
            format!(
                "  reboot {}",
                format::reboot(o.reboot_status, o.reboot_action)
            )
        })
        .unwrap_or_default();
    paint(
        style,
        p,
        &format!(
            "{mark} {name} {}  {state}  {elapsed}{reboot}",
            format::short_id(&op.id)
        ),
    )
}

/// "  Overall  [####>---]  42%  105 MiB/250 MiB  5.0 MiB/s  ETA 29.0s  step 3 of 9"
/// while the operation runs and the daemon reported overall progress.
fn overall_line(model: &Model, now: SystemTime, style: &TtyStyle) -> Option<String> {
    let overall = model.overall.as_ref()?;
    if model.outcome.is_some() {
        return None;
    }
    let bar = match overall.fraction() {
        Some(f) => format!("[{}] {:>3}%", bar(f), (f * 100.0).floor() as u64),
        None => "[running]".to_string(),
    };
    let figures = overall.figures(now, "  ");
    let elapsed = if overall.eta(now).is_none() {
        model
            .elapsed(now)
            .map(|d| format!("  elapsed {}", format::duration(d)))
            .unwrap_or_default()
    } else {
        String::new()
    };
    Some(paint(
        style,
        Paint::Bold,
        &format!("  Overall  {bar}  {figures}{elapsed}"),
    ))
}

fn phase_line(phase: &PhaseView, now: SystemTime, style: &TtyStyle) -> String {
    // Phases sit under the Overall line; children under their parent.
    let indent = "  ".repeat(phase.depth + 2);
    let amount = amounts(phase);
    match phase.state {
        PhaseState::Done => {
            let took = phase.elapsed().map(format::duration).unwrap_or_default();
            paint(
                style,
                Paint::Green,
                &format!("{indent}✔ {}  {amount}  {took}", phase.name),
            )
        }
        PhaseState::Failed => paint(
            style,
            Paint::Red,
            &format!("{indent}✘ {}  {amount}  failed", phase.name),
        ),
        PhaseState::Running => {
            let bar = match phase.fraction() {
                Some(f) => format!("[{}] {:>3}%", bar(f), (f * 100.0).floor() as u64),
                None => "[running]".to_string(),
            };
            let rate = phase
                .rate()
                .map(|r| format!("  {}", format::rate(phase.unit, r)))
                .unwrap_or_default();
            // An ETA where it means something, else the time so far.
            let eta = match phase.eta_at(now) {
                Some(d) => format!("  ETA {}", format::duration(d)),
                None => phase
                    .running_for(now)
                    .map(|d| format!("  {}", format::duration(d)))
                    .unwrap_or_default(),
            };
            format!("{indent}▶ {}  {bar}  {amount}{rate}{eta}", phase.name)
        }
        _ => paint(
            style,
            Paint::Dim,
            &format!("{indent}· {}  pending", phase.name),
        ),
    }
}

fn amounts(phase: &PhaseView) -> String {
    match phase.total {
        Some(total) => format!(
            "{}/{}",
            format::amount(phase.unit, phase.current),
            format::amount(phase.unit, total)
        ),
        None if phase.current > 0 => format::amount(phase.unit, phase.current),
        None => String::new(),
    }
}

fn bar(fraction: f64) -> String {
    let filled = ((fraction * BAR_WIDTH as f64).round() as usize).min(BAR_WIDTH);
    let mut s = "#".repeat(filled);
    if filled < BAR_WIDTH {
        s.push('>');
        s.push_str(&"-".repeat(BAR_WIDTH - filled - 1));
    }
    s
}

/// The text of a stream notice (shared with the plain view).
pub fn notice_text(notice: &Notice) -> String {
    match notice {
        Notice::Gap {
            count,
            first,
            last,
            reason,
        } => format!("gap: {count} records not delivered (sequence {first}..={last}): {reason}"),
        Notice::RunChange { previous, current } => {
            format!("the daemon restarted (run {previous} -> {current})")
        }
        Notice::Dropped { total } => {
            format!("the daemon dropped {total} records under load (see `trident logs`)")
        }
        Notice::LogsNotShown {
            count,
            operation_id,
        } => {
            let id = if operation_id.is_empty() {
                "ID"
            } else {
                operation_id
            };
            format!(
                "… {} log records not shown (the daemon's buffer overflowed; \
                 `trident logs --operation {id}` has what the journal kept)",
                format::thousands(*count)
            )
        }
        Notice::Reconnecting { attempt, reason } => {
            format!("connection lost ({reason}); reconnecting (attempt {attempt})")
        }
        Notice::Resumed { after: Some(c) } => format!("reconnected; resuming after {c}"),
        Notice::Resumed { after: None } => {
            "reconnected; resuming from the operation's start".to_string()
        }
    }
}

/// Cuts a line to `width` visible characters (escape codes do not count).
fn cut(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut visible = 0;
    let mut in_escape = false;
    let mut cut_short = false;
    for ch in line.chars() {
        if ch == '\x1b' {
            in_escape = true;
        }
        if in_escape {
            out.push(ch);
            if ch == 'm' {
                in_escape = false;
            }
            continue;
        }
        if visible + 1 > width {
            cut_short = true;
            continue;
        }
        out.push(ch);
        visible += 1;
    }
    if cut_short && !out.contains('\x1b') {
        out.pop();
        out.push('…');
    }
    out
}
