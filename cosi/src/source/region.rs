//! Reading one region: ZSTD decompression on the fly plus verification of
//! the compressed bytes' SHA-384 and of both sizes against `metadata.json`.

use std::io::{self, Read};
use std::sync::Arc;

use zstd::stream::raw::{DParameter, Decoder, InBuffer, Operation, OutBuffer};

use crate::error::{CosiError, SizeKind};
use crate::metadata::ImageFile;
use crate::tar::TarReader;

use super::hashing::HashPipeline;

/// Compressed bytes read from the archive per refill.
const INPUT_CHUNK: usize = 1 << 20;

/// What a region is on the target disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionKind {
    /// Protective MBR + primary GPT header + entries, written at offset 0.
    PrimaryGpt,
    /// GPT partition with this 1-based entry number.
    Partition { number: u32 },
}

/// Description of a region, from `disk.gptRegions` and the matching
/// `images[]` filesystem (if the region holds one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// Index in `disk.gptRegions`.
    pub index: usize,
    pub kind: RegionKind,
    pub image: ImageFile,
    pub mount_point: Option<String>,
    pub part_type: Option<String>,
    pub fs_type: Option<String>,
    /// For a region holding a verity hash tree: the mount point of the
    /// filesystem it protects.
    pub verity_of: Option<String>,
}

impl RegionInfo {
    /// A short name for progress and logs: "primary-gpt" or "partition-N".
    pub fn name(&self) -> String {
        match self.kind {
            RegionKind::PrimaryGpt => "primary-gpt".to_owned(),
            RegionKind::Partition { number } => format!("partition-{number}"),
        }
    }
}

/// Verification state of the region being read. Lives in the
/// [`crate::CosiSource`] so an abandoned region is still hash-checked.
pub(crate) struct State {
    info: RegionInfo,
    hasher: HashPipeline,
    compressed_read: u64,
    produced: u64,
    decoder: Decoder<'static>,
    /// Current compressed chunk (shared with the hasher thread).
    input: Arc<Vec<u8>>,
    in_pos: usize,
    in_len: usize,
    /// zstd's hint from the last call; 0 means the frame ended cleanly.
    last_hint: usize,
    finished: bool,
}

type Tar = TarReader<Box<dyn Read + Send>>;

impl State {
    pub(crate) fn new(info: RegionInfo, max_window_log: u32) -> Result<Self, CosiError> {
        let decompress_err = |e: io::Error| CosiError::Decompress {
            path: info.image.path.clone(),
            reason: e.to_string(),
        };
        let mut decoder = Decoder::new().map_err(decompress_err)?;
        decoder
            .set_parameter(DParameter::WindowLogMax(max_window_log))
            .map_err(decompress_err)?;
        let hasher = HashPipeline::new(INPUT_CHUNK).map_err(decompress_err)?;
        Ok(State {
            info,
            hasher,
            compressed_read: 0,
            produced: 0,
            decoder,
            input: Arc::new(Vec::new()),
            in_pos: 0,
            in_len: 0,
            last_hint: 1,
            finished: false,
        })
    }

    fn path(&self) -> String {
        self.info.image.path.clone()
    }

    /// Reads the next piece of compressed data into `input` and hands it
    /// to the hasher.
    fn fill(&mut self, url: &str, tar: &mut Tar) -> Result<(), CosiError> {
        // Release our clone of the previous chunk so its buffer can return.
        self.input = Arc::new(Vec::new());
        let mut buf = self.hasher.buffer();
        loop {
            match tar.read_data(&mut buf) {
                Ok(n) => {
                    self.compressed_read += n as u64;
                    self.in_pos = 0;
                    self.in_len = n;
                    self.input = Arc::new(buf);
                    self.hasher.submit(Arc::clone(&self.input), n);
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.finished = true;
                    return Err(CosiError::Truncated {
                        path: self.path(),
                        expected: self.info.image.compressed_size,
                        actual: self.compressed_read,
                    });
                }
                Err(source) => {
                    self.finished = true;
                    return Err(CosiError::from_io(url, source));
                }
            }
        }
    }

    /// Hashes the rest of the compressed data and compares it. Used at the
    /// end of a region and after decode errors, where a hash mismatch is the
    /// more useful explanation.
    fn drain_and_check_hash(&mut self, url: &str, tar: &mut Tar) -> Result<(), CosiError> {
        while tar.remaining() > 0 {
            self.fill(url, tar)?;
        }
        self.in_pos = self.in_len;
        self.finished = true;
        if self.compressed_read != self.info.image.compressed_size {
            return Err(CosiError::Truncated {
                path: self.path(),
                expected: self.info.image.compressed_size,
                actual: self.compressed_read,
            });
        }
        let actual = self.hasher.finish().unwrap_or_default();
        if actual != self.info.image.sha384 {
            return Err(CosiError::HashMismatch {
                path: self.path(),
                expected: self.info.image.sha384.clone(),
                actual,
            });
        }
        Ok(())
    }

    /// Fails with the hash mismatch if there is one, else with `err`.
    fn fail(&mut self, url: &str, tar: &mut Tar, err: CosiError) -> CosiError {
        match self.drain_and_check_hash(url, tar) {
            Err(hash_err) => hash_err,
            Ok(()) => err,
        }
    }

    fn read_chunk(&mut self, url: &str, tar: &mut Tar, out: &mut [u8]) -> Result<usize, CosiError> {
        if self.finished || out.is_empty() {
            return Ok(0);
        }
        let mut written = 0;
        loop {
            if self.in_pos == self.in_len && tar.remaining() > 0 {
                self.fill(url, tar)?;
            }
            let input_exhausted = self.in_pos == self.in_len && tar.remaining() == 0;
            let mut inb = InBuffer::around(&self.input[self.in_pos..self.in_len]);
            let mut outb = OutBuffer::around(&mut out[written..]);
            let result = self.decoder.run(&mut inb, &mut outb);
            self.in_pos += inb.pos();
            let n = outb.pos();
            match result {
                // A call that neither consumed nor produced anything (input
                // exhausted after a complete frame) reports the next frame's
                // header size; only calls that made progress tell whether
                // the data ends on a frame boundary.
                Ok(hint) if inb.pos() > 0 || n > 0 => self.last_hint = hint,
                Ok(_) => {}
                Err(e) => {
                    let err = CosiError::Decompress {
                        path: self.path(),
                        reason: e.to_string(),
                    };
                    return Err(self.fail(url, tar, err));
                }
            }
            written += n;
            if self.produced + written as u64 > self.info.image.uncompressed_size {
                let err = CosiError::SizeMismatch {
                    path: self.path(),
                    kind: SizeKind::Uncompressed,
                    expected: self.info.image.uncompressed_size,
                    actual: self.produced + written as u64,
                };
                return Err(self.fail(url, tar, err));
            }
            if written == out.len() {
                break;
            }
            if input_exhausted && n == 0 {
                if written > 0 {
                    break;
                }
                self.finish(url, tar)?;
                return Ok(0);
            }
        }
        self.produced += written as u64;
        Ok(written)
    }

    fn finish(&mut self, url: &str, tar: &mut Tar) -> Result<(), CosiError> {
        self.drain_and_check_hash(url, tar)?;
        if self.last_hint != 0 {
            return Err(CosiError::Decompress {
                path: self.path(),
                reason: "compressed data ends inside a ZSTD frame".to_owned(),
            });
        }
        if self.produced != self.info.image.uncompressed_size {
            return Err(CosiError::SizeMismatch {
                path: self.path(),
                kind: SizeKind::Uncompressed,
                expected: self.info.image.uncompressed_size,
                actual: self.produced,
            });
        }
        Ok(())
    }

    /// Verifies the compressed hash of a region the caller stopped reading.
    pub(crate) fn skip_rest(&mut self, url: &str, tar: &mut Tar) -> Result<(), CosiError> {
        if self.finished {
            return Ok(());
        }
        self.drain_and_check_hash(url, tar)
    }
}

/// Reader of one region's uncompressed bytes.
///
/// Reading to the end (until 0 is returned) verifies the SHA-384 of the
/// compressed bytes and both sizes; any mismatch is an error at that point,
/// so data already returned must be treated as untrusted until then. Never
/// returns more bytes than `uncompressedSize`.
pub struct RegionReader<'a> {
    url: &'a str,
    tar: &'a mut Tar,
    state: &'a mut State,
}

impl std::fmt::Debug for RegionReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionReader")
            .field("info", &self.state.info)
            .field("produced", &self.state.produced)
            .finish_non_exhaustive()
    }
}

impl<'a> RegionReader<'a> {
    pub(crate) fn new(url: &'a str, tar: &'a mut Tar, state: &'a mut State) -> Self {
        RegionReader { url, tar, state }
    }

    pub fn info(&self) -> &RegionInfo {
        &self.state.info
    }

    /// Uncompressed bytes returned so far.
    pub fn produced(&self) -> u64 {
        self.state.produced
    }

    /// Fills as much of `out` as possible; 0 means the region ended and was
    /// verified.
    pub fn read_chunk(&mut self, out: &mut [u8]) -> Result<usize, CosiError> {
        self.state.read_chunk(self.url, self.tar, out)
    }

    /// Skips the rest of the region, still checking its compressed hash.
    pub fn skip(self) -> Result<(), CosiError> {
        self.state.skip_rest(self.url, self.tar)
    }
}

/// `Read` adapter; errors carry the [`CosiError`] (recover it with
/// [`CosiError::from_io`]).
impl Read for RegionReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_chunk(buf).map_err(io::Error::other)
    }
}
