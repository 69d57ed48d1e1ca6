//! One line of a file in bounded memory: at most `max` bytes of it are
//! kept, the rest up to the newline is skipped (a corrupt file may hold
//! gigabytes without a newline).

use std::io::{self, BufRead};

/// How a line ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineEnd {
    /// At a newline (not kept in the line).
    Newline,
    /// At the end of the file, without a newline (possibly empty).
    Eof,
    /// Longer than `max`: the first `max` bytes are kept, the rest skipped.
    Cut,
}

/// Reads the next line into `line` (cleared first).
pub(super) fn read_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineEnd> {
    line.clear();
    let mut cut = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if cut { LineEnd::Cut } else { LineEnd::Eof });
        }
        let (chunk, newline) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        let room = max.saturating_sub(line.len());
        if chunk.len() > room {
            cut = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len() + usize::from(newline);
        reader.consume(used);
        if newline {
            return Ok(if cut { LineEnd::Cut } else { LineEnd::Newline });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn lines(text: &[u8], max: usize) -> Vec<(Vec<u8>, LineEnd)> {
        // A tiny buffer, so lines span many reads.
        let mut reader = io::BufReader::with_capacity(3, text);
        let mut out = Vec::new();
        let mut line = Vec::new();
        loop {
            let end = read_line(&mut reader, &mut line, max).unwrap();
            if end == LineEnd::Eof && line.is_empty() {
                return out;
            }
            out.push((line.clone(), end));
            if end == LineEnd::Eof {
                return out;
            }
        }
    }

    #[test]
    fn lines_are_split_at_newlines_and_long_ones_cut() {
        let got = lines(b"one\n\ntoo long here\nlast", 8);
        assert_eq!(
            got,
            vec![
                (b"one".to_vec(), LineEnd::Newline),
                (Vec::new(), LineEnd::Newline),
                (b"too long".to_vec(), LineEnd::Cut),
                (b"last".to_vec(), LineEnd::Eof),
            ]
        );
        assert_eq!(lines(b"", 8), vec![]);
        assert_eq!(lines(b"x\n", 8), vec![(b"x".to_vec(), LineEnd::Newline)]);
        assert_eq!(
            lines(b"123456789", 8),
            vec![(b"12345678".to_vec(), LineEnd::Cut)]
        );
    }
}
