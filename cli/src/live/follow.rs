//! Following one operation through TelemetryService.Watch, resuming after
//! the last cursor across dropped connections and daemon restarts.
//!
//! No record is shown twice: a resume asks for records strictly after the
//! last cursor shown. None is skipped silently: what the daemon can no
//! longer replay arrives as a Gap and is shown as a notice.
//!
//! Resuming a broken *servicing* stream: its Log/Progress messages carry no
//! cursor, so the resume starts strictly after `Started.cursor` (the
//! operation's first record) and de-duplicates: the first `skip_logs` log
//! records are the ones the servicing stream already delivered (it forwards
//! the operation's log records in bus order), and a progress record is
//! dropped unless it is newer than the phase state already shown.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use trident_proto::v1::telemetry_service_client::TelemetryServiceClient;
use trident_proto::v1::{
    Cursor, ListOperationsRequest, RecordKind, WatchOptions, WatchRequest, WatchResponse,
};

use super::progress::Progress;
use super::read::{StreamEnd, read_stream};
use crate::ctx::Ctx;
use crate::exit::{CliError, CliResult};
use crate::render::event::{Event, system_time};

/// First reconnect delay; doubles up to [`BACKOFF_MAX`].
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(2);
/// Give up when the daemon stays unreachable this long.
const RECONNECT_DEADLINE: Duration = Duration::from_secs(120);

/// The record kinds of the progress view.
pub const VIEW_KINDS: [RecordKind; 4] = [
    RecordKind::Log,
    RecordKind::Progress,
    RecordKind::Error,
    RecordKind::Operation,
];

/// What the resume must not show again.
#[derive(Debug, Default)]
pub struct Dedup {
    /// Log records of the operation already shown from the servicing stream.
    pub skip_logs: u64,
    /// Newest `updated` time shown per phase.
    pub phase_updated: HashMap<String, SystemTime>,
}

impl Dedup {
    /// Records what a servicing-stream event showed.
    pub fn note(&mut self, event: &Event) {
        match event {
            Event::Log(_) => self.skip_logs += 1,
            Event::Progress {
                record, timestamp, ..
            } => {
                if let Some(t) = system_time(record.updated.as_ref()).or(*timestamp) {
                    let e = self
                        .phase_updated
                        .entry(record.phase_id.clone())
                        .or_insert(t);
                    if t > *e {
                        *e = t;
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether a replayed Watch event was already shown.
    fn seen(&mut self, event: &Event) -> bool {
        match event {
            Event::Log(_) if self.skip_logs > 0 => {
                self.skip_logs -= 1;
                true
            }
            Event::Progress {
                record, timestamp, ..
            } => {
                let t = system_time(record.updated.as_ref()).or(*timestamp);
                match (t, self.phase_updated.get(&record.phase_id)) {
                    (Some(t), Some(shown)) => t <= *shown,
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// How following ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Followed {
    /// The operation's completion was shown.
    Completed,
    /// The daemon no longer runs the operation and never recorded its end
    /// (it died with a daemon restart).
    Interrupted,
}

/// Follows `operation_id` from strictly after `after` (None: from its start)
/// until its completion record, reconnecting as needed. `resuming` says a
/// stream was already lost (a "resumed" notice is due once a Watch opens).
pub async fn follow_operation(
    ctx: &Ctx,
    progress: &mut Progress,
    operation_id: &str,
    mut after: Option<Cursor>,
    mut dedup: Dedup,
    resuming: bool,
) -> CliResult<Followed> {
    let mut announce = resuming;
    let mut attempt: u32 = 0;
    let mut backoff = BACKOFF_START;
    let mut lost_since: Option<std::time::Instant> = None;
    // After a reconnect, ask only up to the head when the daemon says the
    // operation is no longer running: its end is in the replay or nowhere.
    let mut snapshot = false;
    loop {
        let outcome = watch_once(
            ctx,
            progress,
            operation_id,
            &mut after,
            &mut dedup,
            snapshot,
            &mut announce,
        )
        .await;
        let reason = match outcome {
            Ok(Some(followed)) => return Ok(followed),
            Ok(None) if snapshot => return Ok(Followed::Interrupted),
            Ok(None) => "the stream ended".to_string(),
            Err(reason) => reason,
        };
        let since = *lost_since.get_or_insert_with(std::time::Instant::now);
        if since.elapsed() > RECONNECT_DEADLINE {
            return Err(CliError::StreamLost(format!(
                "lost the stream of operation {operation_id} and could not resume within {}s: {reason}",
                RECONNECT_DEADLINE.as_secs()
            )));
        }
        attempt += 1;
        progress.feed(&Event::Reconnecting { attempt, reason });
        announce = true;
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(BACKOFF_MAX);
        if let Some(running) = still_running(ctx, operation_id).await {
            snapshot = !running;
            lost_since = None;
            backoff = BACKOFF_START;
            progress.feed(&Event::Resumed {
                after: after.clone(),
            });
        }
    }
}

/// Whether the daemon still runs the operation; None while it cannot be
/// asked (not reachable yet).
async fn still_running(ctx: &Ctx, operation_id: &str) -> Option<bool> {
    let channel = ctx.channel().await.ok()?;
    let list = TelemetryServiceClient::new(channel)
        .list_operations(ListOperationsRequest {})
        .await
        .ok()?;
    Some(
        list.into_inner()
            .operations
            .iter()
            .any(|op| op.operation_id == operation_id && op.running),
    )
}

/// One Watch call. Ok(Some) when the operation's end was seen, Ok(None)
/// when the stream ended cleanly first, Err(reason) when it broke.
async fn watch_once(
    ctx: &Ctx,
    progress: &mut Progress,
    operation_id: &str,
    after: &mut Option<Cursor>,
    dedup: &mut Dedup,
    snapshot: bool,
    announce: &mut bool,
) -> Result<Option<Followed>, String> {
    let channel = ctx.channel().await.map_err(|e| e.to_string())?;
    let request = WatchRequest {
        options: Some(WatchOptions {
            after: after.clone(),
            operation_id: operation_id.to_string(),
            snapshot,
            ..WatchOptions::default()
        }),
        kinds: VIEW_KINDS.iter().map(|k| *k as i32).collect(),
    };
    let mut stream = TelemetryServiceClient::new(channel)
        .watch(request)
        .await
        .map_err(|s| crate::exit::describe_status(&s))?
        .into_inner();
    if std::mem::take(announce) {
        progress.feed(&Event::Resumed {
            after: after.clone(),
        });
    }
    let end = read_stream(progress, &mut stream, |response: &WatchResponse, _| {
        response
            .events
            .iter()
            .filter_map(|stream_event| {
                advance(after, stream_event);
                Event::from_stream(stream_event).filter(|event| !dedup.seen(event))
            })
            .collect()
    })
    .await;
    match end {
        StreamEnd::Completed => Ok(Some(Followed::Completed)),
        StreamEnd::Ended => Ok(None),
        StreamEnd::Broken(status) => Err(crate::exit::describe_status(&status)),
    }
}

/// Moves the resume point past a record or a gap.
fn advance(after: &mut Option<Cursor>, event: &trident_proto::v1::StreamEvent) {
    use trident_proto::v1::stream_event::Event as E;
    let cursor = match &event.event {
        Some(E::Record(rec)) => rec.cursor.as_ref(),
        Some(E::Gap(gap)) => gap.last_missing.as_ref(),
        _ => None,
    };
    if let Some(c) = cursor {
        *after = Some(c.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::event::LogLine;
    use trident_proto::v1::{LogLevel, PhaseState, ProgressRecord};

    fn log() -> Event {
        Event::Log(LogLine {
            cursor: None,
            timestamp: None,
            level: LogLevel::Info,
            target: "t".into(),
            message: "m".into(),
        })
    }

    fn progress(phase: &str, secs: u64) -> Event {
        Event::Progress {
            cursor: None,
            timestamp: None,
            record: ProgressRecord {
                phase_id: phase.into(),
                state: PhaseState::Running as i32,
                updated: Some(prost_types::Timestamp {
                    seconds: secs as i64,
                    nanos: 0,
                }),
                ..ProgressRecord::default()
            },
        }
    }

    #[test]
    fn resume_skips_exactly_the_log_records_already_shown() {
        let mut dedup = Dedup::default();
        dedup.note(&log());
        dedup.note(&log());
        assert!(dedup.seen(&log()));
        assert!(dedup.seen(&log()));
        assert!(!dedup.seen(&log()), "the third replayed log is new");
    }

    #[test]
    fn resume_skips_progress_not_newer_than_what_was_shown() {
        let mut dedup = Dedup::default();
        dedup.note(&progress("write", 10));
        assert!(dedup.seen(&progress("write", 9)));
        assert!(dedup.seen(&progress("write", 10)));
        assert!(!dedup.seen(&progress("write", 11)));
        assert!(!dedup.seen(&progress("other", 1)));
    }
}
