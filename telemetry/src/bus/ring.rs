//! The in-memory ring of recent records, bounded by record count and by
//! encoded bytes. It holds one copy of each record, shared by every
//! subscriber: subscribers keep positions (sequences), never copies.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

/// Number of slots in per-kind counter arrays, indexed by `RecordKind as usize`.
pub(crate) const KIND_SLOTS: usize = 6;

/// Per-kind record counts, indexed by `RecordKind as usize`.
pub(crate) type KindCounts = [u64; KIND_SLOTS];

/// One record in the ring: its encoded bytes (a `Record` without cursor;
/// the cursor is added on delivery) and the metadata that subscribers
/// filter on without decoding.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    /// `RecordKind as u8`.
    pub kind: u8,
    /// `LogLevel as u8` for logs; 0 for other kinds.
    pub level: u8,
    /// The servicing operation the record belongs to.
    pub operation: Option<Arc<str>>,
    /// The encoded `Record` (cursor not set).
    pub bytes: Bytes,
}

/// The ring itself; lives behind the bus lock.
#[derive(Debug)]
pub(crate) struct Ring {
    entries: VecDeque<Entry>,
    /// Sequence of `entries[0]`; equals `next_seq` when empty.
    first_seq: u64,
    next_seq: u64,
    bytes: usize,
    capacity_records: usize,
    capacity_bytes: usize,
    evicted: KindCounts,
    pushed: KindCounts,
}

impl Ring {
    /// An empty ring; the first record gets sequence 1.
    pub fn new(capacity_records: usize, capacity_bytes: usize) -> Self {
        Ring {
            entries: VecDeque::new(),
            first_seq: 1,
            next_seq: 1,
            bytes: 0,
            capacity_records: capacity_records.max(1),
            capacity_bytes: capacity_bytes.max(1),
            evicted: [0; KIND_SLOTS],
            pushed: [0; KIND_SLOTS],
        }
    }

    /// Appends a record, evicting the oldest ones past either bound, and
    /// returns its sequence.
    pub fn push(&mut self, entry: Entry) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.bytes += entry.bytes.len();
        self.pushed[usize::from(entry.kind) % KIND_SLOTS] += 1;
        self.entries.push_back(entry);
        while self.entries.len() > self.capacity_records
            || (self.bytes > self.capacity_bytes && self.entries.len() > 1)
        {
            if let Some(old) = self.entries.pop_front() {
                self.bytes -= old.bytes.len();
                self.evicted[usize::from(old.kind) % KIND_SLOTS] += 1;
                self.first_seq += 1;
            }
        }
        seq
    }

    /// Sequence of the newest record (0 when none yet).
    pub fn head(&self) -> u64 {
        self.next_seq - 1
    }

    /// Sequence of the oldest record still held (head + 1 when empty).
    pub fn oldest(&self) -> u64 {
        self.first_seq
    }

    /// Number of records held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Encoded bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Capacity by record count.
    pub fn capacity_records(&self) -> usize {
        self.capacity_records
    }

    /// Capacity by encoded bytes.
    pub fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }

    /// Per-kind counts of every record evicted so far, i.e. of every record
    /// with a sequence below `oldest()`.
    pub fn evicted(&self) -> KindCounts {
        self.evicted
    }

    /// Copies (cheap: reference-counted bytes) up to `max` records starting
    /// at `from` (which must not be below `oldest()`) and not past `until`.
    pub fn read(&self, from: u64, until: u64, max: usize, out: &mut Vec<(u64, Entry)>) {
        let Some(start) = from.checked_sub(self.first_seq) else {
            return;
        };
        let Ok(start) = usize::try_from(start) else {
            return;
        };
        let last = until.min(self.head());
        if from > last {
            return;
        }
        let count = usize::try_from(last - from + 1)
            .unwrap_or(usize::MAX)
            .min(max);
        out.extend(
            self.entries
                .range(start..)
                .take(count)
                .enumerate()
                .map(|(i, e)| (from + i as u64, e.clone())),
        );
    }

    /// Per-kind counts of every record with a sequence below `seq`
    /// (`seq` within `oldest()..=head()+1`).
    pub fn counts_before(&self, seq: u64) -> KindCounts {
        if seq <= self.first_seq {
            return self.evicted;
        }
        let mut counts = self.evicted;
        let held = usize::try_from(seq - self.first_seq).unwrap_or(usize::MAX);
        if held >= self.entries.len() {
            return self.pushed;
        }
        for entry in self.entries.range(..held) {
            counts[usize::from(entry.kind) % KIND_SLOTS] += 1;
        }
        counts
    }

    /// Walks back from the newest record, oldest-last, calling `visit` on
    /// each until it returns false.
    pub fn visit_newest_first(&self, mut visit: impl FnMut(u64, &Entry) -> bool) {
        for (i, entry) in self.entries.iter().enumerate().rev() {
            if !visit(self.first_seq + i as u64, entry) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: u8, len: usize) -> Entry {
        Entry {
            kind,
            level: 0,
            operation: None,
            bytes: Bytes::from(vec![0u8; len]),
        }
    }

    #[test]
    fn ring_evicts_by_count_and_counts_evicted_kinds() {
        let mut ring = Ring::new(3, 1 << 20);
        for kind in [1, 2, 1, 1, 3] {
            ring.push(entry(kind, 10));
        }
        assert_eq!(ring.oldest(), 3);
        assert_eq!(ring.head(), 5);
        assert_eq!(ring.len(), 3);
        assert_eq!(ring.evicted()[1], 1);
        assert_eq!(ring.evicted()[2], 1);
        assert_eq!(ring.counts_before(5)[1], 3);
        assert_eq!(ring.counts_before(6)[3], 1);
    }

    #[test]
    fn ring_evicts_by_bytes_but_keeps_the_newest_record() {
        let mut ring = Ring::new(100, 25);
        ring.push(entry(1, 10));
        ring.push(entry(1, 10));
        ring.push(entry(1, 10));
        assert_eq!(ring.len(), 2);
        assert_eq!(ring.bytes(), 20);
        ring.push(entry(1, 100));
        assert_eq!(ring.len(), 1);
        assert_eq!(ring.oldest(), 4);
    }

    #[test]
    fn ring_reads_a_bounded_range() {
        let mut ring = Ring::new(10, 1 << 20);
        for _ in 0..6 {
            ring.push(entry(1, 1));
        }
        let mut out = Vec::new();
        ring.read(2, 4, 10, &mut out);
        assert_eq!(out.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [2, 3, 4]);
        out.clear();
        ring.read(5, u64::MAX, 1, &mut out);
        assert_eq!(out.len(), 1);
    }
}
