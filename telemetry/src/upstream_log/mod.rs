//! Upstream Trident's history on a host it serviced: its full log
//! (`/var/log/trident-full.log`), read as log records marked
//! `LOG_ORIGIN_UPSTREAM` for `TelemetryService.ReadUpstreamLog`.
//!
//! Upstream recreates (truncates) the file at the start of every servicing
//! command and of its daemon, so it holds upstream's last run only; the
//! daemon reads, never writes it. Reading streams the file line by line
//! on a blocking thread of its own, in bounded memory (a line is cut at
//! [`MAX_LINE`]; `tail` keeps at most N records), so neither a huge file
//! nor a slow client touches the bus or its producers.

mod parse;
mod read_line;

pub use parse::UNPARSED_LINE_FIELD;

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, ErrorKind};
use std::path::Path;

use prost::Message;
use prost_types::Timestamp;
use trident_proto::v1::{
    LogLevel, ReadUpstreamLogRequest, Record, RecordKind, UpstreamLogSummary, WatchOptions, record,
};

use crate::bus::filter::WatchFilter;

use read_line::{LineEnd, read_line};

/// Where upstream's `TRIDENT_BACKGROUND_LOG_PATH` is.
pub const DEFAULT_UPSTREAM_LOG: &str = "/var/log/trident-full.log";

/// Longest line read whole; longer ones are served cut (upstream's debug
/// records, e.g. a Host Configuration, stay far below it).
pub const MAX_LINE: usize = 1 << 20;

/// Records per response unless the request says.
const DEFAULT_MAX_BATCH: usize = 256;

/// Encoded bytes per response at most (a response holds at least one
/// record): far under the 4 MiB clients accept by default.
const MAX_BATCH_BYTES: usize = 1 << 20;

/// What a request keeps of upstream's records.
#[derive(Debug)]
struct Query {
    /// The level and target checks of a Watch (the bus's own filter).
    filter: WatchFilter,
    /// A level was asked for: a line that did not parse (no level) cannot
    /// meet it.
    level_filtered: bool,
    since: Option<Timestamp>,
    tail: Option<usize>,
    max_batch: usize,
}

impl Query {
    fn new(request: &ReadUpstreamLogRequest) -> Self {
        let options = WatchOptions {
            min_level: request.min_level,
            target_prefixes: request.target_prefixes.clone(),
            ..WatchOptions::default()
        };
        Query {
            // No boot given: every boot matches, whatever the current one.
            filter: WatchFilter::new(&options, 1 << RecordKind::Log as u8, ""),
            level_filtered: !matches!(
                LogLevel::try_from(request.min_level),
                Ok(LogLevel::Unspecified) | Err(_)
            ),
            since: request.since,
            tail: request.tail.map(|n| n as usize),
            max_batch: match request.max_batch {
                0 => DEFAULT_MAX_BATCH,
                n => n as usize,
            },
        }
    }

    /// Whether `record` is kept; `at` is its time, or for a line that did
    /// not parse the time of the record before it.
    fn keeps(&self, record: &Record, at: Option<&Timestamp>) -> bool {
        let Some(record::Record::Log(log)) = &record.record else {
            return false;
        };
        // A line without a level or target cannot meet a filter on them.
        if self.level_filtered && log.level == 0 {
            return false;
        }
        let since_ok = match (&self.since, at) {
            (None, _) => true,
            (Some(since), Some(at)) => (at.seconds, at.nanos) >= (since.seconds, since.nanos),
            (Some(_), None) => false,
        };
        since_ok && self.filter.matches_static(record)
    }
}

/// Reads upstream's log at `path` for `request`, handing its records to
/// `send` in batches, oldest first; stops early when `send` says the
/// receiver is gone. Never fails: what went wrong is in the summary.
pub fn read(
    path: &Path,
    request: &ReadUpstreamLogRequest,
    send: impl FnMut(Vec<Record>) -> bool,
) -> UpstreamLogSummary {
    let mut summary = UpstreamLogSummary {
        path: path.display().to_string(),
        ..UpstreamLogSummary::default()
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return summary,
        Err(e) => {
            summary.found = true;
            summary.error = e.to_string();
            return summary;
        }
    };
    summary.found = true;
    let mut out = Batcher::new(Query::new(request), send);
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut line = Vec::new();
    let mut last_time = None;
    loop {
        let end = match read_line(&mut reader, &mut line, MAX_LINE) {
            Ok(end) => end,
            Err(e) => {
                // E.g. EISDIR, EIO: what was read so far is still served.
                summary.error = e.to_string();
                break;
            }
        };
        if end == LineEnd::Eof && line.is_empty() {
            break;
        }
        summary.lines += 1;
        let parsed = match end {
            LineEnd::Cut => None,
            _ => parse::parse(&line),
        };
        let record = match parsed {
            Some(record) => {
                last_time = record.timestamp;
                record
            }
            None => {
                summary.unparsed_lines += 1;
                summary.cut_lines += u64::from(end == LineEnd::Cut);
                parse::unparsed(&line, summary.lines)
            }
        };
        if !out.push(record, last_time.as_ref()) {
            return summary;
        }
        if end == LineEnd::Eof {
            break;
        }
    }
    out.finish();
    summary
}

/// Filters records into batches, keeping only the last N with `tail`.
struct Batcher<F> {
    query: Query,
    send: F,
    batch: Vec<Record>,
    batch_bytes: usize,
    /// With `tail`: the newest N kept records, sent at the end.
    tail: VecDeque<Record>,
}

impl<F: FnMut(Vec<Record>) -> bool> Batcher<F> {
    fn new(query: Query, send: F) -> Self {
        Batcher {
            query,
            send,
            batch: Vec::new(),
            batch_bytes: 0,
            tail: VecDeque::new(),
        }
    }

    /// Takes one record; false when the receiver is gone.
    fn push(&mut self, record: Record, at: Option<&Timestamp>) -> bool {
        if !self.query.keeps(&record, at) {
            return true;
        }
        match self.query.tail {
            Some(0) => true,
            Some(n) => {
                if self.tail.len() == n {
                    self.tail.pop_front();
                }
                self.tail.push_back(record);
                true
            }
            None => self.add(record),
        }
    }

    fn add(&mut self, record: Record) -> bool {
        self.batch_bytes += record.encoded_len();
        self.batch.push(record);
        if self.batch.len() >= self.query.max_batch || self.batch_bytes >= MAX_BATCH_BYTES {
            return self.flush();
        }
        true
    }

    fn flush(&mut self) -> bool {
        self.batch_bytes = 0;
        let batch = std::mem::take(&mut self.batch);
        batch.is_empty() || (self.send)(batch)
    }

    fn finish(mut self) {
        let tail = std::mem::take(&mut self.tail);
        for record in tail {
            if !self.add(record) {
                return;
            }
        }
        self.flush();
    }
}

#[cfg(test)]
mod tests;
