//! Naming, listing and framing of journal segment files.

use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Segment file name prefix and suffix: `segment-000000000001.log`.
const SEGMENT_PREFIX: &str = "segment-";
const SEGMENT_SUFFIX: &str = ".log";
/// Upper bound of one framed record; anything larger is corruption.
pub(crate) const MAX_FRAME: u32 = 64 * 1024 * 1024;

/// Path of the segment with this index.
pub(crate) fn segment_path(dir: &Path, index: u64) -> PathBuf {
    dir.join(format!("{SEGMENT_PREFIX}{index:012}{SEGMENT_SUFFIX}"))
}

/// Segments in the directory as (index, path, size), oldest first.
pub(crate) fn list(dir: &Path) -> io::Result<Vec<(u64, PathBuf, u64)>> {
    let mut found = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(index) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SEGMENT_PREFIX))
            .and_then(|n| n.strip_suffix(SEGMENT_SUFFIX))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let size = entry.metadata()?.len();
        found.push((index, entry.path(), size));
    }
    found.sort_by_key(|(index, _, _)| *index);
    Ok(found)
}

/// Reads the framed records of one segment, calling `visit` with each. A
/// torn last frame (crash mid-write) ends the segment quietly.
pub(crate) fn read_frames(path: &Path, mut visit: impl FnMut(&[u8])) -> io::Result<()> {
    read_frames_from(path, 0, |frame| {
        visit(frame);
        true
    })
    .map(|_| ())
}

/// Reads frames from byte `offset` while `visit` returns true. Returns the
/// offset after the last frame read and whether the segment's end (or a
/// torn frame) was reached.
pub(crate) fn read_frames_from(
    path: &Path,
    offset: u64,
    mut visit: impl FnMut(&[u8]) -> bool,
) -> io::Result<(u64, bool)> {
    // A segment is a file the journal wrote, never a link planted there.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)?;
    // A length field is only believed up to what the file still holds, so
    // a corrupt one cannot make us allocate up to MAX_FRAME for nothing.
    let file_len = file.metadata()?.len();
    file.seek(SeekFrom::Start(offset))?;
    let mut reader = io::BufReader::with_capacity(256 * 1024, file);
    let mut position = offset;
    let mut buf = Vec::new();
    loop {
        let mut len = [0u8; 4];
        match reader.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok((position, true)),
            Err(e) => return Err(e),
        }
        let len = u32::from_le_bytes(len);
        if len > MAX_FRAME || position + 4 + u64::from(len) > file_len {
            return Ok((position, true));
        }
        buf.resize(len as usize, 0);
        match reader.read_exact(&mut buf) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok((position, true)),
            Err(e) => return Err(e),
        }
        position += 4 + u64::from(len);
        if !visit(&buf) {
            return Ok((position, false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_frame_ends_the_segment_without_losing_the_earlier_ones() {
        let dir = std::env::temp_dir().join(format!("trident-journal-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = segment_path(&dir, 7);
        let mut bytes = Vec::new();
        for frame in [&b"first"[..], &b"second"[..]] {
            bytes.extend_from_slice(&(frame.len() as u32).to_le_bytes());
            bytes.extend_from_slice(frame);
        }
        bytes.extend_from_slice(&100u32.to_le_bytes());
        bytes.extend_from_slice(b"torn");
        std::fs::write(&path, &bytes).expect("write");
        let mut frames = Vec::new();
        read_frames(&path, |f| frames.push(f.to_vec())).expect("read");
        assert_eq!(frames, [b"first".to_vec(), b"second".to_vec()]);
        assert_eq!(list(&dir).expect("list")[0].0, 7);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_length_field_beyond_the_end_of_the_file_is_a_torn_frame() {
        // A 4-byte header claiming 60 MiB made the reader allocate 60 MiB
        // before finding that the file ends; it now stops at the header,
        // keeping the frames before it.
        let dir = tempfile::tempdir().expect("temp dir");
        let path = segment_path(dir.path(), 1);
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&2u32.to_le_bytes());
        bytes.extend_from_slice(b"ok");
        bytes.extend_from_slice(&(60u32 << 20).to_le_bytes());
        bytes.extend_from_slice(b"short");
        std::fs::write(&path, &bytes).expect("write");
        let mut frames = Vec::new();
        let (end, reached_end) = read_frames_from(&path, 0, |f| {
            frames.push(f.to_vec());
            true
        })
        .expect("read");
        assert_eq!(frames, [b"ok".to_vec()]);
        assert_eq!((end, reached_end), (6, true));
    }
}
