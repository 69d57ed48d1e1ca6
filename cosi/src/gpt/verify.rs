//! Reading back the GPT of a written disk and checking both copies.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use super::{Gpt, GptError, u32_at, u64_at};

/// Why a written disk's GPT could not be confirmed.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("reading the disk: {0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Gpt(#[from] GptError),
}

/// Upper bound on the primary GPT we read back (header + entry array).
const MAX_PRIMARY_BYTES: u64 = 16 << 20;

impl Gpt {
    /// Reads the primary GPT of `file` (a disk of `disk_size` bytes),
    /// validates it, and checks that the backup GPT at the end of the disk
    /// is exactly the one this table implies (header CRCs included).
    pub fn read_and_verify(file: &File, lba_size: u64, disk_size: u64) -> Result<Gpt, VerifyError> {
        super::check_lba_size(lba_size)?;
        let mut head = vec![0u8; 2 * lba_size as usize];
        file.read_exact_at(&mut head, 0)?;
        let h = &head[lba_size as usize..];
        let entries_end = u64_at(h, 72)
            .saturating_mul(lba_size)
            .saturating_add(u64::from(u32_at(h, 80)).saturating_mul(u64::from(u32_at(h, 84))));
        let len = entries_end.clamp(2 * lba_size, MAX_PRIMARY_BYTES.min(disk_size));
        let mut primary = vec![0u8; len as usize];
        file.read_exact_at(&mut primary, 0)?;
        let gpt = Gpt::parse_primary(&primary, lba_size)?;
        if gpt.alternate_lba != disk_size / lba_size - 1 {
            return Err(GptError::Header(format!(
                "primary header points at backup LBA {}, the disk's last LBA is {}",
                gpt.alternate_lba,
                disk_size / lba_size - 1
            ))
            .into());
        }
        let (offset, expected) = gpt.backup_bytes();
        let mut actual = vec![0u8; expected.len()];
        file.read_exact_at(&mut actual, offset)?;
        if actual != expected {
            return Err(GptError::Header(format!(
                "backup GPT at byte {offset} does not match the primary GPT"
            ))
            .into());
        }
        Ok(gpt)
    }
}
