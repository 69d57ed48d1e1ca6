//! SHA-384 of a region's compressed bytes on a helper thread, so hashing
//! overlaps with decompression and writing instead of adding to them.
//!
//! Buffers travel as `Arc<Vec<u8>>`: the reader thread decompresses from
//! its clone while the hasher hashes the other, then the hasher hands the
//! buffer back for reuse (a small fixed pool, so memory stays bounded).

use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

use sha2::{Digest, Sha384};

/// Buffers in circulation between reader and hasher.
const POOL: usize = 4;

pub(crate) struct HashPipeline {
    tx: Option<SyncSender<(Arc<Vec<u8>>, usize)>>,
    back: Receiver<Arc<Vec<u8>>>,
    handle: Option<JoinHandle<String>>,
    allocated: usize,
    chunk: usize,
}

impl HashPipeline {
    pub(crate) fn new(chunk: usize) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel::<(Arc<Vec<u8>>, usize)>(POOL);
        let (back_tx, back) = sync_channel(POOL);
        let handle = std::thread::Builder::new()
            .name("cosi-sha384".to_owned())
            .spawn(move || {
                let mut hasher = Sha384::new();
                for (buf, len) in rx {
                    hasher.update(&buf[..len]);
                    // The reader may have stopped taking buffers back.
                    let _ = back_tx.try_send(buf);
                }
                hex::encode(hasher.finalize())
            })?;
        Ok(HashPipeline {
            tx: Some(tx),
            back,
            handle: Some(handle),
            allocated: 0,
            chunk,
        })
    }

    /// A buffer to read the next compressed chunk into. The caller must
    /// have dropped its clone of every buffer it submitted earlier.
    pub(crate) fn buffer(&mut self) -> Vec<u8> {
        if self.allocated < POOL {
            self.allocated += 1;
            return vec![0u8; self.chunk];
        }
        match self.back.recv().map(Arc::try_unwrap) {
            Ok(Ok(v)) => v,
            // Still shared, or the hasher is gone: use a fresh buffer.
            Ok(Err(_)) | Err(_) => vec![0u8; self.chunk],
        }
    }

    /// Hands `buf[..len]` to the hasher.
    pub(crate) fn submit(&mut self, buf: Arc<Vec<u8>>, len: usize) {
        if let Some(tx) = &self.tx
            && tx.send((buf, len)).is_err()
        {
            // The hasher thread is gone (it cannot panic on this input);
            // `finish` then reports no digest, which fails verification.
            self.tx = None;
        }
    }

    /// Waits for the digest of everything submitted (lowercase hex).
    pub(crate) fn finish(&mut self) -> Option<String> {
        self.tx = None;
        self.handle.take()?.join().ok()
    }
}
