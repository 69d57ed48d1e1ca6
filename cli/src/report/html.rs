//! `report.html` of `trident diagnose`: one self-contained page (inline CSS
//! and SVG, no script, no external asset) a support engineer opens in any
//! browser: the operation's span waterfall, its phases with throughput,
//! the structured error with context and causes, recent logs and the Host
//! Status. Every piece of text from the daemon goes through
//! [`escape`](super::escape::escape), so
//! a log message cannot inject markup.

use serde_json::Value;
use trident_proto::v1::{ErrorReport, LogRecord, OperationRecord, ProgressRecord, Record, record};

use super::escape::escape;
use super::html_sections::{error_section, host_status_section, logs_section, phases_section};
use super::spans::spans;
use super::waterfall::waterfall_svg;

/// What the page is built from (all of it already fetched by `diagnose`).
#[derive(Debug, Default)]
pub struct ReportInput<'a> {
    /// When the bundle was made (shown as is).
    pub generated_at: String,
    /// The operation the page is about (empty when the daemon knew none).
    pub operation_id: String,
    /// Every bus record of that operation, in order.
    pub records: &'a [Record],
    /// The daemon's last error as `trident get last-error` renders it
    /// (used when the records carry no error report).
    pub last_error: Option<&'a Value>,
    /// The full Host Status (upstream's keys).
    pub host_status: Option<&'a Value>,
}

/// The records of an operation sorted by kind.
#[derive(Debug, Default)]
pub(super) struct Sorted<'a> {
    pub spans: Vec<trident_proto::v1::SpanRecord>,
    pub progress: Vec<&'a ProgressRecord>,
    pub logs: Vec<(&'a Record, &'a LogRecord)>,
    pub error: Option<&'a ErrorReport>,
    pub completed: Option<&'a OperationRecord>,
}

fn sort(records: &[Record]) -> Sorted<'_> {
    let mut sorted = Sorted::default();
    for rec in records {
        match &rec.record {
            Some(record::Record::Span(s)) => sorted.spans.push(s.clone()),
            Some(record::Record::Progress(p)) => sorted.progress.push(p),
            Some(record::Record::Log(l)) => sorted.logs.push((rec, l)),
            Some(record::Record::Error(e)) => sorted.error = Some(e),
            Some(record::Record::Operation(op)) => sorted.completed = Some(op),
            // The overall view is derived from the phases the report
            // already shows one by one.
            Some(record::Record::OverallProgress(_)) | None => {}
        }
    }
    sorted
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}\
table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}\
pre{background:#f6f6f6;padding:8px;overflow:auto;max-height:480px}\
.error{color:#b00020}.warn{color:#a15c00}.muted{color:#777}\
svg text{font:11px sans-serif}";

/// The whole page.
pub fn render(input: &ReportInput<'_>) -> String {
    let sorted = sort(input.records);
    let spans = spans(&sorted.spans);
    let title = if input.operation_id.is_empty() {
        "Trident operation report".to_string()
    } else {
        format!("Trident operation {}", input.operation_id)
    };
    let mut page = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n\
         <h1 id=\"title\">{title}</h1>\n<p class=\"muted\">generated {generated}</p>\n",
        title = escape(&title),
        generated = escape(&input.generated_at),
    );
    page.push_str(&summary(sorted.completed));
    page.push_str("<h2>Span waterfall</h2>\n");
    page.push_str(&waterfall_svg(&spans));
    page.push_str(&phases_section(&sorted.progress));
    page.push_str(&error_section(sorted.error, input.last_error));
    page.push_str(&logs_section(&sorted.logs));
    page.push_str(&host_status_section(input.host_status));
    page.push_str("</body></html>\n");
    page
}

/// One line on the operation's outcome, from its completed record.
fn summary(completed: Option<&OperationRecord>) -> String {
    let Some(op) = completed else {
        return "<p id=\"summary\">No completed record for this operation.</p>\n".into();
    };
    format!(
        "<p id=\"summary\">{rpc}: <b class=\"{class}\">{result}</b>, reboot: {reboot}</p>\n",
        rpc = escape(&op.rpc),
        class = if op.result() == trident_proto::v1::StatusCode::Failure {
            "error"
        } else {
            "ok"
        },
        result = escape(crate::render::format::status(op.result())),
        reboot = escape(crate::render::format::reboot_status(op.reboot_status())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_message_with_a_script_tag_stays_text() {
        let records = [Record {
            record: Some(record::Record::Log(LogRecord {
                message: "<script>document.title='owned'</script>".into(),
                ..LogRecord::default()
            })),
            ..Record::default()
        }];
        let page = render(&ReportInput {
            records: &records,
            ..ReportInput::default()
        });
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("&lt;script&gt;document.title"), "{page}");
    }
}
