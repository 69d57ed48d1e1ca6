//! Small text formatters shared by the renderers and data commands.

use std::time::{Duration, SystemTime};

use trident_proto::v1::{
    LogLevel, PhaseState, ProgressUnit, RebootAction, RebootStatus, StatusCode,
};

/// "4.2s", "1m05s", "2h03m".
pub fn duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

/// An amount in the phase's unit.
pub fn amount(unit: ProgressUnit, n: u64) -> String {
    match unit {
        ProgressUnit::Bytes => indicatif::BinaryBytes(n).to_string(),
        _ => n.to_string(),
    }
}

/// A rate in the phase's unit per second.
pub fn rate(unit: ProgressUnit, per_sec: f64) -> String {
    match unit {
        ProgressUnit::Bytes => format!("{}/s", indicatif::BinaryBytes(per_sec as u64)),
        _ => format!("{per_sec:.1}/s"),
    }
}

/// RFC 3339 with milliseconds, UTC.
pub fn timestamp(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

pub fn level(level: LogLevel) -> &'static str {
    match level {
        LogLevel::Error => "error",
        LogLevel::Warn => "warn",
        LogLevel::Info | LogLevel::Unspecified => "info",
        LogLevel::Debug => "debug",
        LogLevel::Trace => "trace",
    }
}

pub fn status(status: StatusCode) -> &'static str {
    match status {
        StatusCode::Success => "success",
        StatusCode::Failure => "failure",
        StatusCode::Unspecified => "unspecified",
    }
}

/// The reboot status in words; a started reboot the daemon does not
/// perform (`tridentd --reboot record|none`) says so.
pub fn reboot(status: RebootStatus, action: Option<RebootAction>) -> &'static str {
    match (status, action) {
        (RebootStatus::RebootStarted, Some(RebootAction::Recorded)) => "recorded (not performed)",
        (RebootStatus::RebootStarted, Some(RebootAction::NotPerformed)) => "not performed",
        _ => reboot_status(status),
    }
}

/// The wire's reboot status alone.
pub fn reboot_status(status: RebootStatus) -> &'static str {
    match status {
        RebootStatus::Unspecified => "unspecified",
        RebootStatus::RebootNotRequired => "not-required",
        RebootStatus::RebootRequired => "required",
        RebootStatus::RebootStarted => "started",
    }
}

/// `Completed.reboot_action` as the JSON view names it.
pub fn reboot_action(action: RebootAction) -> &'static str {
    match action {
        RebootAction::Unspecified => "unspecified",
        RebootAction::Performed => "performed",
        RebootAction::Recorded => "recorded",
        RebootAction::NotPerformed => "not-performed",
    }
}

pub fn phase_state(state: PhaseState) -> &'static str {
    match state {
        PhaseState::Unspecified => "unspecified",
        PhaseState::Pending => "pending",
        PhaseState::Running => "running",
        PhaseState::Done => "done",
        PhaseState::Failed => "failed",
    }
}

pub fn unit(unit: ProgressUnit) -> &'static str {
    match unit {
        ProgressUnit::Bytes => "bytes",
        ProgressUnit::Items => "items",
        ProgressUnit::Unspecified => "unspecified",
    }
}

/// "path:line", or "" when unknown.
pub fn location(location: Option<&trident_proto::v1::FileLocation>) -> String {
    match location {
        Some(l) if !l.path.is_empty() => format!("{}:{}", l.path, l.line),
        _ => String::new(),
    }
}

/// Shortens an id for display ("3f2a9c1e…").
pub fn short_id(id: &str) -> String {
    if id.len() > 8 {
        format!("{}…", &id[..8])
    } else {
        id.to_string()
    }
}

/// `n` with thousands separators (`6,054`), as the counts of drop notices.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(Duration::from_millis(4200)), "4.2s");
        assert_eq!(duration(Duration::from_secs(65)), "1m05s");
        assert_eq!(duration(Duration::from_secs(7380)), "2h03m");
    }

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(6054), "6,054");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
