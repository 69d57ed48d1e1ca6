//! GUID Partition Table: parsing the primary GPT region of a COSI file,
//! re-targeting it to a disk of another size, and writing the backup GPT.
//!
//! Small purpose-built code instead of the `gpt` crate: that crate wants to
//! own a device handle and rewrite whole tables, while we need to validate a
//! table given as bytes (the `primary-gpt` region) and emit byte-exact
//! primary/backup structures at positioned offsets.

mod build;
mod encode;
mod verify;

use uuid::Uuid;

pub use build::PartitionSpec;
pub use verify::VerifyError;

const SIGNATURE: &[u8; 8] = b"EFI PART";
const REVISION_1_0: u32 = 0x0001_0000;
const HEADER_SIZE: u32 = 92;
/// The GPT type of an unused entry.
const UNUSED: Uuid = Uuid::nil();
const MBR_PROTECTIVE_TYPE: u8 = 0xEE;
/// Standard entry array: 128 entries of 128 bytes.
pub const DEFAULT_ENTRIES: u32 = 128;
pub const DEFAULT_ENTRY_SIZE: u32 = 128;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GptError {
    #[error("logical block size {0} is not 512 or 4096")]
    LbaSize(u64),
    #[error("GPT data is {got} bytes, need at least {needed}")]
    TooShort { needed: u64, got: u64 },
    #[error("protective MBR: {0}")]
    Mbr(String),
    #[error("GPT header: {0}")]
    Header(String),
    #[error("GPT header CRC32 is {actual:#010x}, header says {expected:#010x}")]
    HeaderCrc { expected: u32, actual: u32 },
    #[error("GPT partition entries CRC32 is {actual:#010x}, header says {expected:#010x}")]
    EntriesCrc { expected: u32, actual: u32 },
    #[error("partition {number}: {reason}")]
    Partition { number: u32, reason: String },
    #[error("disk of {disk_size} bytes is too small: {reason}")]
    DiskTooSmall { disk_size: u64, reason: String },
}

/// One used partition entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GptEntry {
    /// 1-based entry index.
    pub number: u32,
    pub type_guid: Uuid,
    pub unique_guid: Uuid,
    pub first_lba: u64,
    /// Inclusive.
    pub last_lba: u64,
    pub attributes: u64,
    pub name: String,
}

impl GptEntry {
    pub fn start_offset(&self, lba_size: u64) -> u64 {
        self.first_lba * lba_size
    }

    pub fn size_bytes(&self, lba_size: u64) -> u64 {
        (self.last_lba + 1 - self.first_lba) * lba_size
    }
}

/// A validated GPT (header fields and the raw entry array).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpt {
    pub lba_size: u64,
    pub disk_guid: Uuid,
    pub first_usable_lba: u64,
    pub last_usable_lba: u64,
    /// LBA of the primary entry array.
    pub entries_lba: u64,
    /// LBA of the backup header (the disk's last LBA).
    pub alternate_lba: u64,
    pub num_entries: u32,
    pub entry_size: u32,
    /// The entry array verbatim (unknown bytes preserved).
    entries_raw: Vec<u8>,
    entries: Vec<GptEntry>,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

fn guid_at(b: &[u8], off: usize) -> Uuid {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[off..off + 16]);
    Uuid::from_bytes_le(a)
}

pub(crate) fn check_lba_size(lba_size: u64) -> Result<(), GptError> {
    if lba_size == 512 || lba_size == 4096 {
        Ok(())
    } else {
        Err(GptError::LbaSize(lba_size))
    }
}

fn parse_entry(number: u32, raw: &[u8]) -> Option<GptEntry> {
    let type_guid = guid_at(raw, 0);
    if type_guid == UNUSED {
        return None;
    }
    let units: Vec<u16> = raw[56..128]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    Some(GptEntry {
        number,
        type_guid,
        unique_guid: guid_at(raw, 16),
        first_lba: u64_at(raw, 32),
        last_lba: u64_at(raw, 40),
        attributes: u64_at(raw, 48),
        name: String::from_utf16_lossy(&units),
    })
}

impl Gpt {
    /// Parses and validates a primary GPT region (protective MBR at LBA 0,
    /// header at LBA 1, entries where the header says).
    pub fn parse_primary(bytes: &[u8], lba_size: u64) -> Result<Gpt, GptError> {
        check_lba_size(lba_size)?;
        let lba = lba_size as usize;
        if bytes.len() < 2 * lba {
            return Err(GptError::TooShort {
                needed: 2 * lba_size,
                got: bytes.len() as u64,
            });
        }
        if bytes[510..512] != [0x55, 0xAA] {
            return Err(GptError::Mbr("missing 0x55AA boot signature".to_owned()));
        }
        if !(0..4).any(|i| bytes[446 + 16 * i + 4] == MBR_PROTECTIVE_TYPE) {
            return Err(GptError::Mbr("no partition of type 0xEE".to_owned()));
        }
        let h = &bytes[lba..2 * lba];
        if &h[0..8] != SIGNATURE {
            return Err(GptError::Header(
                "missing \"EFI PART\" signature".to_owned(),
            ));
        }
        let header_size = u32_at(h, 12);
        if header_size < HEADER_SIZE || header_size as usize > lba {
            return Err(GptError::Header(format!(
                "header size {header_size} is invalid"
            )));
        }
        let expected = u32_at(h, 16);
        let mut copy = h[..header_size as usize].to_vec();
        copy[16..20].fill(0);
        let actual = crc32fast::hash(&copy);
        if actual != expected {
            return Err(GptError::HeaderCrc { expected, actual });
        }
        if u64_at(h, 24) != 1 {
            return Err(GptError::Header(format!(
                "primary header says it is at LBA {}, not 1",
                u64_at(h, 24)
            )));
        }
        let num_entries = u32_at(h, 80);
        let entry_size = u32_at(h, 84);
        if entry_size < 128 || !entry_size.is_power_of_two() || num_entries == 0 {
            return Err(GptError::Header(format!(
                "{num_entries} entries of {entry_size} bytes is not a valid entry array"
            )));
        }
        let entries_lba = u64_at(h, 72);
        let array_len = u64::from(num_entries) * u64::from(entry_size);
        let start = entries_lba.saturating_mul(lba_size);
        let end = start.saturating_add(array_len);
        if entries_lba < 2 || end > bytes.len() as u64 {
            return Err(GptError::TooShort {
                needed: end,
                got: bytes.len() as u64,
            });
        }
        let entries_raw = bytes[start as usize..end as usize].to_vec();
        let expected = u32_at(h, 88);
        let actual = crc32fast::hash(&entries_raw);
        if actual != expected {
            return Err(GptError::EntriesCrc { expected, actual });
        }
        let entries = entries_raw
            .chunks_exact(entry_size as usize)
            .enumerate()
            .filter_map(|(i, raw)| parse_entry(i as u32 + 1, raw))
            .collect();
        let gpt = Gpt {
            lba_size,
            disk_guid: guid_at(h, 56),
            first_usable_lba: u64_at(h, 40),
            last_usable_lba: u64_at(h, 48),
            entries_lba,
            alternate_lba: u64_at(h, 32),
            num_entries,
            entry_size,
            entries_raw,
            entries,
        };
        gpt.check_partitions()?;
        Ok(gpt)
    }

    /// Partitions must lie in the usable area and must not overlap.
    fn check_partitions(&self) -> Result<(), GptError> {
        if self.first_usable_lba > self.last_usable_lba
            || self.first_usable_lba < self.entries_lba + self.entry_array_lbas()
        {
            return Err(GptError::Header(format!(
                "usable area {}..={} overlaps the header or entries",
                self.first_usable_lba, self.last_usable_lba
            )));
        }
        let mut sorted: Vec<&GptEntry> = self.entries.iter().collect();
        sorted.sort_by_key(|e| e.first_lba);
        for (i, e) in sorted.iter().enumerate() {
            if e.first_lba > e.last_lba
                || e.first_lba < self.first_usable_lba
                || e.last_lba > self.last_usable_lba
            {
                return Err(GptError::Partition {
                    number: e.number,
                    reason: format!(
                        "LBAs {}..={} are outside the usable area {}..={}",
                        e.first_lba, e.last_lba, self.first_usable_lba, self.last_usable_lba
                    ),
                });
            }
            if let Some(next) = sorted.get(i + 1)
                && next.first_lba <= e.last_lba
            {
                return Err(GptError::Partition {
                    number: next.number,
                    reason: format!("overlaps partition {}", e.number),
                });
            }
        }
        Ok(())
    }

    /// Used entries, in entry-array order.
    pub fn partitions(&self) -> &[GptEntry] {
        &self.entries
    }

    /// The used entry with this 1-based number.
    pub fn partition(&self, number: u32) -> Option<&GptEntry> {
        self.entries.iter().find(|e| e.number == number)
    }

    /// LBAs the entry array occupies (rounded up).
    pub fn entry_array_lbas(&self) -> u64 {
        (u64::from(self.num_entries) * u64::from(self.entry_size)).div_ceil(self.lba_size)
    }

    /// Smallest disk (bytes) that holds every partition plus the backup GPT.
    pub fn min_disk_size(&self) -> u64 {
        let last_used = self
            .entries
            .iter()
            .map(|e| e.last_lba)
            .max()
            .unwrap_or(self.first_usable_lba);
        (last_used + 1 + self.entry_array_lbas() + 1) * self.lba_size
    }

    /// The same table laid out for a disk of `disk_size` bytes: the backup
    /// header moves to the last LBA and the usable area ends before the
    /// backup entries. Fails if a partition would not fit.
    pub fn for_disk_size(&self, disk_size: u64) -> Result<Gpt, GptError> {
        if !disk_size.is_multiple_of(self.lba_size) {
            return Err(GptError::DiskTooSmall {
                disk_size,
                reason: format!("size is not a multiple of the LBA size {}", self.lba_size),
            });
        }
        if disk_size < self.min_disk_size() {
            return Err(GptError::DiskTooSmall {
                disk_size,
                reason: format!("the partitions need {} bytes", self.min_disk_size()),
            });
        }
        let last_lba = disk_size / self.lba_size - 1;
        let mut gpt = self.clone();
        gpt.alternate_lba = last_lba;
        gpt.last_usable_lba = last_lba - self.entry_array_lbas() - 1;
        gpt.check_partitions()?;
        Ok(gpt)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
