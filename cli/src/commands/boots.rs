//! `trident logs --list-boots` and `--boot ID|-N`: the host's boots the
//! daemon's journal knows (as `journalctl --list-boots` / `-b`). Index 0 is
//! the current boot, -1 the one before, and so on.

use serde::Serialize;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{BootSummary, ListBootsRequest};

use crate::args::OutputFormat;
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult, Exit};
use crate::output;
use crate::render::event::system_time;
use crate::render::format;

/// One line of `--list-boots`.
#[derive(Debug, Serialize)]
struct BootLine {
    index: i64,
    boot_id: String,
    first: Option<String>,
    last: Option<String>,
    current: bool,
    runs: Vec<String>,
    records: u64,
}

/// The daemon's boots, oldest first (the current one last).
pub async fn list(ctx: &Ctx) -> CliResult<Vec<BootSummary>> {
    Ok(TelemetryServiceClient::new(ctx.channel().await?)
        .list_boots(ListBootsRequest {})
        .await
        .map_err(|s| CliError::rpc("ListBoots", s))?
        .into_inner()
        .boots)
}

/// Prints the boots, oldest first, with their index.
pub async fn print_list(ctx: &Ctx, format: OutputFormat) -> CliResult<Exit> {
    let boots = list(ctx).await?;
    let newest = boots.len() as i64 - 1;
    let lines: Vec<BootLine> = boots
        .into_iter()
        .enumerate()
        .map(|(at, boot)| BootLine {
            index: at as i64 - newest,
            first: system_time(boot.first.as_ref()).map(format::timestamp),
            last: system_time(boot.last.as_ref()).map(format::timestamp),
            boot_id: boot.boot_id,
            current: boot.current,
            runs: boot.run_ids,
            records: boot.records,
        })
        .collect();
    let text = match format {
        OutputFormat::Human => {
            let mut text = format!(
                "{:>4} {:<36} {:<30} {:<30}\n",
                "IDX", "BOOT ID", "FIRST ENTRY", "LAST ENTRY"
            );
            for line in &lines {
                let id = if line.boot_id.is_empty() {
                    "(unknown)"
                } else {
                    &line.boot_id
                };
                text.push_str(&format!(
                    "{:>4} {id:<36} {:<30} {:<30}\n",
                    line.index,
                    line.first.as_deref().unwrap_or("-"),
                    line.last.as_deref().unwrap_or("-"),
                ));
            }
            text
        }
        other => output::encode(&lines, other)?,
    };
    output::emit(&text, None)?;
    Ok(Exit::Success)
}

/// The boot `--boot` names: a number <= 0 counts back from the current
/// boot, anything else is a boot id (or a unique prefix of one).
pub async fn resolve(ctx: &Ctx, wanted: &str) -> CliResult<BootSummary> {
    pick(&list(ctx).await?, wanted).cloned()
}

fn pick<'a>(boots: &'a [BootSummary], wanted: &str) -> CliResult<&'a BootSummary> {
    if let Ok(offset) = wanted.parse::<i64>() {
        let at = (boots.len() as i64 - 1).checked_add(offset);
        return match at.and_then(|at| usize::try_from(at).ok()) {
            Some(at) if offset <= 0 && at < boots.len() => Ok(&boots[at]),
            _ => Err(CliError::Usage(format!(
                "--boot {wanted}: the daemon knows {} boots, indexes {} to 0 (see --list-boots)",
                boots.len(),
                1 - boots.len() as i64
            ))),
        };
    }
    let found: Vec<&BootSummary> = boots
        .iter()
        .filter(|b| !b.boot_id.is_empty() && b.boot_id.starts_with(wanted))
        .collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(CliError::Usage(format!(
            "--boot {wanted}: no such boot (see --list-boots)"
        ))),
        _ => Err(CliError::Usage(format!(
            "--boot {wanted}: more than one boot id starts with it"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boots() -> Vec<BootSummary> {
        ["aaaa-1", "bbbb-2", "bbbc-3"]
            .iter()
            .map(|id| BootSummary {
                boot_id: (*id).to_owned(),
                ..BootSummary::default()
            })
            .collect()
    }

    #[test]
    fn offsets_count_back_from_the_current_boot_and_ids_match_by_unique_prefix() {
        let boots = boots();
        assert_eq!(
            pick(&boots, "0").ok().map(|b| b.boot_id.as_str()),
            Some("bbbc-3")
        );
        assert_eq!(
            pick(&boots, "-2").ok().map(|b| b.boot_id.as_str()),
            Some("aaaa-1")
        );
        assert_eq!(
            pick(&boots, "aa").ok().map(|b| b.boot_id.as_str()),
            Some("aaaa-1")
        );
        assert_eq!(
            pick(&boots, "bbbb-2").ok().map(|b| b.boot_id.as_str()),
            Some("bbbb-2")
        );
        for bad in ["-3", "1", "bbb", "cc"] {
            assert!(
                matches!(pick(&boots, bad), Err(CliError::Usage(_))),
                "{bad}"
            );
        }
    }
}
