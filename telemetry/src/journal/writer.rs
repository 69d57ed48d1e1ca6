//! The journal writer thread: appends framed records to the current
//! segment, rotates segments by size and deletes the oldest past the bound.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;

use prost::Message;
use trident_proto::v1::Cursor;

use super::Command;
use super::segments::{list, segment_path};
use crate::config::BusConfig;
use crate::error::TelemetryError;

/// Field 1 (cursor) of `Record`, length-delimited.
const RECORD_CURSOR_TAG: u8 = 0x0a;
/// Field 3 (boot_id) of `Record`, length-delimited.
const RECORD_BOOT_ID_TAG: u8 = 0x1a;
/// Frames are gathered up to this many bytes before one write to the file.
const WRITE_BUFFER_BYTES: usize = 64 * 1024;

#[derive(Debug)]
pub(crate) struct Writer {
    dir: PathBuf,
    run_id: Arc<str>,
    /// Boot id every frame carries (none when unknown).
    boot_id: String,
    segment_bytes: u64,
    max_bytes: u64,
    index: u64,
    file: File,
    /// Bytes of whole frames written to the segment file.
    written: u64,
    /// Frames not written to the file yet, and how many records they hold.
    /// A failed write drops them all (counted) and cuts the file back to
    /// `written`, so a segment never holds a torn frame before good ones.
    pending: Vec<u8>,
    pending_records: u64,
    /// Records that could not be written (I/O errors), since start.
    failed: Arc<AtomicU64>,
    frame: Vec<u8>,
}

impl Writer {
    /// Opens a new segment after the existing ones.
    pub fn new(
        dir: &Path,
        config: &BusConfig,
        run_id: Arc<str>,
        failed: Arc<AtomicU64>,
    ) -> Result<Self, TelemetryError> {
        let journal_error = |source| TelemetryError::Journal {
            path: dir.to_owned(),
            source,
        };
        let segments = list(dir).map_err(journal_error)?;
        let index = segments.last().map_or(1, |(index, _, _)| index + 1);
        // Runs that journaled nothing leave empty segments: not worth keeping.
        for (_, path, size) in &segments {
            if *size == 0 {
                let _ = std::fs::remove_file(path);
            }
        }
        let file = create(dir, index)?;
        let writer = Writer {
            dir: dir.to_owned(),
            run_id,
            boot_id: config.boot_id.clone(),
            segment_bytes: config.journal_segment_bytes.max(4096),
            max_bytes: config.journal_max_bytes,
            index,
            file,
            written: 0,
            pending: Vec::with_capacity(WRITE_BUFFER_BYTES),
            pending_records: 0,
            failed,
            frame: Vec::new(),
        };
        writer.enforce_bound();
        Ok(writer)
    }

    /// Serves commands until shutdown or until every sender is gone.
    pub fn run(mut self, commands: Receiver<Command>) {
        while let Ok(command) = commands.recv() {
            let mut next = Some(command);
            // Drain what is queued before flushing the buffer to the OS.
            while let Some(command) = next {
                match command {
                    Command::Append { seq, bytes, sync } => {
                        self.append(seq, &bytes);
                        if sync {
                            self.sync();
                        }
                    }
                    Command::Flush(ack) => {
                        self.sync();
                        let _ = ack.send(());
                    }
                    Command::Shutdown(ack) => {
                        self.sync();
                        let _ = ack.send(());
                        return;
                    }
                }
                next = commands.try_recv().ok();
            }
            self.write_pending();
        }
        self.sync();
    }

    fn append(&mut self, seq: u64, record: &[u8]) {
        let cursor = Cursor {
            run_id: self.run_id.to_string(),
            sequence: seq,
        };
        // The ring holds records without cursor and boot id; protobuf
        // takes fields appended after the others, so they are appended here.
        self.frame.clear();
        self.frame.extend_from_slice(record);
        self.frame.push(RECORD_CURSOR_TAG);
        let _ = cursor.encode_length_delimited(&mut self.frame);
        if !self.boot_id.is_empty() {
            self.frame.push(RECORD_BOOT_ID_TAG);
            prost::encoding::encode_varint(self.boot_id.len() as u64, &mut self.frame);
            self.frame.extend_from_slice(self.boot_id.as_bytes());
        }
        let len = u32::try_from(self.frame.len()).unwrap_or(u32::MAX);
        self.pending.extend_from_slice(&len.to_le_bytes());
        self.pending.extend_from_slice(&self.frame);
        self.pending_records += 1;
        if self.pending.len() >= WRITE_BUFFER_BYTES {
            self.write_pending();
        }
        if self.written + self.pending.len() as u64 >= self.segment_bytes {
            self.rotate();
        }
    }

    /// Writes the gathered frames. A full or failing disk must not stop
    /// the daemon: the records stay in the ring, their loss is counted
    /// (bus drop counter `journal`), and a partly written frame is cut off
    /// so the records written after the disk recovers stay readable.
    fn write_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        match self.file.write_all(&self.pending) {
            Ok(()) => self.written += self.pending.len() as u64,
            Err(_) => {
                self.failed
                    .fetch_add(self.pending_records, Ordering::Relaxed);
                let _ = self.file.set_len(self.written);
            }
        }
        self.pending.clear();
        self.pending_records = 0;
    }

    fn sync(&mut self) {
        self.write_pending();
        // A failed fsync cannot say which records it lost; the ones whose
        // write failed are already counted.
        let _ = self.file.sync_data();
    }

    fn rotate(&mut self) {
        self.sync();
        let Ok(file) = create(&self.dir, self.index + 1) else {
            return;
        };
        self.index += 1;
        self.file = file;
        self.written = 0;
        self.enforce_bound();
    }

    /// Deletes the oldest segments while the journal exceeds its bound,
    /// never the one being written.
    fn enforce_bound(&self) {
        let Ok(segments) = list(&self.dir) else {
            return;
        };
        let mut total: u64 = segments.iter().map(|(_, _, size)| size).sum();
        for (index, path, size) in segments {
            if total <= self.max_bytes || index >= self.index {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
    }
}

fn create(dir: &Path, index: u64) -> Result<File, TelemetryError> {
    let path = segment_path(dir, index);
    File::options()
        .create_new(true)
        .append(true)
        .open(&path)
        .map_err(|source| TelemetryError::Journal { path, source })
}
