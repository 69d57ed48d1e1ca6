//! Drops the CLI tells: a script printing 200,000 lines during an install,
//! a daemon with a small bus ring, and the real CLI reading the servicing
//! stream. Every line the CLI did not show is counted in its
//! "… N log records not shown" notices, and the notices add up to the
//! daemon's own count of log records it dropped (GetBusStatus).

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use trident_e2e::servicing_support::Fixture;
use trident_e2e::{Daemon, trident_cli};
use trident_proto::v1::GetBusStatusRequest;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;

const LINES: u64 = 200_000;
const NOTICE: &str =
    " log records not shown (the daemon's buffer overflowed; `trident logs --operation ";

/// The count of a notice line (`… 6,054 log records not shown ...`).
fn notice_count(line: &str) -> Option<u64> {
    let (before, _) = line.split_once(NOTICE)?;
    let digits = before.rsplit_once('…')?.1.trim().replace(',', "");
    digits.parse().ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cli_says_how_many_log_records_it_did_not_show() {
    let fixture = Fixture::new();
    let image = fixture.image("v1", 1, None);
    let extra = format!(
        "scripts:\n  preServicing:\n  - name: flood\n    content: \"seq -f 'flood-%.0f' 1 {LINES}\"\n"
    );
    let config = fixture.dir.path().join("flood.yaml");
    std::fs::write(&config, fixture.config(&image, &extra)).unwrap();
    let daemon = Daemon::builder()
        .args(["--inactivity-timeout", "0", "--bus-ring-records", "256"])
        .spawn()
        .await
        .unwrap();

    let out = trident_cli(daemon.socket_path(), &["install", config.to_str().unwrap()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "install failed:\n{}", tail(&text));

    let shown: HashSet<u64> = text
        .lines()
        .filter_map(|l| l.rsplit_once("flood-")?.1.trim().parse().ok())
        .collect();
    let notices: Vec<u64> = text.lines().filter_map(notice_count).collect();
    let not_shown: u64 = notices.iter().sum();
    let operation = text
        .lines()
        .find_map(|l| l.split_once("started: operation ")?.1.split(',').next())
        .unwrap()
        .to_owned();
    assert!(
        text.contains(&format!(
            "`trident logs --operation {operation}` has what the journal kept"
        )),
        "the notice names the operation {operation}"
    );

    let bus = TelemetryServiceClient::new(daemon.channel().await.unwrap())
        .get_bus_status(GetBusStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    let daemon_dropped = bus.drops.unwrap().logs;
    eprintln!(
        "shown {} of {LINES} script lines; {} notices, {not_shown} not shown; daemon dropped {daemon_dropped} log records",
        shown.len(),
        notices.len()
    );
    assert!(
        daemon_dropped > 0,
        "the ring of 256 never overflowed: no test"
    );
    assert_eq!(
        not_shown, daemon_dropped,
        "the CLI's notices add up to the daemon's count"
    );
    let missing = LINES - shown.len() as u64;
    assert!(
        missing <= not_shown,
        "{missing} script lines neither shown nor counted (notices: {not_shown})"
    );
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
