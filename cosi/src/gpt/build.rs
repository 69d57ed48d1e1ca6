//! Building a GPT from a partition list (install, test fixtures), on an
//! empty disk or around partitions that are kept (adopted partitions).

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

/// A free run of LBAs (inclusive) in the usable area.
#[derive(Debug, Clone, Copy)]
struct Gap {
    first: u64,
    last: u64,
}

impl Gap {
    /// LBAs from the first aligned LBA of the gap to its end.
    fn aligned_capacity(self, align: u64) -> (u64, u64) {
        let start = self.first.div_ceil(align) * align;
        (start, (self.last + 1).saturating_sub(start))
    }
}

/// The free runs of `first..=last` around `kept` (which lie inside it).
fn gaps_around(first: u64, last: u64, kept: &[GptEntry]) -> Vec<Gap> {
    let mut sorted: Vec<&GptEntry> = kept.iter().collect();
    sorted.sort_by_key(|e| e.first_lba);
    let mut gaps = Vec::new();
    let mut next = first;
    for e in sorted {
        if e.first_lba > next {
            gaps.push(Gap {
                first: next,
                last: e.first_lba - 1,
            });
        }
        next = next.max(e.last_lba.saturating_add(1));
    }
    if next <= last {
        gaps.push(Gap { first: next, last });
    }
    gaps
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
        Self::build_around(disk_size, lba_size, disk_guid, &[], parts).map(|(gpt, _)| gpt)
    }

    /// Lays out `parts` around existing partitions that are `kept` exactly
    /// (entry number, LBAs, GUIDs, name, attributes: adopted partitions).
    /// Each new partition takes the lowest free entry number and the first
    /// free run of the disk, 1 MiB aligned, that holds it; a last partition
    /// without a size takes the largest free run left. Returns the table
    /// and the entry number of each of `parts`, in order. With nothing
    /// kept, the partitions follow each other from the start of the disk.
    pub fn build_around(
        disk_size: u64,
        lba_size: u64,
        disk_guid: Uuid,
        kept: &[GptEntry],
        parts: &[PartitionSpec],
    ) -> Result<(Gpt, Vec<u32>), GptError> {
        check_lba_size(lba_size)?;
        if parts.len() + kept.len() > DEFAULT_ENTRIES as usize {
            return Err(GptError::Header(format!(
                "{} partitions do not fit in {DEFAULT_ENTRIES} entries",
                parts.len() + kept.len()
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
        if let Some(e) = kept
            .iter()
            .find(|e| e.number == 0 || e.number > DEFAULT_ENTRIES)
        {
            return Err(GptError::Partition {
                number: e.number,
                reason: format!("entry number is outside 1..={DEFAULT_ENTRIES}"),
            });
        }
        let align = ALIGNMENT_BYTES / lba_size;
        let mut gaps = gaps_around(first_usable, last_usable, kept);
        let mut free_numbers =
            (1..=DEFAULT_ENTRIES).filter(|n| kept.iter().all(|e| e.number != *n));
        let mut entries: Vec<GptEntry> = kept.to_vec();
        let mut numbers = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let number = free_numbers.next().ok_or_else(|| {
                GptError::Header(format!("no free entry for partition {:?}", p.name))
            })?;
            let does_not_fit =
                || too_small(format!("partition {number} ({:?}) does not fit", p.name));
            let (gap, first, lbas) = match p.size {
                Some(bytes) if bytes > 0 => {
                    let lbas = bytes.div_ceil(lba_size);
                    gaps.iter()
                        .enumerate()
                        .find_map(|(g, gap)| {
                            let (start, capacity) = gap.aligned_capacity(align);
                            (capacity >= lbas).then_some((g, start, lbas))
                        })
                        .ok_or_else(does_not_fit)?
                }
                Some(_) => {
                    return Err(GptError::Partition {
                        number,
                        reason: "size must be greater than 0".to_owned(),
                    });
                }
                None if i + 1 == parts.len() => gaps
                    .iter()
                    .enumerate()
                    .map(|(g, gap)| {
                        let (start, capacity) = gap.aligned_capacity(align);
                        (g, start, capacity)
                    })
                    .max_by_key(|(_, _, capacity)| *capacity)
                    .filter(|(_, _, capacity)| *capacity > 0)
                    .ok_or_else(does_not_fit)?,
                None => {
                    return Err(GptError::Partition {
                        number,
                        reason: "only the last partition may take the rest of the disk".to_owned(),
                    });
                }
            };
            let last = first + lbas - 1;
            // What is left of the run after the partition (the unaligned
            // head before it holds no aligned partition).
            if last < gaps[gap].last {
                gaps[gap].first = last + 1;
            } else {
                gaps.remove(gap);
            }
            entries.push(GptEntry {
                number,
                type_guid: p.type_guid,
                unique_guid: p.unique_guid,
                first_lba: first,
                last_lba: last,
                attributes: p.attributes,
                name: p.name.clone(),
            });
            numbers.push(number);
        }
        entries.sort_by_key(|e| e.number);
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
        Ok((gpt, numbers))
    }
}
