//! Handing the journal to the root volume that boots next. Each root
//! volume has its own state directory; the daemon of the volume that boots
//! next only knows the host's history if its journal holds it. So when the
//! servicing engine hands its datastore over (install finalize, A/B update
//! and rollback finalize, a failed commit going back), it hands the journal
//! too: this journal merged with what the receiving journal already holds,
//! every record once (by cursor), in order (runs by their first record,
//! records by sequence), with their original cursors and boot ids, within
//! the journal's bound (the oldest records go first) and its segment size.
//!
//! The operation being handed over has not ended yet when this runs (its
//! end is recorded after the step returns, as for the datastore): the
//! handover appends its end, as the datastore handover records it, in a
//! run of its own (a fresh run id): the error report of a failure (with
//! the operation's recent logs) and the completed operation record.
//!
//! The merged journal is written to a sibling folder, fsynced, and swapped
//! in with two renames; [`recover`] finishes or undoes a swap a crash cut.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use prost::Message;
use trident_proto::v1::{
    Cursor, ErrorReport, OperationEvent, OperationRecord, RebootStatus, Record, StatusCode,
    TridentError, record,
};

use super::durable::{sync_dir, write_file};
use super::segments::{list, read_frames, segment_path};
use crate::bus::Bus;
use crate::error::TelemetryError;

/// The end of the operation being handed over, as its daemon will record
/// it once the step returns.
#[derive(Clone, Debug)]
pub struct HandedEnd {
    pub operation_id: String,
    pub result: StatusCode,
    pub reboot_status: RebootStatus,
    /// The failure's error (`OperationRecord.error`) and its full report.
    pub error: Option<(TridentError, ErrorReport)>,
}

/// What a handover wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandoverSummary {
    /// Records in the receiving journal now.
    pub records: u64,
    /// Records both journals had (written once).
    pub duplicates: u64,
    /// Oldest records left out to keep the journal within its bound.
    pub dropped: u64,
}

/// One journaled record: its cursor and its encoded bytes.
struct Frame {
    run_id: String,
    sequence: u64,
    bytes: Vec<u8>,
}

impl Bus {
    /// Merges this journal (everything journaled so far, flushed first)
    /// and `ended` into the journal folder `target` of the volume that
    /// boots next. Blocking. A journal that cannot be written is an error
    /// and leaves `target` as it was.
    pub fn hand_over_journal(
        &self,
        target: &Path,
        ended: Option<HandedEnd>,
    ) -> Result<HandoverSummary, TelemetryError> {
        let own = self.config().journal_dir.as_deref();
        if own.is_some_and(|own| same_dir(own, target)) {
            // Swapping our own folder would pull it from under the writer.
            return Err(TelemetryError::InvalidRequest(format!(
                "journal {} cannot be handed over to itself",
                target.display()
            )));
        }
        self.flush();
        // Readers of the journal (the OTLP export) bring their cursors up
        // to date; they go with the records.
        self.inner().handover_hooks.run();
        let cursors = own.map(super::carried::read_cursors).unwrap_or_default();
        let mut frames = Vec::new();
        let mut seen = HashSet::new();
        let mut duplicates = 0;
        let sources = [self.config().journal_dir.as_deref(), Some(target)];
        for dir in sources.into_iter().flatten() {
            for frame in read_journal(dir)? {
                if seen.insert((frame.run_id.clone(), frame.sequence)) {
                    frames.push(frame);
                } else {
                    duplicates += 1;
                }
            }
        }
        if let Some(ended) = ended {
            frames.extend(self.end_records(&frames, ended));
        }
        order(&mut frames);
        let dropped = bound(&mut frames, self.config().journal_max_bytes);
        write_swapped(
            target,
            &frames,
            self.config().journal_segment_bytes,
            &cursors,
        )?;
        Ok(HandoverSummary {
            records: frames.len() as u64,
            duplicates,
            dropped,
        })
    }

    /// The handed operation's end, in a run of its own: its spans still open
    /// closed, its error report (filled as `report_error` fills it) and its
    /// completed record.
    fn end_records(&self, frames: &[Frame], ended: HandedEnd) -> Vec<Frame> {
        let started = frames.iter().rev().find_map(|f| {
            match Record::decode(f.bytes.as_slice()).ok()?.record? {
                record::Record::Operation(op)
                    if op.event == OperationEvent::Started as i32
                        && op.operation_id == ended.operation_id =>
                {
                    Some(op)
                }
                _ => None,
            }
        });
        let started = started.unwrap_or_default();
        let run_id = uuid::Uuid::new_v4().to_string();
        let records = frames
            .iter()
            .filter_map(|f| Record::decode(f.bytes.as_slice()).ok());
        let failed = ended.result != StatusCode::Success;
        let mut bodies: Vec<record::Record> =
            super::open_spans::closing(records, &ended.operation_id, failed)
                .into_iter()
                .map(record::Record::Span)
                .collect();
        let mut error = None;
        if let Some((proto, report)) = ended.error {
            bodies.push(record::Record::Error(self.fill_report(report)));
            error = Some(proto);
        }
        bodies.push(record::Record::Operation(OperationRecord {
            event: OperationEvent::Completed as i32,
            operation_id: ended.operation_id,
            kind: started.kind,
            rpc: started.rpc,
            result: ended.result as i32,
            reboot_status: ended.reboot_status as i32,
            trace_id: started.trace_id,
            error,
            image_hash: None,
            servicing_kind: None,
            reboot_action: None,
            continues_operation_id: String::new(),
        }));
        bodies
            .into_iter()
            .zip(1..)
            .map(|(body, sequence)| Frame {
                run_id: run_id.clone(),
                sequence,
                bytes: Record {
                    cursor: Some(Cursor {
                        run_id: run_id.clone(),
                        sequence,
                    }),
                    timestamp: Some(crate::record::now()),
                    boot_id: self.boot_id().to_owned(),
                    record: Some(body),
                }
                .encode_to_vec(),
            })
            .collect()
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Every readable record of a journal folder, in journal order (none if
/// the folder does not exist): for reading a volume's journal offline.
pub fn read_records(dir: &Path) -> Result<Vec<Record>, TelemetryError> {
    read_journal(dir)?
        .iter()
        .map(|f| {
            Record::decode(f.bytes.as_slice()).map_err(|e| TelemetryError::Journal {
                path: dir.to_owned(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })
        })
        .collect()
}

/// Every readable record of a journal folder (none if it does not exist).
fn read_journal(dir: &Path) -> Result<Vec<Frame>, TelemetryError> {
    let journal_error = |source| TelemetryError::Journal {
        path: dir.to_owned(),
        source,
    };
    let mut frames = Vec::new();
    for (_, path, _) in list(dir).map_err(journal_error)? {
        read_frames(&path, |bytes| {
            if let Ok(record) = Record::decode(bytes)
                && let Some(cursor) = record.cursor
            {
                frames.push(Frame {
                    run_id: cursor.run_id,
                    sequence: cursor.sequence,
                    bytes: bytes.to_vec(),
                });
            }
        })
        .map_err(|source| TelemetryError::Journal { path, source })?;
    }
    Ok(frames)
}

/// Each run's records by sequence, runs interleaved by time: the next
/// record is the earliest of the runs' next records. Runs of one host do
/// not overlap in time, except a handed operation's end, which goes where
/// it happened within the run that went on after the handover.
/// A record's time (seconds, nanoseconds) and the record.
type Timed = ((i64, i32), Frame);

fn order(frames: &mut Vec<Frame>) {
    let at = |f: &Frame| {
        Record::decode(f.bytes.as_slice())
            .ok()
            .and_then(|r| r.timestamp)
            .map_or((i64::MAX, 0), |t| (t.seconds, t.nanos))
    };
    let mut runs: HashMap<String, Vec<Timed>> = HashMap::new();
    for frame in frames.drain(..) {
        runs.entry(frame.run_id.clone())
            .or_default()
            .push((at(&frame), frame));
    }
    let mut runs: Vec<std::collections::VecDeque<Timed>> = runs
        .into_values()
        .map(|mut run| {
            run.sort_by_key(|(_, f)| f.sequence);
            run.into()
        })
        .collect();
    while let Some(next) = runs
        .iter()
        .enumerate()
        .filter_map(|(i, run)| run.front().map(|(t, f)| ((*t, f.run_id.as_str()), i)))
        .min()
        .map(|(_, i)| i)
    {
        if let Some((_, frame)) = runs[next].pop_front() {
            frames.push(frame);
        }
    }
}

/// Leaves out the oldest records past `max_bytes`; returns how many.
fn bound(frames: &mut Vec<Frame>, max_bytes: u64) -> u64 {
    let size = |f: &Frame| 4 + f.bytes.len() as u64;
    let mut total: u64 = frames.iter().map(size).sum();
    let mut cut = 0;
    while total > max_bytes && cut < frames.len() {
        total -= size(&frames[cut]);
        cut += 1;
    }
    frames.drain(..cut);
    cut as u64
}

fn sibling(target: &Path, suffix: &str) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    target.with_file_name(name)
}

/// Writes the frames as segments of a new folder beside `target`, fsynced,
/// then swaps it in.
fn write_swapped(
    target: &Path,
    frames: &[Frame],
    segment_bytes: u64,
    cursors: &[(std::ffi::OsString, Vec<u8>)],
) -> Result<(), TelemetryError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| TelemetryError::Journal { path, source }
    };
    let parent = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let staging = sibling(target, ".handover");
    let replaced = sibling(target, ".replaced");
    recover(target);
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir(&staging).map_err(io(&staging))?;
    let mut index = 1;
    let mut segment = Vec::new();
    for frame in frames {
        if !segment.is_empty() && (segment.len() + 4 + frame.bytes.len()) as u64 > segment_bytes {
            write_file(&segment_path(&staging, index), &segment)?;
            index += 1;
            segment.clear();
        }
        let len = u32::try_from(frame.bytes.len()).unwrap_or(u32::MAX);
        segment.extend_from_slice(&len.to_le_bytes());
        segment.extend_from_slice(&frame.bytes);
    }
    if !segment.is_empty() {
        write_file(&segment_path(&staging, index), &segment)?;
    }
    super::carried::write_cursors(&staging, cursors)?;
    sync_dir(&staging)?;
    if target.exists() {
        std::fs::rename(target, &replaced).map_err(io(target))?;
    }
    std::fs::rename(&staging, target).map_err(io(target))?;
    sync_dir(parent)?;
    let _ = std::fs::remove_dir_all(&replaced);
    Ok(())
}

/// Finishes what a handover cut by a crash left: the old journal moved
/// aside and the merged one not yet in place → the old one back; both in
/// place → the old one removed. A half-written staging folder is removed.
pub fn recover(dir: &Path) {
    let replaced = sibling(dir, ".replaced");
    if replaced.exists() {
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&replaced);
        } else {
            let _ = std::fs::rename(&replaced, dir);
        }
    }
    let _ = std::fs::remove_dir_all(sibling(dir, ".handover"));
}
