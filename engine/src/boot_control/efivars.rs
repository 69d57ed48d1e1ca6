//! EFI variables in efivarfs (or the directory standing in for it,
//! `tridentd --efivars`): each file `<Name>-<vendor GUID>` is the 4-byte
//! attributes then the value. Generic reads and writes ([`write_var`],
//! [`read_var`], [`remove_var`]) serve the firmware's boot variables
//! (`boot_vars`) and systemd-boot's string variables here:
//! `LoaderEntryOneShot` (boot this entry once), `LoaderEntryDefault` (the
//! default entry, before `loader.conf`'s) and `LoaderEntrySelected` (the
//! entry systemd-boot booted, set by systemd-boot itself), each a
//! NUL-terminated UTF-16LE string.

use std::path::{Path, PathBuf};

use trident_host::{Subkind, TridentError};

/// systemd-boot's vendor GUID for its EFI variables.
pub const LOADER_GUID: &str = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f";
/// EFI_GLOBAL_VARIABLE: the firmware's `Boot####`, `BootOrder`, ...
pub const GLOBAL_GUID: &str = "8be4df61-93ca-11d2-aa0d-00e098032b8c";
/// EFI_VARIABLE_NON_VOLATILE | BOOTSERVICE_ACCESS | RUNTIME_ACCESS.
const EFI_VAR_ATTRIBUTES: u32 = 0x7;

pub const ONE_SHOT: &str = "LoaderEntryOneShot";
pub const DEFAULT: &str = "LoaderEntryDefault";
pub const SELECTED: &str = "LoaderEntrySelected";

fn path(efivars: &Path, name: &str, guid: &str) -> PathBuf {
    efivars.join(format!("{name}-{guid}"))
}

/// A failed access to the EFI variables: a host whose efivarfs is absent
/// or read-only gets `efi-variables-unavailable`, naming the directory.
fn var_error(efivars: &Path, what: &str, error: &std::io::Error) -> TridentError {
    use std::io::ErrorKind::{PermissionDenied, ReadOnlyFilesystem};
    let unavailable =
        !efivars.is_dir() || matches!(error.kind(), ReadOnlyFilesystem | PermissionDenied);
    let subkind = if unavailable {
        Subkind::EfiVariablesUnavailable
    } else {
        Subkind::BootControl
    };
    TridentError::new(
        subkind,
        format!(
            "Cannot {what} in {}: {error}{}",
            efivars.display(),
            if unavailable {
                " (the UEFI boot control needs efivarfs mounted read-write there)"
            } else {
                ""
            }
        ),
    )
}

/// Sets variable `name` of vendor `guid` to `value` (replacing it).
pub fn write_var(efivars: &Path, name: &str, guid: &str, value: &[u8]) -> Result<(), TridentError> {
    use std::io::Write;
    let file = path(efivars, name, guid);
    let mut data = EFI_VAR_ATTRIBUTES.to_le_bytes().to_vec();
    data.extend_from_slice(value);
    // efivarfs takes a variable in one write, without truncating first (as
    // systemd and libefivar write); an existing file may be immutable
    // (variables the kernel does not know are).
    if file.exists() {
        make_mutable(&file);
    }
    let fail = |e: std::io::Error| var_error(efivars, &format!("set {name}"), &e);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&file)
        .map_err(fail)?;
    out.write_all(&data).map_err(fail)?;
    // A plain directory standing in for efivarfs keeps a longer old value's
    // tail otherwise; efivarfs sizes the file by the variable.
    let _ = out.set_len(data.len() as u64);
    Ok(())
}

/// The value of variable `name` of vendor `guid` (`None`: absent).
pub fn read_var(efivars: &Path, name: &str, guid: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path(efivars, name, guid)).ok()?;
    bytes.get(4..).map(<[u8]>::to_vec)
}

/// Removes variable `name` of vendor `guid` (absent: nothing to do).
pub fn remove_var(efivars: &Path, name: &str, guid: &str) -> Result<(), TridentError> {
    let file = path(efivars, name, guid);
    if !file.exists() {
        return Ok(());
    }
    make_mutable(&file);
    std::fs::remove_file(&file).map_err(|e| var_error(efivars, &format!("clear {name}"), &e))
}

/// efivarfs files are immutable until told otherwise.
fn make_mutable(file: &Path) {
    let _ = std::process::Command::new("chattr")
        .arg("-i")
        .arg(file)
        .stderr(std::process::Stdio::null())
        .status();
}

/// Sets systemd-boot's variable `name` to `value` (replacing it).
pub fn set(efivars: &Path, name: &str, value: &str) -> Result<(), TridentError> {
    let data: Vec<u8> = value
        .encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect();
    write_var(efivars, name, LOADER_GUID, &data)
}

/// Removes systemd-boot's variable `name` (absent: nothing to do).
pub fn clear(efivars: &Path, name: &str) -> Result<(), TridentError> {
    remove_var(efivars, name, LOADER_GUID)
}

/// The value of systemd-boot's variable `name` (`None`: absent or not a
/// UTF-16 string).
pub fn get(efivars: &Path, name: &str) -> Option<String> {
    let bytes = read_var(efivars, name, LOADER_GUID)?;
    let units: Vec<u16> = bytes
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
        let bytes = std::fs::read(path(&dir, ONE_SHOT, LOADER_GUID)).unwrap();
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
        assert!(!path(&dir, ONE_SHOT, LOADER_GUID).exists());
        assert_eq!(get(&dir, ONE_SHOT), None);
        clear(&dir, ONE_SHOT).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_missing_efivarfs_is_efi_variables_unavailable_naming_it() {
        let dir = std::env::temp_dir().join(format!("no-efivars-{}", uuid::Uuid::new_v4()));
        let error = set(&dir, ONE_SHOT, "x").unwrap_err();
        assert_eq!(error.subkind(), Subkind::EfiVariablesUnavailable);
        assert!(
            error.message().contains(&dir.display().to_string()),
            "{}",
            error.message()
        );
    }
}
