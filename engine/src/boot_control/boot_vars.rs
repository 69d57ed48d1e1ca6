//! The firmware's boot variables, as upstream Trident manages them with
//! `efibootmgr` (`engine/bootentries.rs`), written here through efivarfs
//! directly: one `Boot####` load option per volume (per volume and ESP
//! mirror member where the ESP is a RAID1 array), labelled with the
//! volume's ESP directory (`AZLA`, `AZLB`); `BootNext` for the trial boot
//! of an A/B update (the firmware boots it once, then deletes it);
//! `BootOrder` with the committed volume first. `BootCurrent` (set by the
//! firmware) says which option booted.

use std::path::Path;

use trident_host::TridentError;

use super::efivars::{GLOBAL_GUID, read_var, remove_var, write_var};
use super::load_option::LoadOption;

const BOOT_ORDER: &str = "BootOrder";
const BOOT_NEXT: &str = "BootNext";
const BOOT_CURRENT: &str = "BootCurrent";

/// Where a new option goes in `BootOrder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    First,
    /// Appended if absent; an option already listed stays where it is.
    Last,
}

fn option_name(number: u16) -> String {
    format!("Boot{number:04X}")
}

fn u16_list(data: &[u8]) -> Vec<u16> {
    data.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

/// Every `Boot####` option in `efivars`, by number.
pub fn options(efivars: &Path) -> Vec<(u16, LoadOption)> {
    let suffix = format!("-{GLOBAL_GUID}");
    let mut found: Vec<(u16, LoadOption)> = std::fs::read_dir(efivars)
        .map(|dir| {
            dir.flatten()
                .filter_map(|entry| {
                    let name = entry
                        .file_name()
                        .to_str()?
                        .strip_suffix(&suffix)?
                        .to_owned();
                    let hex = name.strip_prefix("Boot")?;
                    if hex.len() != 4 {
                        return None; // BootOrder, BootNext, BootCurrent
                    }
                    let number = u16::from_str_radix(hex, 16).ok()?;
                    let option = LoadOption::decode(&read_var(efivars, &name, GLOBAL_GUID)?)?;
                    Some((number, option))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort_by_key(|(number, _)| *number);
    found
}

/// `BootOrder` (empty when absent).
pub fn boot_order(efivars: &Path) -> Vec<u16> {
    read_var(efivars, BOOT_ORDER, GLOBAL_GUID)
        .map(|d| u16_list(&d))
        .unwrap_or_default()
}

fn set_boot_order(efivars: &Path, order: &[u16]) -> Result<(), TridentError> {
    let data: Vec<u8> = order.iter().flat_map(|n| n.to_le_bytes()).collect();
    write_var(efivars, BOOT_ORDER, GLOBAL_GUID, &data)
}

/// `BootCurrent`: the option the firmware booted.
pub fn boot_current(efivars: &Path) -> Option<u16> {
    u16_list(&read_var(efivars, BOOT_CURRENT, GLOBAL_GUID)?)
        .first()
        .copied()
}

/// `BootNext` (`None`: absent).
pub fn boot_next(efivars: &Path) -> Option<u16> {
    u16_list(&read_var(efivars, BOOT_NEXT, GLOBAL_GUID)?)
        .first()
        .copied()
}

/// The next boot, once, is option `number`.
pub fn set_boot_next(efivars: &Path, number: u16) -> Result<(), TridentError> {
    write_var(efivars, BOOT_NEXT, GLOBAL_GUID, &number.to_le_bytes())
}

pub fn clear_boot_next(efivars: &Path) -> Result<(), TridentError> {
    remove_var(efivars, BOOT_NEXT, GLOBAL_GUID)
}

/// The number of the option labelled `label` (the first, if several).
pub fn find(efivars: &Path, label: &str) -> Option<u16> {
    options(efivars)
        .into_iter()
        .find(|(_, o)| o.description == label)
        .map(|(n, _)| n)
}

/// The label of the option that booted (`BootCurrent`'s description).
pub fn booted_label(efivars: &Path) -> Option<String> {
    let current = boot_current(efivars)?;
    options(efivars)
        .into_iter()
        .find(|(n, _)| *n == current)
        .map(|(_, o)| o.description)
}

/// Writes `option` as the one option with its label: an existing option of
/// that label is rewritten in place (its number and place in `BootOrder`
/// kept), further ones are deleted and leave `BootOrder`, as upstream
/// deletes duplicates; otherwise the lowest free number is taken. Returns
/// the option's number.
pub fn upsert(efivars: &Path, option: &LoadOption) -> Result<u16, TridentError> {
    let numbers = upsert_all(efivars, std::slice::from_ref(option))?;
    numbers
        .first()
        .copied()
        .ok_or_else(|| TridentError::new(trident_host::Subkind::BootControl, "No Boot#### written"))
}

/// Writes `options`, which share one label (a volume on an ESP mirror: one
/// option per member), as the only options with that label. An existing
/// option of the label on the same partition keeps its number; other
/// existing ones of the label are reused (a replaced disk's member takes
/// the number of the one it replaces), then the lowest free numbers are
/// taken; options of the label left over are deleted and leave
/// `BootOrder`. Returns the numbers in the order of `options`.
pub fn upsert_all(efivars: &Path, options: &[LoadOption]) -> Result<Vec<u16>, TridentError> {
    let Some(label) = options.first().map(|o| o.description.as_str()) else {
        return Ok(Vec::new());
    };
    let existing = self::options(efivars);
    let mut spare: Vec<&(u16, LoadOption)> = existing
        .iter()
        .filter(|(_, o)| o.description == label)
        .collect();
    let same_partition = |a: &LoadOption, b: &LoadOption| match (&a.partition, &b.partition) {
        (Some(a), Some(b)) => a.part_uuid == b.part_uuid,
        _ => false,
    };
    let mut numbers: Vec<Option<u16>> = options
        .iter()
        .map(|option| {
            let at = spare.iter().position(|(_, o)| same_partition(o, option))?;
            Some(spare.remove(at).0)
        })
        .collect();
    let mut taken: Vec<u16> = existing.iter().map(|(n, _)| *n).collect();
    for number in numbers.iter_mut().filter(|n| n.is_none()) {
        let next = match spare.first() {
            Some((n, _)) => {
                spare.remove(0);
                *n
            }
            None => {
                let free = (0..=u16::MAX).find(|n| !taken.contains(n)).ok_or_else(|| {
                    TridentError::new(
                        trident_host::Subkind::BootControl,
                        "Every Boot#### number is taken",
                    )
                })?;
                taken.push(free);
                free
            }
        };
        *number = Some(next);
    }
    let numbers: Vec<u16> = numbers.into_iter().flatten().collect();
    for (number, option) in numbers.iter().zip(options) {
        write_var(
            efivars,
            &option_name(*number),
            GLOBAL_GUID,
            &option.encode(),
        )?;
    }
    let left_over: Vec<u16> = spare.iter().map(|(n, _)| *n).collect();
    for extra in &left_over {
        remove_var(efivars, &option_name(*extra), GLOBAL_GUID)?;
    }
    if !left_over.is_empty() {
        let order: Vec<u16> = boot_order(efivars)
            .into_iter()
            .filter(|n| !left_over.contains(n))
            .collect();
        set_boot_order(efivars, &order)?;
    }
    Ok(numbers)
}

/// Puts options `numbers` (in their order) at `position` of `BootOrder`
/// (written only when it changes).
pub fn place(efivars: &Path, numbers: &[u16], position: Position) -> Result<(), TridentError> {
    let order = boot_order(efivars);
    let placed = placed(&order, numbers, position);
    if placed != order {
        set_boot_order(efivars, &placed)?;
    }
    Ok(())
}

fn placed(order: &[u16], numbers: &[u16], position: Position) -> Vec<u16> {
    match position {
        Position::First => numbers
            .iter()
            .copied()
            .chain(order.iter().copied().filter(|n| !numbers.contains(n)))
            .collect(),
        Position::Last => order
            .iter()
            .copied()
            .chain(numbers.iter().copied().filter(|n| !order.contains(n)))
            .collect(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::boot_control::load_option::HardDrive;

    fn option(label: &str) -> LoadOption {
        LoadOption::new(
            label,
            HardDrive {
                number: 1,
                start_lba: 2048,
                size_lba: 4096,
                part_uuid: uuid::Uuid::nil(),
            },
            &format!(r"\EFI\{label}\bootx64.efi"),
        )
    }

    #[test]
    fn first_moves_an_option_to_the_front_and_last_appends_only_new_ones() {
        assert_eq!(placed(&[1, 2, 3], &[3], Position::First), vec![3, 1, 2]);
        assert_eq!(placed(&[1, 2], &[4], Position::First), vec![4, 1, 2]);
        assert_eq!(placed(&[1, 2], &[1], Position::Last), vec![1, 2]);
        assert_eq!(placed(&[1, 2], &[4], Position::Last), vec![1, 2, 4]);
        assert_eq!(
            placed(&[1, 2, 3, 4], &[4, 2], Position::First),
            vec![4, 2, 1, 3]
        );
        assert_eq!(
            placed(&[1, 2], &[2, 5, 6], Position::Last),
            vec![1, 2, 5, 6]
        );
    }

    #[test]
    fn an_option_is_rewritten_under_its_label_and_duplicates_leave_boot_order() {
        let dir = std::env::temp_dir().join(format!("efivars-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        // Firmware's own option 0000, then two stale AZLA options.
        write_var(&dir, "Boot0000", GLOBAL_GUID, &option("UEFI Misc").encode()).unwrap();
        write_var(&dir, "Boot0001", GLOBAL_GUID, &option("AZLA").encode()).unwrap();
        write_var(&dir, "Boot0003", GLOBAL_GUID, &option("AZLA").encode()).unwrap();
        set_boot_order(&dir, &[3, 0, 1]).unwrap();

        let a = upsert(&dir, &option("AZLA")).unwrap();
        assert_eq!(a, 1);
        assert_eq!(boot_order(&dir), vec![0, 1]);
        let b = upsert(&dir, &option("AZLB")).unwrap();
        assert_eq!(b, 2, "the lowest free number");
        place(&dir, &[b], Position::Last).unwrap();
        set_boot_next(&dir, b).unwrap();
        assert_eq!(boot_order(&dir), vec![0, 1, 2]);
        assert_eq!(boot_next(&dir), Some(2));
        assert_eq!(find(&dir, "AZLB"), Some(2));
        // The firmware booted B and consumed BootNext.
        write_var(&dir, BOOT_CURRENT, GLOBAL_GUID, &2u16.to_le_bytes()).unwrap();
        clear_boot_next(&dir).unwrap();
        assert_eq!(booted_label(&dir).as_deref(), Some("AZLB"));
        place(&dir, &[b], Position::First).unwrap();
        assert_eq!(boot_order(&dir), vec![2, 0, 1]);
        // Attributes then the little-endian list, as efivarfs stores it.
        assert_eq!(
            std::fs::read(dir.join(format!("BootOrder-{GLOBAL_GUID}"))).unwrap(),
            vec![7, 0, 0, 0, 2, 0, 0, 0, 1, 0]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn on(label: &str, part: u128) -> LoadOption {
        let mut o = option(label);
        if let Some(hd) = o.partition.as_mut() {
            hd.part_uuid = uuid::Uuid::from_u128(part);
        }
        o
    }

    #[test]
    fn a_mirrored_esp_gets_one_option_per_member_and_a_replaced_member_takes_the_old_number() {
        let dir = std::env::temp_dir().join(format!("efivars-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        write_var(&dir, "Boot0000", GLOBAL_GUID, &option("UEFI Misc").encode()).unwrap();
        set_boot_order(&dir, &[0]).unwrap();
        let a = upsert_all(&dir, &[on("AZLA", 1), on("AZLA", 2)]).unwrap();
        assert_eq!(a, vec![1, 2]);
        place(&dir, &a, Position::First).unwrap();
        assert_eq!(boot_order(&dir), vec![1, 2, 0]);
        // Written again unchanged: the same numbers.
        assert_eq!(
            upsert_all(&dir, &[on("AZLA", 1), on("AZLA", 2)]).unwrap(),
            a
        );
        // The second disk replaced (member 2 → 3): the first member keeps
        // its number, the new one takes the old member's.
        let b = upsert_all(&dir, &[on("AZLA", 1), on("AZLA", 3)]).unwrap();
        assert_eq!(b, vec![1, 2]);
        let written = options(&dir);
        assert_eq!(
            written[2].1.partition.as_ref().unwrap().part_uuid,
            uuid::Uuid::from_u128(3)
        );
        // One member left: the other option leaves BootOrder.
        assert_eq!(upsert_all(&dir, &[on("AZLA", 3)]).unwrap(), vec![2]);
        assert_eq!(boot_order(&dir), vec![2, 0]);
        assert_eq!(options(&dir).len(), 2);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
