//! The index against the metadata that pins it: every region of
//! `disk.gptRegions` covered, in order, by chunks of the declared size
//! whose frames tile the region's compressed member exactly. An index that
//! does not cover its regions is refused before anything is written.

use super::{ANCHOR_BLOCK, ChunkIndex, INDEX_VERSION, IndexError, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE};
use crate::metadata::Metadata;

fn error(location: impl Into<String>, reason: impl Into<String>) -> IndexError {
    IndexError {
        location: location.into(),
        reason: reason.into(),
    }
}

/// 64 lowercase hex digits.
fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl ChunkIndex {
    /// Parses the index member's bytes and checks it against `metadata`
    /// (already validated); the error names the field.
    pub fn parse(bytes: &[u8], metadata: &Metadata) -> Result<ChunkIndex, IndexError> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let index: ChunkIndex = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let location = match e.path().to_string() {
                p if p == "." => "(root)".to_owned(),
                p => p,
            };
            error(location, e.into_inner().to_string())
        })?;
        de.end().map_err(|e| error("(root)", e.to_string()))?;
        index.check(metadata)?;
        Ok(index)
    }

    /// The checks of [`ChunkIndex::parse`].
    pub fn check(&self, metadata: &Metadata) -> Result<(), IndexError> {
        if self.version != INDEX_VERSION {
            return Err(error(
                "version",
                format!(
                    "{} is not a version this reader knows ({INDEX_VERSION})",
                    self.version
                ),
            ));
        }
        if !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&self.chunk_size)
            || !self.chunk_size.is_multiple_of(MIN_CHUNK_SIZE)
        {
            return Err(error(
                "chunkSize",
                format!(
                    "{} is not a multiple of {MIN_CHUNK_SIZE} between {MIN_CHUNK_SIZE} and \
                     {MAX_CHUNK_SIZE}",
                    self.chunk_size
                ),
            ));
        }
        let regions = metadata
            .disk
            .as_ref()
            .map(|d| d.gpt_regions.as_slice())
            .unwrap_or_default();
        if self.regions.len() != regions.len() {
            return Err(error(
                "regions",
                format!(
                    "lists {} regions, metadata.json's disk.gptRegions has {}: the index must \
                     cover every region",
                    self.regions.len(),
                    regions.len()
                ),
            ));
        }
        let mut previous_end = 0u64;
        for (i, (chunks, region)) in self.regions.iter().zip(regions).enumerate() {
            let loc = format!("regions[{i}]");
            let image = &region.image;
            if chunks.path != image.path {
                return Err(error(
                    format!("{loc}.path"),
                    format!(
                        "{:?} is not disk.gptRegions[{i}]'s image {:?}",
                        chunks.path, image.path
                    ),
                ));
            }
            if chunks.data_offset < previous_end || !chunks.data_offset.is_multiple_of(512) {
                return Err(error(
                    format!("{loc}.dataOffset"),
                    format!(
                        "{} is not a tar block boundary after the previous region's data",
                        chunks.data_offset
                    ),
                ));
            }
            previous_end = chunks.data_offset.saturating_add(image.compressed_size);
            let want = image.uncompressed_size.div_ceil(self.chunk_size);
            if chunks.chunks.len() as u64 != want {
                return Err(error(
                    format!("{loc}.chunks"),
                    format!(
                        "has {} chunks; {} uncompressed bytes in chunks of {} need {want}: the \
                         index does not cover the region",
                        chunks.chunks.len(),
                        image.uncompressed_size,
                        self.chunk_size
                    ),
                ));
            }
            let mut next = 0u64;
            for (j, chunk) in chunks.chunks.iter().enumerate() {
                let cloc = format!("{loc}.chunks[{j}]");
                if !is_sha256_hex(&chunk.sha256) {
                    return Err(error(
                        format!("{cloc}.sha256"),
                        format!("{:?} is not 64 lowercase hex digits", chunk.sha256),
                    ));
                }
                if chunk.offset != next || chunk.size == 0 {
                    return Err(error(
                        cloc,
                        format!(
                            "frame at {} of {} bytes: frames must follow each other from \
                             offset 0 with no gap or overlap (expected offset {next})",
                            chunk.offset, chunk.size
                        ),
                    ));
                }
                if let Some(anchor) = &chunk.anchor {
                    let (_, len) = self.chunk_span(j, image.uncompressed_size);
                    if !anchor.offset.is_multiple_of(ANCHOR_BLOCK)
                        || anchor.offset.saturating_add(ANCHOR_BLOCK) > len
                    {
                        return Err(error(
                            format!("{cloc}.anchor.offset"),
                            format!(
                                "{} is not the start of a whole {ANCHOR_BLOCK}-byte block \
                                 inside the chunk's {len} bytes",
                                anchor.offset
                            ),
                        ));
                    }
                    if !is_sha256_hex(&anchor.sha256) {
                        return Err(error(
                            format!("{cloc}.anchor.sha256"),
                            format!("{:?} is not 64 lowercase hex digits", anchor.sha256),
                        ));
                    }
                }
                next = chunk.offset.saturating_add(chunk.size);
            }
            if !chunks.chunks.is_empty() && next != image.compressed_size {
                return Err(error(
                    format!("{loc}.chunks"),
                    format!(
                        "frames end at byte {next}; the region's compressedSize is {}: the \
                         index does not cover the region",
                        image.compressed_size
                    ),
                ));
            }
        }
        Ok(())
    }
}
