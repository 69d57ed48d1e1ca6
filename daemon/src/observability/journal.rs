//! Native journal logging under systemd: when the service manager connected
//! stderr to the journal (`JOURNAL_STREAM` set), events go to journald over
//! its native protocol with structured fields instead of as text lines, so
//! `journalctl -u tridentd OPERATION_ID=<id>` selects one operation. Span
//! fields are unprefixed (`OPERATION_ID`, `TRACE_ID`, `RPC`, `KIND`, and a
//! phase's `PHASE_ID`), like the event's own fields (e.g. `BYTES`).

/// Set by systemd when stderr/stdout are connected to the journal.
pub const ENV_JOURNAL_STREAM: &str = "JOURNAL_STREAM";
/// SYSLOG_IDENTIFIER of the daemon's journal entries.
pub const SYSLOG_IDENTIFIER: &str = "tridentd";

/// Whether the daemon runs with its output connected to the journal.
pub fn under_journal() -> bool {
    std::env::var_os(ENV_JOURNAL_STREAM).is_some_and(|v| !v.is_empty())
}

/// The journald layer, when the daemon runs under the journal and its
/// socket answers; otherwise None (the caller logs compact lines to
/// stderr, and says why once).
pub fn layer() -> Option<tracing_journald::Layer> {
    if !under_journal() {
        return None;
    }
    match tracing_journald::layer() {
        Ok(layer) => Some(
            layer
                .with_field_prefix(None)
                .with_syslog_identifier(SYSLOG_IDENTIFIER.to_owned()),
        ),
        Err(error) => {
            eprintln!("tridentd: journald socket unavailable, logging to stderr: {error}");
            None
        }
    }
}
