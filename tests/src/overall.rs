//! An operation's overall progress as a Watch of that operation replays it
//! (running or finished): what the operator's view and the step checks read.

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail};
use futures::StreamExt;
use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    OverallProgress, RecordKind, WatchOptions, WatchRequest, record, stream_event,
};

/// Longest wait for the next batch of records of a running operation.
const NEXT_RECORD_WAIT: Duration = Duration::from_secs(120);

/// Every overall progress record of operation `operation_id` on the daemon
/// at `socket`, with its timestamp, and the time the operation ended.
pub async fn overall_records(
    socket: &Path,
    operation_id: &str,
) -> anyhow::Result<(Vec<(SystemTime, OverallProgress)>, SystemTime)> {
    let mut client = TelemetryServiceClient::new(crate::uds_channel(socket).await?);
    let mut stream = client
        .watch(WatchRequest {
            options: Some(WatchOptions {
                operation_id: operation_id.to_owned(),
                ..WatchOptions::default()
            }),
            kinds: vec![RecordKind::Progress as i32, RecordKind::Operation as i32],
        })
        .await?
        .into_inner();
    let mut overall = Vec::new();
    loop {
        let Some(response) = tokio::time::timeout(NEXT_RECORD_WAIT, stream.next())
            .await
            .context("the watch stalled")?
        else {
            bail!("the watch ended before the operation's end");
        };
        for event in response?.events {
            let Some(stream_event::Event::Record(rec)) = event.event else {
                continue;
            };
            let at = rec
                .timestamp
                .context("a record without a timestamp")
                .and_then(|t| SystemTime::try_from(t).context("a timestamp out of range"))?;
            match rec.record {
                Some(record::Record::OverallProgress(o)) => overall.push((at, o)),
                Some(record::Record::Operation(op)) if op.result != 0 => return Ok((overall, at)),
                _ => {}
            }
        }
    }
}
