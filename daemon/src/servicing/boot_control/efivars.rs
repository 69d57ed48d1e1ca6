//! systemd-boot's string EFI variables in efivarfs (or the directory
//! standing in for it, `tridentd --efivars`): `LoaderEntryOneShot` (boot
//! this entry once), `LoaderEntryDefault` (the default entry, before
//! `loader.conf`'s) and `LoaderEntrySelected` (the entry systemd-boot
//! booted, set by systemd-boot itself). Each file is the 4-byte attributes
//! then the value in NUL-terminated UTF-16LE.

use std::path::{Path, PathBuf};

use trident_host::{ResultExt, Subkind, TridentError};

/// systemd-boot's vendor GUID for its EFI variables.
const LOADER_GUID: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";
/// EFI_VARIABLE_NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS.
const EFI_VAR_ATTRIBUTES: u32 = 0x7;

pub const ONE_SHOT: &str = "LoaderEntryOneShot";
pub const DEFAULT: &str = "LoaderEntryDefault";
pub const SELECTED: &str = "LoaderEntrySelected";

fn path(efivars: &Path, name: &str) -> PathBuf {
    efivars.join(format!("{name}-{LOADER_GUID}"))
}

/// Sets variable `name` to `value` (replacing it).
pub fn set(efivars: &Path, name: &str, value: &str) -> Result<(), TridentError> {
    clear(efivars, name)?;
    let mut data = EFI_VAR_ATTRIBUTES.to_le_bytes().to_vec();
    for unit in value.encode_utf16().chain(std::iter::once(0)) {
        data.extend_from_slice(&unit.to_le_bytes());
    }
    std::fs::write(path(efivars, name), data).structured_msg(
        Subkind::BootControl,
        format!("Cannot set {name} in {}", efivars.display()),
    )
}

/// Removes variable `name` (absent: nothing to do).
pub fn clear(efivars: &Path, name: &str) -> Result<(), TridentError> {
    let path = path(efivars, name);
    if !path.exists() {
        return Ok(());
    }
    // efivarfs files are immutable until told otherwise.
    let _ = std::process::Command::new("chattr")
        .arg("-i")
        .arg(&path)
        .status();
    std::fs::remove_file(&path).structured_msg(Subkind::BootControl, format!("Cannot clear {name}"))
}

/// The value of variable `name` (`None`: absent or not a UTF-16 string).
pub fn get(efivars: &Path, name: &str) -> Option<String> {
    let bytes = std::fs::read(path(efivars, name)).ok()?;
    let units: Vec<u16> = bytes
        .get(4..)?
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|u| *u != 0)
        .collect();
    String::from_utf16(&units).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_is_the_attributes_then_nul_terminated_utf16_and_clears() {
        let dir = std::env::temp_dir().join(format!("efivars-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        set(&dir, ONE_SHOT, "trident-volume-b.conf").unwrap();
        let bytes = std::fs::read(path(&dir, ONE_SHOT)).unwrap();
        assert_eq!(&bytes[..4], &[7, 0, 0, 0]);
        let units: Vec<u16> = bytes[4..]
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(
            String::from_utf16(&units).unwrap(),
            "trident-volume-b.conf\0"
        );
        assert_eq!(
            get(&dir, ONE_SHOT).as_deref(),
            Some("trident-volume-b.conf")
        );
        clear(&dir, ONE_SHOT).unwrap();
        assert!(!path(&dir, ONE_SHOT).exists());
        assert_eq!(get(&dir, ONE_SHOT), None);
        clear(&dir, ONE_SHOT).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
