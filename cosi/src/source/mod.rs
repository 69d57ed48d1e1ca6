//! Streaming, hash-verifying COSI reader.
//!
//! The archive is read strictly front to back, so it works on an HTTP body
//! as well as on a file, and never holds more than one buffer of a region in
//! memory. `metadata.json` is checked against the caller's expected hash
//! before any region is handed out; each region is checked against the
//! SHA-384 and sizes in the metadata as it is read (see [`RegionReader`]).

mod hashing;
mod indexed;
#[cfg(feature = "oci")]
mod oci;
mod options;
mod region;
mod transport;

use std::io::Read;

use crate::chunk_index::ChunkIndex;
use crate::error::CosiError;
use crate::hash::ExpectedHash;
use crate::metadata::{Disk, Metadata, RegionType};
use crate::tar::{EntryKind, TarError, TarReader};

pub use options::{
    Cancel, DEFAULT_DOWNLOAD_DEADLINE, DEFAULT_DOWNLOAD_RETRIES, DEFAULT_HTTP_CONNECT_TIMEOUT,
    DEFAULT_HTTP_READ_TIMEOUT, DEFAULT_RESTARTS_WITHOUT_RANGES, DEFAULT_RETRY_BACKOFF,
    DEFAULT_RETRY_BACKOFF_MAX, HttpTimeouts, ResumePolicy, RetryNotice, RetryObserver,
    SourceOptions,
};
pub use region::{RegionInfo, RegionKind, RegionReader};
pub use transport::{RangeReader, RangeStream};

/// The bytes behind `url` as a stream, unverified: `file://` (or a bare
/// absolute path), `http(s)://` within `options`' timeouts, or `oci://`
/// (a one-layer artifact, its layer digest-checked as it is read, with
/// `options`' credentials). For artefacts other than COSI files (extension
/// images), whose callers hash the whole stream themselves.
pub fn open_url(url: &str, options: &SourceOptions) -> Result<Box<dyn Read + Send>, CosiError> {
    open_stream(url, options)
}

/// [`dispatch`]ed, its reads failing once `options.cancel` is requested.
fn open_stream(url: &str, options: &SourceOptions) -> Result<transport::ImageStream, CosiError> {
    let inner = dispatch(url, options)?;
    Ok(Box::new(Cancellable {
        inner,
        cancel: options.cancel.clone(),
        url: url.to_owned(),
    }))
}

/// A stream whose next read fails with [`CosiError::Cancelled`] once its
/// cancel is requested: a slow download stops within one read, not one
/// region.
struct Cancellable {
    inner: transport::ImageStream,
    cancel: options::Cancel,
    url: String,
}

impl Read for Cancellable {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.requested() {
            return Err(std::io::Error::other(CosiError::Cancelled {
                what: format!("reading {}", self.url),
            }));
        }
        self.inner.read(buf)
    }
}

/// The scheme dispatch: `file:///abs/path`, a bare absolute path,
/// `http(s)://...` or `oci://...` into a stream.
fn dispatch(url: &str, options: &SourceOptions) -> Result<transport::ImageStream, CosiError> {
    if let Some(path) = url.strip_prefix("file://") {
        return transport::open_file(url, path);
    }
    if url.starts_with('/') {
        return transport::open_file(url, url);
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return transport::open_http(url, options);
    }
    #[cfg(feature = "oci")]
    if url.starts_with(oci::OCI_SCHEME) {
        return oci::open(url, options);
    }
    Err(CosiError::UnsupportedUrl {
        url: url.to_owned(),
    })
}

/// Name of the first entry of every COSI file.
pub const MARKER_ENTRY: &str = "cosi-marker";
/// Name of the second entry.
pub const METADATA_ENTRY: &str = "metadata.json";
/// `metadata.json` larger than this is rejected rather than buffered.
const MAX_METADATA_BYTES: u64 = 16 << 20;
/// Default zstd decoder window limit when metadata omits `compression`.
/// zstd's smallest window log.
const MIN_DECODER_WINDOW_LOG: u32 = 10;

/// An opened COSI file whose metadata passed hash and validation checks.
pub struct CosiSource {
    url: String,
    tar: TarReader<Box<dyn Read + Send>>,
    metadata: Metadata,
    metadata_sha384: String,
    /// `metadata.json` as read (what its SHA-384 is of).
    metadata_json: Vec<u8>,
    /// The chunk index of an indexed COSI, checked against the metadata,
    /// and the archive offset where its member ends.
    chunk_index: Option<(ChunkIndex, u64)>,
    disk: Disk,
    /// Index into `disk.gptRegions` of the next region expected in the tar.
    next_index: usize,
    /// The region being read, if any (kept here so a region the caller did
    /// not read to the end is still verified before moving on).
    current: Option<region::State>,
}

impl std::fmt::Debug for CosiSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CosiSource")
            .field("url", &self.url)
            .field("metadata_sha384", &self.metadata_sha384)
            .field("next_index", &self.next_index)
            .finish_non_exhaustive()
    }
}

impl CosiSource {
    /// Opens `url` (`file:///path`, an absolute path, `http(s)://...` or
    /// `oci://registry/repository:tag` / `@sha256:...`) with `options`,
    /// checks the marker, reads and verifies `metadata.json`.
    pub fn open(
        url: &str,
        expected: &ExpectedHash,
        options: &SourceOptions,
    ) -> Result<Self, CosiError> {
        Self::from_reader(url, open_stream(url, options)?, expected)
    }

    /// Like [`CosiSource::open`] over an already open stream; `name` is
    /// used in error messages.
    pub fn from_reader(
        name: &str,
        reader: Box<dyn Read + Send>,
        expected: &ExpectedHash,
    ) -> Result<Self, CosiError> {
        let mut tar = TarReader::new(reader);
        let marker = next_entry(name, &mut tar)?.ok_or_else(|| CosiError::NotCosi {
            url: name.to_owned(),
            reason: "the archive is empty".to_owned(),
        })?;
        if marker.path != MARKER_ENTRY {
            return Err(CosiError::NotCosi {
                url: name.to_owned(),
                reason: format!(
                    "first entry is {:?}, expected {MARKER_ENTRY:?}",
                    marker.path
                ),
            });
        }
        let meta = next_entry(name, &mut tar)?.ok_or_else(|| CosiError::NotCosi {
            url: name.to_owned(),
            reason: format!("the archive ends before {METADATA_ENTRY}"),
        })?;
        if meta.path != METADATA_ENTRY || meta.kind != EntryKind::File {
            return Err(CosiError::NotCosi {
                url: name.to_owned(),
                reason: format!(
                    "second entry is {:?}, expected {METADATA_ENTRY:?}",
                    meta.path
                ),
            });
        }
        if meta.size > MAX_METADATA_BYTES {
            return Err(CosiError::NotCosi {
                url: name.to_owned(),
                reason: format!(
                    "{METADATA_ENTRY} is {} bytes, limit {MAX_METADATA_BYTES}",
                    meta.size
                ),
            });
        }
        let mut json = vec![0u8; meta.size as usize];
        read_entry_exact(name, &mut tar, &mut json)?;
        let actual = crate::hash::sha384_hex(&json);
        if let ExpectedHash::Sha384(want) = expected
            && *want != actual
        {
            return Err(CosiError::MetadataHashMismatch {
                expected: want.clone(),
                actual,
            });
        }
        let metadata = Metadata::from_json(&json)?;
        metadata.validate()?;
        let disk = metadata.disk.clone().ok_or_else(|| {
            CosiError::Metadata(crate::metadata::MetadataError::Invalid {
                location: "disk".to_owned(),
                reason: "is required since COSI 1.2".to_owned(),
            })
        })?;
        let chunk_index = match metadata.chunk_index.clone() {
            Some(pinned) => Some(indexed::read_chunk_index(
                name, &mut tar, &pinned, &metadata,
            )?),
            None => None,
        };
        Ok(CosiSource {
            url: name.to_owned(),
            tar,
            metadata,
            metadata_sha384: actual,
            metadata_json: json,
            chunk_index,
            disk,
            next_index: 0,
            current: None,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// `metadata.json`'s bytes, as read and hash-checked.
    pub fn metadata_json(&self) -> &[u8] {
        &self.metadata_json
    }

    /// The chunk index of an indexed COSI (hash-checked against
    /// `metadata.json` and checked to cover every region when the source
    /// was opened).
    pub fn chunk_index(&self) -> Option<&ChunkIndex> {
        self.chunk_index.as_ref().map(|(index, _)| index)
    }

    /// The archive offset of a region's data in an indexed COSI: where the
    /// index member ends plus the region's `dataOffset`.
    pub fn region_data_offset(&self, path: &str) -> Option<u64> {
        let (index, end) = self.chunk_index.as_ref()?;
        Some(end + index.region(path)?.data_offset)
    }

    /// Lowercase hex SHA-384 of `metadata.json`.
    pub fn metadata_sha384(&self) -> &str {
        &self.metadata_sha384
    }

    /// The metadata hash in the `Completed.image_hash` form `sha384:<hex>`.
    pub fn image_hash(&self) -> String {
        format!("sha384:{}", self.metadata_sha384)
    }

    /// The disk layout (validation guarantees it is present).
    pub fn disk(&self) -> &Disk {
        &self.disk
    }

    /// Sum of the uncompressed sizes of all regions.
    pub fn total_uncompressed(&self) -> u64 {
        self.disk()
            .gpt_regions
            .iter()
            .map(|r| r.image.uncompressed_size)
            .sum()
    }

    /// The decoder's window limit: the metadata's, raised to zstd's
    /// smallest window (a smaller declared value only says the frames use
    /// small windows).
    pub fn max_window_log(&self) -> u32 {
        self.metadata
            .compression
            .max_window_log
            .max(MIN_DECODER_WINDOW_LOG)
    }

    /// Advances to the next region image in the archive (in `gptRegions`
    /// order), skipping unknown entries. A region the caller did not read to
    /// its end is hash-checked (without decompressing) first. Returns
    /// `Ok(None)` once every region was read; errors if the archive ends
    /// before that.
    pub fn next_region(&mut self) -> Result<Option<RegionReader<'_>>, CosiError> {
        if let Some(mut state) = self.current.take() {
            state.skip_rest(&self.url, &mut self.tar)?;
        }
        let Some(expected) = self.disk.gpt_regions.get(self.next_index).cloned() else {
            return Ok(None);
        };
        loop {
            let Some(entry) = next_entry(&self.url, &mut self.tar)? else {
                return Err(CosiError::MissingRegion {
                    path: expected.image.path,
                });
            };
            if entry.path == expected.image.path {
                if entry.size != expected.image.compressed_size {
                    return Err(CosiError::SizeMismatch {
                        path: entry.path,
                        kind: crate::error::SizeKind::Compressed,
                        expected: expected.image.compressed_size,
                        actual: entry.size,
                    });
                }
                break;
            }
            let later = self.disk.gpt_regions[self.next_index..]
                .iter()
                .any(|r| r.image.path == entry.path);
            if later {
                return Err(CosiError::RegionOrder {
                    path: entry.path,
                    expected: expected.image.path,
                });
            }
            // Unknown entries are ignored, as the spec requires.
        }
        let index = self.next_index;
        self.next_index += 1;
        let info = self.region_info(index, &expected);
        let state = region::State::new(info, self.max_window_log())?;
        self.current = Some(state);
        Ok(self
            .current
            .as_mut()
            .map(|state| RegionReader::new(&self.url, &mut self.tar, state)))
    }

    /// Every region of `disk.gptRegions` described, in order (what
    /// [`CosiSource::next_region`] hands out, without reading any).
    pub fn region_infos(&self) -> Vec<RegionInfo> {
        self.disk
            .gpt_regions
            .iter()
            .enumerate()
            .map(|(i, r)| self.region_info(i, r))
            .collect()
    }

    fn region_info(&self, index: usize, region: &crate::metadata::GptRegion) -> RegionInfo {
        let kind = match (region.region_type, region.number) {
            (RegionType::PrimaryGpt, _) => RegionKind::PrimaryGpt,
            (RegionType::Partition, n) => RegionKind::Partition {
                number: n.unwrap_or(0),
            },
        };
        let filesystem = self.metadata.filesystem_for_path(&region.image.path);
        RegionInfo {
            index,
            kind,
            mount_point: filesystem.map(|f| f.mount_point.clone()),
            part_type: filesystem.map(|f| f.part_type.clone()),
            fs_type: filesystem.map(|f| f.fs_type.clone()),
            verity_of: self
                .metadata
                .verity_hash_of(&region.image.path)
                .map(|f| f.mount_point.clone()),
            image: region.image.clone(),
        }
    }

    /// Reads (and hash-checks) every remaining region without writing it
    /// anywhere; errors like [`CosiSource::next_region`] does.
    pub fn verify_remaining(&mut self) -> Result<(), CosiError> {
        while self.next_region()?.is_some() {}
        Ok(())
    }
}

fn tar_error(url: &str, at: u64, err: TarError) -> CosiError {
    match err {
        TarError::Malformed { offset, reason } => CosiError::Tar {
            url: url.to_owned(),
            offset,
            reason,
        },
        TarError::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => CosiError::Tar {
            url: url.to_owned(),
            offset: at,
            reason: "archive ends inside an entry".to_owned(),
        },
        // A CosiError that travelled through `Read` (a cancelled read) is
        // itself; other I/O errors are read errors.
        TarError::Io(source) => CosiError::from_io(url, source),
    }
}

fn next_entry(
    url: &str,
    tar: &mut TarReader<Box<dyn Read + Send>>,
) -> Result<Option<crate::tar::EntryHeader>, CosiError> {
    tar.next_entry()
        .map_err(|e| tar_error(url, tar.offset(), e))
}

fn read_entry_exact(
    url: &str,
    tar: &mut TarReader<Box<dyn Read + Send>>,
    buf: &mut [u8],
) -> Result<(), CosiError> {
    let mut filled = 0;
    while filled < buf.len() {
        match tar.read_data(&mut buf[filled..]) {
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(CosiError::Truncated {
                    path: METADATA_ENTRY.to_owned(),
                    expected: buf.len() as u64,
                    actual: filled as u64,
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(CosiError::Read {
                    url: url.to_owned(),
                    source,
                });
            }
        }
    }
    Ok(())
}
