//! The text form of a bus cursor, `<run_id>:<sequence>`, and cursor files.

use std::path::Path;

use trident_proto::v1::Cursor;

use crate::exit::{CliError, CliResult};

/// Formats a cursor as `<run_id>:<sequence>`.
pub fn format(cursor: &Cursor) -> String {
    format!("{}:{}", cursor.run_id, cursor.sequence)
}

/// Parses `<run_id>:<sequence>`.
pub fn parse(text: &str) -> CliResult<Cursor> {
    let text = text.trim();
    let bad = || {
        CliError::Usage(format!(
            "invalid cursor {text:?}: expected \"<run_id>:<sequence>\" as printed by `trident logs -o json`"
        ))
    };
    let (run_id, sequence) = text.rsplit_once(':').ok_or_else(bad)?;
    if run_id.is_empty() {
        return Err(bad());
    }
    let sequence = sequence.parse::<u64>().map_err(|_| bad())?;
    Ok(Cursor {
        run_id: run_id.to_string(),
        sequence,
    })
}

/// Reads a cursor file; a missing or empty file means "no cursor yet".
pub fn read_file(path: &Path) -> CliResult<Option<Cursor>> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => parse(&text).map(Some),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(CliError::file("cannot read cursor file", path, err)),
    }
}

/// Replaces the cursor file atomically (write a sibling, rename), so a
/// crash never leaves a torn cursor.
pub fn write_file(path: &Path, cursor: &Cursor) -> CliResult<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, format!("{}\n", format(cursor)))
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| CliError::file("cannot write cursor file", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_text_round_trips() {
        let cursor = Cursor {
            run_id: "5b0c3c9e-1111-4a4a-8888-000000000001".into(),
            sequence: 42,
        };
        assert_eq!(parse(&format(&cursor)).expect("parse"), cursor);
    }

    #[test]
    fn malformed_cursor_is_a_usage_error() {
        for text in ["", "abc", ":5", "run:x"] {
            assert!(parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn cursor_file_missing_means_none_and_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cursor");
        assert_eq!(read_file(&path).expect("read"), None);
        let cursor = Cursor {
            run_id: "r".into(),
            sequence: 7,
        };
        write_file(&path, &cursor).expect("write");
        assert_eq!(read_file(&path).expect("read"), Some(cursor));
    }
}
