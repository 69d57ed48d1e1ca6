//! The closing line of a live view: the outcome with the overall figures
//! ([`super::overall`]) of the operation the model ([`super::model`]) saw.

use std::time::SystemTime;

use trident_proto::v1::ProgressUnit;

use super::format;
use super::model::{Model, Outcome};

/// The closing summary: "succeeded in 52.3s: 250 MiB at 4.8 MiB/s average,
/// 9 of 9 steps; reboot required". Bytes and rate only when the operation
/// moved bytes.
pub fn summary(model: &Model, outcome: &Outcome) -> String {
    let verdict = if outcome.status == trident_proto::v1::StatusCode::Success {
        "succeeded"
    } else {
        "failed"
    };
    let took = model.elapsed(model.last_seen.unwrap_or(SystemTime::UNIX_EPOCH));
    let mut text = format!(
        "operation {verdict}{}",
        took.map(|d| format!(" in {}", format::duration(d)))
            .unwrap_or_default()
    );
    if let Some(overall) = &model.overall {
        let bytes = overall.record.bytes_done;
        let mut figures = Vec::new();
        if bytes > 0 {
            let average = took
                .filter(|d| !d.is_zero())
                .map(|d| {
                    format!(
                        " at {} average",
                        format::rate(ProgressUnit::Bytes, bytes as f64 / d.as_secs_f64())
                    )
                })
                .unwrap_or_default();
            figures.push(format!(
                "{}{average}",
                format::amount(ProgressUnit::Bytes, bytes)
            ));
        }
        figures.push(overall.steps_done());
        text.push_str(&format!(": {}", figures.join(", ")));
    }
    text.push_str(&format!(
        "; reboot {}",
        format::reboot(outcome.reboot_status, outcome.reboot_action)
    ));
    text
}
