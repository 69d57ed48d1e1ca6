//! The daemon's own log line: compact, one line per event, for stderr
//! (a terminal, a pipe, or the journal's stdout capture):
//!
//! ```text
//! 2026-11-23T15:18:45.721817Z  INFO op=79ed5b35 trident_engine::flows::stream_disk: region written bytes=38780416
//! ```
//!
//! The servicing operation is named once, by its id's first 8 characters
//! (what the bus layer recorded for the span); no span context is repeated
//! (the full span tree is on the bus: `trident traces`).

use std::fmt;

use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// Characters of the operation id shown.
pub const SHORT_OPERATION_ID: usize = 8;

/// The compact event format.
#[derive(Debug, Default, Clone, Copy)]
pub struct CompactLine;

impl<S, N> FormatEvent<S, N> for CompactLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        SystemTime.format_time(&mut writer)?;
        write!(writer, " {:>5} ", meta.level())?;
        let operation = ctx.event_scope().and_then(|scope| {
            scope
                .from_root()
                .find_map(|span| trident_telemetry::layer::span_operation_id(&span))
        });
        if let Some(operation) = operation {
            write!(writer, "op={} ", short_id(&operation))?;
        }
        write!(writer, "{}: ", meta.target())?;
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The first [`SHORT_OPERATION_ID`] characters of an operation id.
pub fn short_id(id: &str) -> &str {
    id.get(..SHORT_OPERATION_ID).unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| io::ErrorKind::Other)?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_line_names_the_operation_once_and_repeats_no_span_fields() {
        let bus = trident_telemetry::Bus::in_memory(trident_telemetry::BusConfig::default());
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::registry().with(bus.layer()).with(
            tracing_subscriber::fmt::layer()
                .event_format(CompactLine)
                .with_ansi(false)
                .with_writer(move || writer.clone()),
        );
        tracing::subscriber::with_default(subscriber, || {
            let op = tracing::info_span!(target: "trident::operation", "servicing_operation",
                operation_id = "79ed5b35-8a66-4de5-a336-52810a3cb474", kind = "CLEAN_INSTALL",
                rpc = "StreamDisk", trace_id = "5ea7e86cf80d62801ee6d517727decdb");
            let _op = op.enter();
            let phase = tracing::info_span!("phase", phase_id = "download");
            let _phase = phase.enter();
            tracing::info!(target: "tridentd::servicing", bytes = 42u64, "region written");
        });
        tracing::subscriber::with_default(
            tracing_subscriber::registry().with(
                tracing_subscriber::fmt::layer()
                    .event_format(CompactLine)
                    .with_ansi(false)
                    .with_writer({
                        let w = out.clone();
                        move || w.clone()
                    }),
            ),
            || tracing::warn!(target: "tridentd::server", "outside any operation"),
        );
        let text = String::from_utf8(out.0.lock().map(|b| b.clone()).unwrap_or_default())
            .unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let line = lines[0];
        assert!(
            line.ends_with(" INFO op=79ed5b35 tridentd::servicing: region written bytes=42"),
            "{line}"
        );
        for repeated in [
            "servicing_operation{",
            "trace_id",
            "rpc=",
            "phase_id",
            "a336",
        ] {
            assert!(!line.contains(repeated), "{repeated} in {line}");
        }
        assert!(
            lines[1].ends_with(" WARN tridentd::server: outside any operation"),
            "{}",
            lines[1]
        );
    }
}
