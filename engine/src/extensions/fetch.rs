//! Downloading one extension image: streamed from its URL (`file://`,
//! `http(s)://` within the engine's timeouts, `oci://` with its registry
//! credentials) into a file of the
//! staging directory while its SHA-384 is computed; a file whose hash is
//! not the configured one is deleted, so nothing unchecked is ever placed.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha384};
use trident_cosi::SourceOptions;
use trident_host::{ResultExt, Subkind, TridentError};
use trident_telemetry::progress::Phase;

/// Downloads `url` (the image of Host Configuration key `key`) into
/// `dest`, checking that its SHA-384 is `sha384` (lowercase hex). Counts
/// the bytes on `phase`. Blocking.
pub fn download(
    key: &str,
    url: &str,
    sha384: &str,
    dest: &Path,
    phase: &Phase,
    sources: &SourceOptions,
) -> Result<(), TridentError> {
    let result = copy_hashed(key, url, dest, phase, sources).and_then(|actual| {
        if actual == sha384 {
            Ok(())
        } else {
            Err(TridentError::new(
                Subkind::ExtensionHashMismatch,
                format!(
                    "Host Configuration key '{key}.sha384': the image's SHA-384 is {actual}, \
                     the configuration says {sha384}"
                ),
            ))
        }
    });
    if result.is_err() {
        let _ = std::fs::remove_file(dest);
    }
    result
}

/// Streams `url` into `dest`; returns the SHA-384 of what was read.
fn copy_hashed(
    key: &str,
    url: &str,
    dest: &Path,
    phase: &Phase,
    sources: &SourceOptions,
) -> Result<String, TridentError> {
    let mut source = trident_cosi::open_url(url, sources).map_err(|e| {
        TridentError::with_source(
            Subkind::DownloadExtension,
            format!(
                "Host Configuration key '{key}.url': cannot open the image ({})",
                e.subkind()
            ),
            e,
        )
    })?;
    let mut out = File::create(dest)
        .structured_msg(Subkind::Io, format!("Cannot create {}", dest.display()))?;
    let mut hasher = Sha384::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = source.read(&mut buf).structured_msg(
            Subkind::DownloadExtension,
            format!("Host Configuration key '{key}.url': the download failed"),
        )?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n])
            .structured_msg(Subkind::Io, format!("Cannot write {}", dest.display()))?;
        phase.add(n as u64);
    }
    out.sync_all()
        .structured_msg(Subkind::Io, format!("Cannot write {}", dest.display()))?;
    Ok(hex::encode(hasher.finalize()))
}
