//! An indexed COSI's side of the reader: its head read by range requests
//! (so an adaptive update, or a check that needs only the metadata, does
//! not start a whole download), and the chunk index member, checked
//! against the metadata that pins it before anything is handed out.

use std::io::Read;

use super::{
    Cancellable, CosiSource, METADATA_ENTRY, RangeReader, RangeStream, SourceOptions, next_entry,
    read_entry_exact,
};
use crate::chunk_index::{ChunkIndex, ChunkIndexRef};
use crate::error::CosiError;
use crate::hash::ExpectedHash;
use crate::metadata::Metadata;
use crate::tar::{EntryKind, TarReader};

impl CosiSource {
    /// Like [`CosiSource::open`], but reads the archive through bounded
    /// range requests ([`RangeStream`]): for reading an image's head (the
    /// marker, the metadata, the chunk index) without starting a whole
    /// download. Also returns the [`RangeReader`] it used (its clones
    /// share the file's identity, so later ranges are of the same file).
    /// A server that does not serve ranges is
    /// [`CosiError::RangesUnsupported`]; `oci://` sources are
    /// [`CosiError::UnsupportedUrl`] here.
    pub fn open_by_ranges(
        url: &str,
        expected: &ExpectedHash,
        options: &SourceOptions,
    ) -> Result<(Self, RangeReader), CosiError> {
        let ranges = RangeReader::open(url, options)?;
        let stream = Cancellable {
            inner: Box::new(RangeStream::new(ranges.clone())),
            cancel: options.cancel.clone(),
            url: url.to_owned(),
        };
        let source = Self::from_reader(url, Box::new(stream), expected)?;
        Ok((source, ranges))
    }
}

/// Reads the chunk index member `pinned` names, which must follow
/// `metadata.json` (the regions' `dataOffset`s count from its end), checks
/// its size and SHA-384 and parses it against `metadata`; returns it and
/// the offset where its member ends. Nothing is written before this.
pub(super) fn read_chunk_index(
    name: &str,
    tar: &mut TarReader<Box<dyn Read + Send>>,
    pinned: &ChunkIndexRef,
    metadata: &Metadata,
) -> Result<(ChunkIndex, u64), CosiError> {
    let missing = |reason: String| CosiError::ChunkIndexEntry {
        expected: pinned.path.clone(),
        reason,
    };
    let entry = next_entry(name, tar)?
        .ok_or_else(|| missing(format!("the archive ends after {METADATA_ENTRY}")))?;
    if entry.path != pinned.path || entry.kind != EntryKind::File {
        return Err(missing(format!(
            "the entry after {METADATA_ENTRY} is {:?}",
            entry.path
        )));
    }
    if entry.size != pinned.size {
        return Err(missing(format!(
            "its member has {} bytes, metadata.json says {}",
            entry.size, pinned.size
        )));
    }
    let mut bytes = vec![0u8; entry.size as usize];
    read_entry_exact(name, tar, &mut bytes)?;
    let actual = crate::hash::sha384_hex(&bytes);
    if actual != pinned.sha384 {
        return Err(CosiError::ChunkIndexHashMismatch {
            expected: pinned.sha384.clone(),
            actual,
        });
    }
    let index = ChunkIndex::parse(&bytes, metadata)?;
    // The member's data is followed by zero padding to the next block.
    Ok((index, tar.offset().next_multiple_of(512)))
}
