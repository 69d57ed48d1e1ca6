//! Adopted partitions (`storage.disks[].adoptedPartitions`): which
//! partitions of a disk's existing GPT an install keeps, as upstream
//! matches them (`partitioning/adoption.rs`): by `matchLabel` (the GPT
//! partition name; exactly one unadopted partition may carry it) or by
//! `matchUuid` (the unique partition GUID; the first unadopted partition
//! with it), each partition adopted at most once. The partitions left
//! unmatched are dropped from the new table (upstream deletes them).

use trident_cosi::gpt::GptEntry;
use trident_host::config::AdoptedPartition;
use trident_host::{Subkind, TridentError};
use uuid::Uuid;

/// An adopted partition and the existing GPT entry it matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adopted {
    /// The `id` the Host Configuration gives it.
    pub id: String,
    pub entry: GptEntry,
}

/// Matches every adopted partition of disk `disk_id` (its key path
/// `key`) against the `existing` entries of its GPT, in entry order.
pub fn match_partitions(
    disk_id: &str,
    key: &str,
    adopted: &[AdoptedPartition],
    existing: &[GptEntry],
) -> Result<Vec<Adopted>, TridentError> {
    if existing.is_empty() {
        return Err(TridentError::new(
            Subkind::AdoptPartition,
            format!("{key}: disk '{disk_id}' has adopted partitions but no partitions"),
        ));
    }
    let mut candidates: Vec<&GptEntry> = existing.iter().collect();
    candidates.sort_by_key(|e| e.number);
    let mut matched: Vec<Adopted> = Vec::with_capacity(adopted.len());
    for (i, wanted) in adopted.iter().enumerate() {
        let at = format!("{key}.adoptedPartitions[{i}]");
        let available = candidates
            .iter()
            .copied()
            .filter(|c| matched.iter().all(|m| m.entry.number != c.number));
        let entry = match (&wanted.match_label, &wanted.match_uuid) {
            (Some(label), None) => {
                let with_label: Vec<&GptEntry> = available.filter(|c| &c.name == label).collect();
                match with_label.as_slice() {
                    [one] => *one,
                    other => {
                        return Err(TridentError::new(
                            Subkind::AdoptPartition,
                            format!(
                                "{at}: expected exactly one partition labelled '{label}' on disk '{disk_id}', found {}",
                                other.len()
                            ),
                        ));
                    }
                }
            }
            (None, Some(text)) => {
                let uuid = Uuid::parse_str(text).map_err(|_| {
                    TridentError::new(
                        Subkind::InvalidHostConfiguration,
                        format!("Host Configuration key '{at}.matchUuid': '{text}' is not a GUID"),
                    )
                })?;
                let mut available = available;
                available.find(|c| c.unique_guid == uuid).ok_or_else(|| {
                    TridentError::new(
                        Subkind::AdoptPartition,
                        format!("{at}: no partition of disk '{disk_id}' has the GUID '{uuid}'"),
                    )
                })?
            }
            // The storage graph refuses both or neither before this runs.
            _ => {
                return Err(TridentError::new(
                    Subkind::InvalidHostConfiguration,
                    format!(
                        "Host Configuration key '{at}': give exactly one of matchLabel or matchUuid"
                    ),
                ));
            }
        };
        tracing::info!(disk = %disk_id, id = %wanted.id, number = entry.number,
            name = %entry.name, "existing partition adopted");
        matched.push(Adopted {
            id: wanted.id.clone(),
            entry: entry.clone(),
        });
    }
    for dropped in candidates
        .iter()
        .filter(|c| matched.iter().all(|m| m.entry.number != c.number))
    {
        tracing::info!(disk = %disk_id, number = dropped.number, name = %dropped.name,
            "existing partition not adopted: removed from the partition table");
    }
    Ok(matched)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn entry(number: u32, name: &str, guid: u128) -> GptEntry {
        GptEntry {
            number,
            type_guid: Uuid::from_u128(1),
            unique_guid: Uuid::from_u128(guid),
            first_lba: 2048 * u64::from(number),
            last_lba: 2048 * u64::from(number) + 2047,
            attributes: 0,
            name: name.into(),
        }
    }

    fn by_label(id: &str, label: &str) -> AdoptedPartition {
        AdoptedPartition {
            id: id.into(),
            match_label: Some(label.into()),
            match_uuid: None,
        }
    }

    fn by_uuid(id: &str, guid: u128) -> AdoptedPartition {
        AdoptedPartition {
            id: id.into(),
            match_label: None,
            match_uuid: Some(Uuid::from_u128(guid).to_string().to_uppercase()),
        }
    }

    #[test]
    fn partitions_match_by_label_or_by_guid_once_each() {
        let existing = [
            entry(3, "rootfs", 30),
            entry(1, "esp", 10),
            entry(2, "data", 20),
        ];
        let got = match_partitions(
            "disk",
            "storage.disks[0]",
            &[by_label("keep-esp", "esp"), by_uuid("keep-root", 30)],
            &existing,
        )
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].id.as_str(), got[0].entry.number), ("keep-esp", 1));
        assert_eq!((got[1].id.as_str(), got[1].entry.number), ("keep-root", 3));
        // The same partition is not adopted twice.
        let twice = match_partitions(
            "disk",
            "storage.disks[0]",
            &[by_uuid("a", 20), by_uuid("b", 20)],
            &existing,
        )
        .unwrap_err();
        assert_eq!(twice.subkind(), Subkind::AdoptPartition);
        assert!(
            twice.message().contains("adoptedPartitions[1]"),
            "{}",
            twice.message()
        );
    }

    #[test]
    fn a_label_must_name_exactly_one_partition() {
        let existing = [entry(1, "data", 1), entry(2, "data", 2)];
        for (partitions, found) in [(&existing[..], "found 2"), (&existing[..1], "found 1")] {
            let result = match_partitions(
                "disk",
                "storage.disks[0]",
                &[by_label("d", "data")],
                partitions,
            );
            if found == "found 1" {
                assert_eq!(result.unwrap()[0].entry.number, 1);
            } else {
                let e = result.unwrap_err();
                assert!(e.message().contains(found), "{}", e.message());
            }
        }
        let none = match_partitions(
            "disk",
            "storage.disks[0]",
            &[by_label("d", "gone")],
            &existing,
        )
        .unwrap_err();
        assert!(none.message().contains("found 0"), "{}", none.message());
    }

    #[test]
    fn a_disk_without_partitions_or_a_bad_guid_is_an_error() {
        let empty =
            match_partitions("disk", "storage.disks[0]", &[by_label("d", "x")], &[]).unwrap_err();
        assert_eq!(empty.subkind(), Subkind::AdoptPartition);
        let bad = AdoptedPartition {
            id: "d".into(),
            match_label: None,
            match_uuid: Some("not-a-guid".into()),
        };
        let e =
            match_partitions("disk", "storage.disks[0]", &[bad], &[entry(1, "x", 1)]).unwrap_err();
        assert_eq!(e.subkind(), Subkind::InvalidHostConfiguration);
    }
}
