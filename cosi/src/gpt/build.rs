//! Building a fresh GPT from a partition list (install, test fixtures).

use uuid::Uuid;

use super::{DEFAULT_ENTRIES, DEFAULT_ENTRY_SIZE, Gpt, GptEntry, GptError, check_lba_size};

/// Partitions start on 1 MiB boundaries, as partitioning tools do.
const ALIGNMENT_BYTES: u64 = 1 << 20;
/// GPT names hold at most 36 UTF-16 code units.
const MAX_NAME_UNITS: usize = 36;

/// One partition to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSpec {
    pub type_guid: Uuid,
    pub unique_guid: Uuid,
    pub name: String,
    /// Size in bytes (rounded up to the LBA size); `None` takes the rest of
    /// the disk (only valid for the last partition).
    pub size: Option<u64>,
    pub attributes: u64,
}

fn encode_entry(e: &GptEntry, entry_size: usize) -> Result<Vec<u8>, GptError> {
    let mut raw = vec![0u8; entry_size];
    raw[0..16].copy_from_slice(&e.type_guid.to_bytes_le());
    raw[16..32].copy_from_slice(&e.unique_guid.to_bytes_le());
    raw[32..40].copy_from_slice(&e.first_lba.to_le_bytes());
    raw[40..48].copy_from_slice(&e.last_lba.to_le_bytes());
    raw[48..56].copy_from_slice(&e.attributes.to_le_bytes());
    let units: Vec<u16> = e.name.encode_utf16().collect();
    if units.len() > MAX_NAME_UNITS {
        return Err(GptError::Partition {
            number: e.number,
            reason: format!(
                "name {:?} is longer than {MAX_NAME_UNITS} UTF-16 units",
                e.name
            ),
        });
    }
    for (i, u) in units.iter().enumerate() {
        raw[56 + 2 * i..58 + 2 * i].copy_from_slice(&u.to_le_bytes());
    }
    Ok(raw)
}

impl Gpt {
    /// Lays out `parts` in order on a disk of `disk_size` bytes with 128
    /// entries, each partition 1 MiB aligned.
    pub fn build(
        disk_size: u64,
        lba_size: u64,
        disk_guid: Uuid,
        parts: &[PartitionSpec],
    ) -> Result<Gpt, GptError> {
        check_lba_size(lba_size)?;
        if parts.len() > DEFAULT_ENTRIES as usize {
            return Err(GptError::Header(format!(
                "{} partitions do not fit in {DEFAULT_ENTRIES} entries",
                parts.len()
            )));
        }
        let too_small = |reason: String| GptError::DiskTooSmall { disk_size, reason };
        if !disk_size.is_multiple_of(lba_size) {
            return Err(too_small(format!("size is not a multiple of {lba_size}")));
        }
        let array_lbas =
            (u64::from(DEFAULT_ENTRIES) * u64::from(DEFAULT_ENTRY_SIZE)).div_ceil(lba_size);
        let total_lbas = disk_size / lba_size;
        // MBR + header + entries at the front, entries + header at the back.
        let overhead = 2 + 2 * array_lbas + 1;
        if total_lbas <= overhead {
            return Err(too_small("no room for the GPT itself".to_owned()));
        }
        let last_lba = total_lbas - 1;
        let first_usable = 2 + array_lbas;
        let last_usable = last_lba - array_lbas - 1;
        let align = ALIGNMENT_BYTES / lba_size;
        let mut next = first_usable.div_ceil(align) * align;
        let mut entries = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let number = i as u32 + 1;
            let lbas = match p.size {
                Some(bytes) if bytes > 0 => bytes.div_ceil(lba_size),
                Some(_) => {
                    return Err(GptError::Partition {
                        number,
                        reason: "size must be greater than 0".to_owned(),
                    });
                }
                None if i + 1 == parts.len() => (last_usable + 1).saturating_sub(next),
                None => {
                    return Err(GptError::Partition {
                        number,
                        reason: "only the last partition may take the rest of the disk".to_owned(),
                    });
                }
            };
            let last = next.saturating_add(lbas).saturating_sub(1);
            if lbas == 0 || last > last_usable {
                return Err(too_small(format!(
                    "partition {number} ({:?}) does not fit",
                    p.name
                )));
            }
            entries.push(GptEntry {
                number,
                type_guid: p.type_guid,
                unique_guid: p.unique_guid,
                first_lba: next,
                last_lba: last,
                attributes: p.attributes,
                name: p.name.clone(),
            });
            next = (last + 1).div_ceil(align) * align;
        }
        let mut entries_raw = vec![0u8; (DEFAULT_ENTRIES * DEFAULT_ENTRY_SIZE) as usize];
        for e in &entries {
            let start = (e.number as usize - 1) * DEFAULT_ENTRY_SIZE as usize;
            entries_raw[start..start + DEFAULT_ENTRY_SIZE as usize]
                .copy_from_slice(&encode_entry(e, DEFAULT_ENTRY_SIZE as usize)?);
        }
        let gpt = Gpt {
            lba_size,
            disk_guid,
            first_usable_lba: first_usable,
            last_usable_lba: last_usable,
            entries_lba: 2,
            alternate_lba: last_lba,
            num_entries: DEFAULT_ENTRIES,
            entry_size: DEFAULT_ENTRY_SIZE,
            entries_raw,
            entries,
        };
        gpt.check_partitions()?;
        Ok(gpt)
    }
}
