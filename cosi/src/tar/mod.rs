//! A small sequential tar reader.
//!
//! COSI readers must work on non-seekable streams (HTTP) and hand out the
//! data of one entry at a time as a `Read`, borrowing the archive. The `tar`
//! crate's iterator API ties entries to an `Archive` borrow that cannot be
//! stored next to the archive, so we parse the (simple) format ourselves:
//! 512-byte headers in ustar/GNU form, PAX `x` records for long paths and
//! sizes, GNU `L` long names; global PAX headers and links are skipped.

use std::io::{self, Read};

const BLOCK: usize = 512;
/// Upper bound for PAX/GNU long-name payloads we buffer in memory.
const MAX_META_ENTRY: u64 = 1 << 20;

/// What kind of entry a header announced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Directory,
    Other,
}

/// One entry's header, after PAX/GNU extensions were applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryHeader {
    pub path: String,
    pub size: u64,
    pub kind: EntryKind,
}

/// Why the archive could not be parsed.
#[derive(Debug, thiserror::Error)]
pub enum TarError {
    #[error("malformed header at byte {offset}: {reason}")]
    Malformed { offset: u64, reason: String },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Sequential reader over a tar stream.
#[derive(Debug)]
pub struct TarReader<R> {
    inner: R,
    /// Bytes consumed from `inner` so far.
    offset: u64,
    /// Unread data bytes of the current entry.
    remaining: u64,
    /// Zero padding after the current entry's data.
    padding: u64,
    ended: bool,
}

fn padding_for(size: u64) -> u64 {
    (BLOCK as u64 - size % BLOCK as u64) % BLOCK as u64
}

fn malformed(offset: u64, reason: impl Into<String>) -> TarError {
    TarError::Malformed {
        offset,
        reason: reason.into(),
    }
}

/// Octal (NUL/space terminated) or GNU base-256 numeric field.
fn parse_number(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|b| b & 0x80 != 0) {
        // base-256: big-endian, first byte's high bit is the marker.
        let mut v: u64 = u64::from(field[0] & 0x7f);
        for &b in &field[1..] {
            v = v.checked_mul(256)?.checked_add(u64::from(b))?;
        }
        return Some(v);
    }
    let text = std::str::from_utf8(field).ok()?;
    let text = text.trim_matches(|c: char| c == '\0' || c == ' ');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

fn c_string(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// Applies the `path` and `size` records of a PAX extended header.
fn parse_pax(data: &[u8], path: &mut Option<String>, size: &mut Option<u64>) {
    let mut rest = data;
    while !rest.is_empty() {
        let Some(space) = rest.iter().position(|&b| b == b' ') else {
            return;
        };
        let Some(len) = std::str::from_utf8(&rest[..space])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        else {
            return;
        };
        if len <= space || len > rest.len() {
            return;
        }
        let record = &rest[space + 1..len];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(eq) = record.iter().position(|&b| b == b'=') {
            let (key, value) = (&record[..eq], &record[eq + 1..]);
            match key {
                b"path" => *path = Some(String::from_utf8_lossy(value).into_owned()),
                b"size" => {
                    *size = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
                }
                _ => {}
            }
        }
        rest = &rest[len..];
    }
}

impl<R: Read> TarReader<R> {
    pub fn new(inner: R) -> Self {
        TarReader {
            inner,
            offset: 0,
            remaining: 0,
            padding: 0,
            ended: false,
        }
    }

    /// Bytes consumed from the underlying stream.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Unread data bytes of the current entry.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Reads exactly `buf.len()` bytes; `Ok(false)` on a clean EOF before
    /// the first byte.
    fn read_block(&mut self, buf: &mut [u8]) -> Result<bool, TarError> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) if filled == 0 => return Ok(false),
                Ok(0) => {
                    return Err(malformed(self.offset, "archive ends inside a header"));
                }
                Ok(n) => {
                    filled += n;
                    self.offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(true)
    }

    fn skip(&mut self, mut n: u64) -> Result<(), TarError> {
        let mut scratch = [0u8; 64 * 1024];
        while n > 0 {
            let want = n.min(scratch.len() as u64) as usize;
            let got = self.inner.read(&mut scratch[..want])?;
            if got == 0 {
                return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
            }
            n -= got as u64;
            self.offset += got as u64;
        }
        Ok(())
    }

    fn read_small_entry(&mut self, size: u64) -> Result<Vec<u8>, TarError> {
        if size > MAX_META_ENTRY {
            return Err(malformed(
                self.offset,
                format!("extension header of {size} bytes"),
            ));
        }
        let mut data = vec![0u8; size as usize];
        if !data.is_empty() && !self.read_block(&mut data)? {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        self.skip(padding_for(size))?;
        Ok(data)
    }

    /// Advances to the next entry, skipping what is left of the current one.
    /// `Ok(None)` at the end-of-archive marker or a clean end of stream.
    pub fn next_entry(&mut self) -> Result<Option<EntryHeader>, TarError> {
        if self.ended {
            return Ok(None);
        }
        self.skip(self.remaining + self.padding)?;
        self.remaining = 0;
        self.padding = 0;
        let mut pax_path = None;
        let mut pax_size = None;
        let mut long_name = None;
        loop {
            let header_offset = self.offset;
            let mut h = [0u8; BLOCK];
            if !self.read_block(&mut h)? || h.iter().all(|&b| b == 0) {
                self.ended = true;
                return Ok(None);
            }
            let stored = parse_number(&h[148..156])
                .ok_or_else(|| malformed(header_offset, "unreadable checksum field"))?;
            let sum: u64 = h
                .iter()
                .enumerate()
                .map(|(i, &b)| {
                    if (148..156).contains(&i) {
                        32
                    } else {
                        u64::from(b)
                    }
                })
                .sum();
            if stored != sum {
                return Err(malformed(header_offset, "header checksum mismatch"));
            }
            let size = parse_number(&h[124..136])
                .ok_or_else(|| malformed(header_offset, "unreadable size field"))?;
            let typeflag = h[156];
            match typeflag {
                b'x' => {
                    let data = self.read_small_entry(size)?;
                    parse_pax(&data, &mut pax_path, &mut pax_size);
                    continue;
                }
                b'g' | b'K' => {
                    self.read_small_entry(size)?;
                    continue;
                }
                b'L' => {
                    let data = self.read_small_entry(size)?;
                    long_name = Some(c_string(&data));
                    continue;
                }
                _ => {}
            }
            let mut path = c_string(&h[0..100]);
            // POSIX ustar splits long names into prefix + name.
            if &h[257..263] == b"ustar\0" {
                let prefix = c_string(&h[345..500]);
                if !prefix.is_empty() {
                    path = format!("{prefix}/{path}");
                }
            }
            let path = pax_path.or(long_name).unwrap_or(path);
            let size = pax_size.unwrap_or(size);
            let kind = match typeflag {
                b'0' | 0 | b'7' => EntryKind::File,
                b'5' => EntryKind::Directory,
                _ => EntryKind::Other,
            };
            // Only regular files carry data in practice; trust the size
            // field for every kind as tar writers do.
            let data_size = if kind == EntryKind::Directory {
                0
            } else {
                size
            };
            self.remaining = data_size;
            self.padding = padding_for(data_size);
            let path = path.trim_start_matches("./").to_owned();
            return Ok(Some(EntryHeader { path, size, kind }));
        }
    }

    /// Reads the current entry's data. A stream that ends before the entry
    /// does yields `UnexpectedEof`.
    pub fn read_data(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(self.remaining) as usize;
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "archive ends inside an entry",
            ));
        }
        self.remaining -= n as u64;
        self.offset += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            b.append_data(&mut h, path, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn read_all<R: Read>(t: &mut TarReader<R>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 7];
        loop {
            let n = t.read_data(&mut buf).unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[test]
    fn reads_entries_in_order_with_data_and_skips_unread_data() {
        let long = format!("images/{}/x.zst", "d".repeat(150));
        let bytes = archive(&[("a", b"hello"), ("skipped", &[1u8; 1000]), (&long, b"xyz")]);
        let mut t = TarReader::new(&bytes[..]);
        let e = t.next_entry().unwrap().unwrap();
        assert_eq!((e.path.as_str(), e.size), ("a", 5));
        assert_eq!(read_all(&mut t), b"hello");
        assert_eq!(t.next_entry().unwrap().unwrap().path, "skipped");
        let e = t.next_entry().unwrap().unwrap();
        assert_eq!(e.path, long);
        assert_eq!(read_all(&mut t), b"xyz");
        assert!(t.next_entry().unwrap().is_none());
    }

    #[test]
    fn truncated_entry_data_is_unexpected_eof() {
        let bytes = archive(&[("a", &[7u8; 2000])]);
        let mut t = TarReader::new(&bytes[..1000]);
        t.next_entry().unwrap().unwrap();
        let mut buf = vec![0u8; 4096];
        let mut err = None;
        for _ in 0..10 {
            match t.read_data(&mut buf) {
                Ok(_) => {}
                Err(e) => {
                    err = Some(e);
                    break;
                }
            }
        }
        assert_eq!(err.unwrap().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn corrupt_header_checksum_is_rejected() {
        let mut bytes = archive(&[("a", b"x")]);
        bytes[0] = b'b';
        assert!(matches!(
            TarReader::new(&bytes[..]).next_entry(),
            Err(TarError::Malformed { offset: 0, .. })
        ));
    }

    #[test]
    fn base256_and_octal_sizes_parse() {
        assert_eq!(parse_number(b"0000000012\0"), Some(10));
        let mut f = [0u8; 12];
        f[0] = 0x80;
        f[11] = 5;
        f[10] = 1;
        assert_eq!(parse_number(&f), Some(261));
    }
}
