//! The image's ESP copied out to a file next to the operation's new root,
//! for its boot files (an A/B update whose ESP is not written): sized to
//! the region and sparse, streamed here or written chunk by chunk by an
//! adaptive update.

use std::fs::{File, OpenOptions};
use std::path::Path;

use trident_cosi::{RegionInfo, RegionReader};
use trident_host::{ResultExt, Subkind, TridentError};

use super::cosi_error::CosiResultExt;

/// Creates (or empties) the file `path`, `size` bytes of holes.
pub fn create(path: &Path, size: u64) -> Result<File, TridentError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).structured_msg(
            Subkind::WriteImage,
            format!("Cannot create {}", parent.display()),
        )?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .structured_msg(
            Subkind::WriteImage,
            format!("Cannot create {}", path.display()),
        )?;
    file.set_len(size).structured_msg(
        Subkind::WriteImage,
        format!("Cannot size {}", path.display()),
    )?;
    Ok(file)
}

/// Streams one region into the file `path` (created, sized to the
/// region), hash-checked on the way. Sparse: all-zero chunks are left as
/// holes, so an ESP image that is mostly free space takes only its files'
/// room where the copy lands (the datastore's filesystem, which upstream's
/// samples make a 128 MiB volume of its own, no larger than the ESP).
pub fn copy_region(
    region: &mut RegionReader<'_>,
    info: &RegionInfo,
    path: &Path,
) -> Result<(), TridentError> {
    let size = info.image.uncompressed_size;
    let file = create(path, size)?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut offset, mut stored) = (0u64, 0u64);
    loop {
        let n = region.read_chunk(&mut buf).cosi()?;
        if n == 0 {
            break; // the end, verified
        }
        let chunk = &buf[..n];
        if offset + n as u64 > size {
            return Err(TridentError::new(
                Subkind::WriteImage,
                format!(
                    "{}: more bytes than its uncompressed size {size}",
                    info.name()
                ),
            ));
        }
        if chunk.iter().any(|b| *b != 0) {
            std::os::unix::fs::FileExt::write_all_at(&file, chunk, offset).structured_msg(
                Subkind::WriteImage,
                format!("{}: write at offset {offset}", path.display()),
            )?;
            stored += n as u64;
        }
        offset += n as u64;
    }
    tracing::info!(region = %info.name(), copy = %path.display(), bytes = offset, stored,
        "the image's ESP copied out for its boot files");
    Ok(())
}
