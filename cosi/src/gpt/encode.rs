//! Serializing a [`Gpt`]: protective MBR, primary and backup headers and
//! entry arrays, with their CRC32s.

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::{
    Gpt, GptError, HEADER_SIZE, MBR_PROTECTIVE_TYPE, REVISION_1_0, SIGNATURE, u32_at, u64_at,
};

impl Gpt {
    fn disk_last_lba(&self) -> u64 {
        self.alternate_lba
    }

    fn entries_crc(&self) -> u32 {
        crc32fast::hash(&self.entries_raw)
    }

    /// A header block (one LBA) at `my_lba` pointing at entries at `entries_lba`.
    fn header_block(&self, my_lba: u64, other_lba: u64, entries_lba: u64) -> Vec<u8> {
        let mut b = vec![0u8; self.lba_size as usize];
        b[0..8].copy_from_slice(SIGNATURE);
        b[8..12].copy_from_slice(&REVISION_1_0.to_le_bytes());
        b[12..16].copy_from_slice(&HEADER_SIZE.to_le_bytes());
        b[24..32].copy_from_slice(&my_lba.to_le_bytes());
        b[32..40].copy_from_slice(&other_lba.to_le_bytes());
        b[40..48].copy_from_slice(&self.first_usable_lba.to_le_bytes());
        b[48..56].copy_from_slice(&self.last_usable_lba.to_le_bytes());
        b[56..72].copy_from_slice(&self.disk_guid.to_bytes_le());
        b[72..80].copy_from_slice(&entries_lba.to_le_bytes());
        b[80..84].copy_from_slice(&self.num_entries.to_le_bytes());
        b[84..88].copy_from_slice(&self.entry_size.to_le_bytes());
        b[88..92].copy_from_slice(&self.entries_crc().to_le_bytes());
        let crc = crc32fast::hash(&b[..HEADER_SIZE as usize]);
        b[16..20].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn protective_mbr(&self) -> Vec<u8> {
        let mut b = vec![0u8; self.lba_size as usize];
        let p = 446;
        b[p + 1..p + 4].copy_from_slice(&[0x00, 0x02, 0x00]); // CHS of LBA 1
        b[p + 4] = MBR_PROTECTIVE_TYPE;
        b[p + 5..p + 8].copy_from_slice(&[0xFF, 0xFF, 0xFF]);
        b[p + 8..p + 12].copy_from_slice(&1u32.to_le_bytes());
        let sectors = u32::try_from(self.disk_last_lba()).unwrap_or(u32::MAX);
        b[p + 12..p + 16].copy_from_slice(&sectors.to_le_bytes());
        b[510] = 0x55;
        b[511] = 0xAA;
        b
    }

    /// Protective MBR + primary header + entries, from offset 0 to the end of
    /// the entry array.
    pub fn primary_bytes(&self) -> Vec<u8> {
        let lba = self.lba_size as usize;
        let start = self.entries_lba as usize * lba;
        let mut out = vec![0u8; start + self.entries_raw.len()];
        out[..lba].copy_from_slice(&self.protective_mbr());
        out[lba..2 * lba].copy_from_slice(&self.header_block(
            1,
            self.disk_last_lba(),
            self.entries_lba,
        ));
        out[start..].copy_from_slice(&self.entries_raw);
        out
    }

    /// Backup entries followed by the backup header, and the byte offset
    /// where they go (they end at the end of the disk).
    pub fn backup_bytes(&self) -> (u64, Vec<u8>) {
        let last = self.disk_last_lba();
        let entries_lba = last - self.entry_array_lbas();
        let lba = self.lba_size as usize;
        let mut out = vec![0u8; (self.entry_array_lbas() as usize + 1) * lba];
        out[..self.entries_raw.len()].copy_from_slice(&self.entries_raw);
        let h = self.header_block(last, 1, entries_lba);
        let len = out.len();
        out[len - lba..].copy_from_slice(&h);
        (entries_lba * self.lba_size, out)
    }

    /// Writes the backup GPT at the end of the disk this table was laid out
    /// for.
    pub fn write_backup(&self, file: &File) -> std::io::Result<()> {
        let (offset, bytes) = self.backup_bytes();
        file.write_all_at(&bytes, offset)
    }

    /// Writes the protective MBR, primary header and entries at offset 0.
    pub fn write_primary(&self, file: &File) -> std::io::Result<()> {
        file.write_all_at(&self.primary_bytes(), 0)
    }

    /// Rewrites the header (LBA 1) and the protective MBR's size in a
    /// primary GPT region so they describe this table's disk size; the
    /// entry array is unchanged.
    pub fn patch_primary(&self, region: &mut [u8]) {
        let lba = self.lba_size as usize;
        if region.len() < 2 * lba {
            return;
        }
        let header = self.header_block(1, self.disk_last_lba(), self.entries_lba);
        region[lba..2 * lba].copy_from_slice(&header);
        let sectors = u32::try_from(self.disk_last_lba()).unwrap_or(u32::MAX);
        for i in 0..4 {
            let p = 446 + 16 * i;
            if region[p + 4] == MBR_PROTECTIVE_TYPE {
                region[p + 12..p + 16].copy_from_slice(&sectors.to_le_bytes());
            }
        }
    }

    /// Reads and validates the backup header + entries of a disk laid out
    /// like this table (used by tests and `verify`).
    pub fn check_backup(&self, disk: &[u8]) -> Result<(), GptError> {
        let (offset, expected) = self.backup_bytes();
        let end = offset as usize + expected.len();
        if disk.len() < end {
            return Err(GptError::TooShort {
                needed: end as u64,
                got: disk.len() as u64,
            });
        }
        let lba = self.lba_size as usize;
        let h = &disk[end - lba..end];
        let stored = u32_at(h, 16);
        let mut copy = h[..HEADER_SIZE as usize].to_vec();
        copy[16..20].fill(0);
        let actual = crc32fast::hash(&copy);
        if stored != actual {
            return Err(GptError::HeaderCrc {
                expected: stored,
                actual,
            });
        }
        let entries = &disk[offset as usize..offset as usize + self.entries_raw.len()];
        let stored = u32_at(h, 88);
        let actual = crc32fast::hash(entries);
        if stored != actual {
            return Err(GptError::EntriesCrc {
                expected: stored,
                actual,
            });
        }
        if u64_at(h, 24) != self.disk_last_lba() || u64_at(h, 32) != 1 {
            return Err(GptError::Header("backup header LBAs are wrong".to_owned()));
        }
        if u64_at(h, 72) * self.lba_size != offset {
            return Err(GptError::Header("backup entries LBA is wrong".to_owned()));
        }
        Ok(())
    }
}
