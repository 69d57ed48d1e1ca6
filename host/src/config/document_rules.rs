//! The rules of values that need only the document: names and paths the
//! installed OS will use as files, users, GPT names and command-line words.
//! Validation applies them, so `trident validate` refuses what servicing
//! would refuse later for the same reason, before any disk is written; the
//! engine calls the same functions again where it writes (defence in depth,
//! never the first check).
//!
//! An error quotes at most an [`excerpt`] of the value: a 1 MB hostname is
//! refused in one line.

use super::{HostConfiguration, User};
use crate::error::{Subkind, TridentError};

/// The longest excerpt of a value an error quotes.
const EXCERPT_CHARS: usize = 48;
/// GPT partition names hold 36 UTF-16 code units.
pub const GPT_NAME_UNITS: usize = 36;
/// Partition entries of the GPT the install writes.
pub const GPT_ENTRIES: usize = 128;
/// Longest path the kernel takes (PATH_MAX, with its NUL).
const PATH_MAX: usize = 4095;
/// Longest user or group name (`useradd`, utmp).
const NAME_MAX: usize = 32;
/// Longest hostname (HOST_NAME_MAX).
const HOSTNAME_MAX: usize = 64;

/// `value` as an error quotes it: debug-escaped (a newline shows as
/// `\n`), cut after a few dozen characters with its full length.
pub fn excerpt(value: &str) -> String {
    let mut chars = value.chars();
    let head: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_none() {
        format!("{head:?}")
    } else {
        format!("{head:?}… ({} bytes)", value.len())
    }
}

#[track_caller]
fn invalid(key: &str, rule: String) -> TridentError {
    TridentError::new(
        Subkind::InvalidHostConfiguration,
        format!("Host Configuration key '{key}': {rule}"),
    )
}

/// A hostname systemd accepts: 1 to 64 characters of letters, digits, `-`
/// and `.`, not starting or ending with `-` or `.`.
pub fn check_hostname(name: &str) -> Result<(), String> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    let ok_ends = !name.starts_with(['-', '.']) && !name.ends_with(['-', '.']);
    if name.is_empty() || name.len() > HOSTNAME_MAX || !ok_chars || !ok_ends {
        return Err(format!(
            "{} is not a valid hostname (1-{HOSTNAME_MAX} letters, digits, '-' and '.', \
             not starting or ending with '-' or '.')",
            excerpt(name)
        ));
    }
    Ok(())
}

/// An absolute path of the installed OS: starts with `/`, no `..`, no NUL
/// or newline, at most PATH_MAX bytes.
pub fn check_absolute_path(path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("{} is not an absolute path", excerpt(path)));
    }
    if path.split('/').any(|part| part == "..") {
        return Err(format!(
            "{} leaves the new root ('..' is not allowed)",
            excerpt(path)
        ));
    }
    if path.contains(['\0', '\n']) {
        return Err(format!("{} holds a NUL or a newline", excerpt(path)));
    }
    if path.len() > PATH_MAX {
        return Err(format!("{} is longer than {PATH_MAX} bytes", excerpt(path)));
    }
    Ok(())
}

/// [`check_absolute_path`] that names a file: not `/`, not ending in `/`,
/// `/.` or `/..`.
pub fn check_file_path(path: &str) -> Result<(), String> {
    check_absolute_path(path)?;
    let last = path.rsplit('/').next().unwrap_or("");
    if matches!(last, "" | "." | "..") {
        return Err(format!("{} names a directory, not a file", excerpt(path)));
    }
    Ok(())
}

/// A home directory `useradd` writes into `/etc/passwd`: an absolute
/// path with no `:` (the field separator) and no control character.
pub fn check_home_directory(path: &str) -> Result<(), String> {
    check_absolute_path(path)?;
    if path.contains(':') || path.chars().any(char::is_control) {
        return Err(format!(
            "{} holds ':' or a control character, which /etc/passwd cannot hold",
            excerpt(path)
        ));
    }
    Ok(())
}

/// A user or group name `useradd` and every tool reading `/etc/passwd`
/// take (shadow's rule, stricter on a leading `.`): 1 to 32 of letters,
/// digits, `_`, `-` and `.` (and a final `$`), not starting with `-` or
/// `.`, not digits only.
pub fn check_account_name(name: &str) -> Result<(), String> {
    let body = name.strip_suffix('$').unwrap_or(name);
    let ok_chars = body
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    let numeric = body.chars().all(|c| c.is_ascii_digit());
    if body.is_empty()
        || name.len() > NAME_MAX
        || !ok_chars
        || numeric
        || body.starts_with(['-', '.'])
    {
        return Err(format!(
            "{} is not a valid user or group name (1-{NAME_MAX} letters, digits, '_', '-' \
             and '.', not starting with '-' or '.', not digits only)",
            excerpt(name)
        ));
    }
    Ok(())
}

/// `"0750"` / `"750"` → 0o750.
pub fn parse_file_mode(text: &str) -> Result<u32, String> {
    u32::from_str_radix(text.trim(), 8)
        .ok()
        .filter(|m| *m <= 0o7777)
        .ok_or_else(|| format!("{} is not an octal file mode (e.g. '0644')", excerpt(text)))
}

/// One word of a kernel command line, a modprobe line or a unit name:
/// not empty, no whitespace, no control character.
pub fn check_word(word: &str, what: &str) -> Result<(), String> {
    if word.is_empty() || word.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{} is not one {what} (no spaces)", excerpt(word)));
    }
    Ok(())
}

/// Every document-only rule of `hc`, first failure first.
pub fn validate_document_rules(hc: &HostConfiguration) -> Result<(), TridentError> {
    validate_storage_names(hc)?;
    if let Some(name) = &hc.os.hostname {
        check_hostname(name).map_err(|rule| invalid("os.hostname", rule))?;
    }
    for (i, file) in hc.os.additional_files.iter().enumerate() {
        let key = format!("os.additionalFiles[{i}]");
        check_file_path(&file.destination)
            .map_err(|rule| invalid(&format!("{key}.destination"), rule))?;
        if file.content.is_some() == file.source.is_some() {
            return Err(invalid(
                &key,
                "give exactly one of 'content' and 'source'".into(),
            ));
        }
        if let Some(mode) = &file.permissions {
            parse_file_mode(mode).map_err(|rule| invalid(&format!("{key}.permissions"), rule))?;
        }
    }
    validate_users("os.users", &hc.os.users)?;
    validate_users("managementOs.users", &hc.management_os.users)?;
    check_files_are_not_directories(hc)?;
    for (i, arg) in hc
        .os
        .kernel_command_line
        .extra_command_line
        .iter()
        .enumerate()
    {
        check_word(arg, "kernel argument").map_err(|rule| {
            invalid(&format!("os.kernelCommandLine.extraCommandLine[{i}]"), rule)
        })?;
    }
    for (i, module) in hc.os.modules.iter().enumerate() {
        let key = format!("os.modules[{i}]");
        check_module_word(&module.name, "module name")
            .map_err(|rule| invalid(&format!("{key}.name"), rule))?;
        for (name, value) in &module.options {
            check_module_word(name, "module option")
                .and_then(|()| check_module_word(value, "module option value"))
                .map_err(|rule| invalid(&format!("{key}.options.{name}"), rule))?;
        }
    }
    let services = [
        ("enable", &hc.os.services.enable),
        ("disable", &hc.os.services.disable),
    ];
    for (verb, units) in services {
        for (i, unit) in units.iter().enumerate() {
            check_unit_name(unit)
                .map_err(|rule| invalid(&format!("os.services.{verb}[{i}]"), rule))?;
        }
    }
    for (key, plan) in [
        ("os.netplan", &hc.os.netplan),
        ("managementOs.netplan", &hc.management_os.netplan),
    ] {
        if let Some(plan) = plan {
            super::netplan_file_text(plan).map_err(|why| invalid(key, why))?;
        }
    }
    Ok(())
}

/// An additional file cannot be a directory the document needs: another
/// file's or a home directory's parent.
fn check_files_are_not_directories(hc: &HostConfiguration) -> Result<(), TridentError> {
    let files = hc.os.additional_files.iter().enumerate().map(|(i, f)| {
        (
            format!("os.additionalFiles[{i}].destination"),
            f.destination.as_str(),
        )
    });
    let homes = hc.os.users.iter().enumerate().filter_map(|(i, u)| {
        let home = u.home_directory.as_deref()?;
        Some((format!("os.users[{i}].homeDirectory"), home))
    });
    // Compared by components: `//a/./b` is `/a/b`.
    let parts = |path: &str| -> Vec<String> {
        path.split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .map(str::to_owned)
            .collect()
    };
    let paths: Vec<(String, Vec<String>)> = files
        .clone()
        .chain(homes)
        .map(|(key, path)| (key, parts(path)))
        .collect();
    for (key, file) in files {
        let file_parts = parts(file);
        let needs_dir = |other: &Vec<String>| {
            other.len() > file_parts.len() && other[..file_parts.len()] == file_parts[..]
        };
        if let Some((other, _)) = paths.iter().find(|(_, p)| needs_dir(p)) {
            return Err(invalid(
                &key,
                format!(
                    "{} is a file, but '{other}' needs it as a directory",
                    excerpt(file)
                ),
            ));
        }
    }
    Ok(())
}

/// A unit name `systemctl` takes as one: one word, not an option.
pub fn check_unit_name(unit: &str) -> Result<(), String> {
    check_word(unit, "unit name")?;
    if unit.starts_with('-') {
        return Err(format!("{} is not a unit name", excerpt(unit)));
    }
    Ok(())
}

/// A module name, option or option value as modprobe reads it: one word
/// without `#` (a comment).
pub fn check_module_word(word: &str, what: &str) -> Result<(), String> {
    check_word(word, what).and_then(|()| no_hash(word))
}

fn no_hash(word: &str) -> Result<(), String> {
    if word.contains('#') {
        return Err(format!("{} holds '#'", excerpt(word)));
    }
    Ok(())
}

fn validate_users(key: &str, users: &[User]) -> Result<(), TridentError> {
    for (i, user) in users.iter().enumerate() {
        let key = format!("{key}[{i}]");
        check_account_name(&user.name).map_err(|rule| invalid(&format!("{key}.name"), rule))?;
        if let Some(group) = &user.primary_group {
            check_account_name(group)
                .map_err(|rule| invalid(&format!("{key}.primaryGroup"), rule))?;
        }
        for (g, group) in user.secondary_groups.iter().enumerate() {
            check_account_name(group)
                .map_err(|rule| invalid(&format!("{key}.secondaryGroups[{g}]"), rule))?;
        }
        if let Some(home) = &user.home_directory {
            check_home_directory(home)
                .map_err(|rule| invalid(&format!("{key}.homeDirectory"), rule))?;
        }
        // A user without a primary group gets a group of its own name,
        // which must not exist yet: not one this document creates first as
        // a secondary group (of this user or an earlier one).
        if user.primary_group.is_none()
            && let Some(j) = users[..=i]
                .iter()
                .position(|u| u.secondary_groups.contains(&user.name))
        {
            return Err(invalid(
                &format!("{key}.name"),
                format!(
                    "{} gets a group of its own name, but {} makes that a secondary group \
                     first; name a primaryGroup or another group",
                    excerpt(&user.name),
                    if j == i {
                        "this user".to_owned()
                    } else {
                        format!("users[{j}]")
                    }
                ),
            ));
        }
        for (k, ssh_key) in user.ssh_public_keys.iter().enumerate() {
            // One line of authorized_keys: a newline would add another.
            if ssh_key.trim().is_empty() || ssh_key.contains(['\n', '\r', '\0']) {
                return Err(invalid(
                    &format!("{key}.sshPublicKeys[{k}]"),
                    "must be one non-empty line".into(),
                ));
            }
        }
    }
    Ok(())
}

/// Ids have no control character; a partition's GPT name (its label, else
/// its id) fits the GPT's 36 UTF-16 units; a disk has at most 128
/// partitions (adopted ones included).
fn validate_storage_names(hc: &HostConfiguration) -> Result<(), TridentError> {
    let storage = &hc.storage;
    let check_id = |key: String, id: &str| -> Result<(), TridentError> {
        if id.is_empty() || id.chars().any(char::is_control) {
            return Err(invalid(
                &key,
                format!(
                    "{} is not an id (not empty, no control character)",
                    excerpt(id)
                ),
            ));
        }
        Ok(())
    };
    for (d, disk) in storage.disks.iter().enumerate() {
        let base = format!("storage.disks[{d}]");
        check_id(format!("{base}.id"), &disk.id)?;
        let count = disk.partitions.len() + disk.adopted_partitions.len();
        if count > GPT_ENTRIES {
            return Err(invalid(
                &format!("{base}.partitions"),
                format!("{count} partitions; a GPT holds at most {GPT_ENTRIES}"),
            ));
        }
        for (p, part) in disk.partitions.iter().enumerate() {
            let key = format!("{base}.partitions[{p}]");
            check_id(format!("{key}.id"), &part.id)?;
            let (name_key, name) = match &part.label {
                Some(label) => (format!("{key}.label"), label.as_str()),
                None => (format!("{key}.id"), part.id.as_str()),
            };
            if name.chars().any(char::is_control) {
                return Err(invalid(
                    &name_key,
                    format!("{} holds a control character", excerpt(name)),
                ));
            }
            let units = name.encode_utf16().count();
            if units > GPT_NAME_UNITS {
                return Err(invalid(
                    &name_key,
                    format!(
                        "{} is the partition's GPT name and is {units} UTF-16 units long; \
                         a GPT name holds at most {GPT_NAME_UNITS}",
                        excerpt(name)
                    ),
                ));
            }
        }
        for (a, adopted) in disk.adopted_partitions.iter().enumerate() {
            check_id(format!("{base}.adoptedPartitions[{a}].id"), &adopted.id)?;
        }
    }
    for (r, array) in storage.raid.software.iter().enumerate() {
        check_id(format!("storage.raid.software[{r}].id"), &array.id)?;
    }
    if let Some(encryption) = &storage.encryption {
        for (v, volume) in encryption.volumes.iter().enumerate() {
            check_id(format!("storage.encryption.volumes[{v}].id"), &volume.id)?;
        }
    }
    for (v, verity) in storage.verity.iter().enumerate() {
        check_id(format!("storage.verity[{v}].id"), &verity.id)?;
    }
    if let Some(ab) = &storage.ab_update {
        for (v, pair) in ab.volume_pairs.iter().enumerate() {
            check_id(format!("storage.abUpdate.volumePairs[{v}].id"), &pair.id)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_excerpt_is_escaped_and_bounded() {
        assert_eq!(excerpt("a\nb"), "\"a\\nb\"");
        let long = "x".repeat(1_000_000);
        let quoted = excerpt(&long);
        assert!(quoted.len() < 80, "{quoted}");
        assert!(quoted.ends_with("(1000000 bytes)"), "{quoted}");
    }

    #[test]
    fn names_and_paths_that_would_escape_or_break_a_file_are_refused() {
        for bad in [
            "../x",
            "a/b",
            "",
            "-rf",
            ".hidden",
            "x\ny",
            "1000",
            &"u".repeat(33),
        ] {
            assert!(check_account_name(bad).is_err(), "{bad:?}");
        }
        for good in ["root", "testing-user", "svc_1", "machine$", "a.b"] {
            check_account_name(good).unwrap();
        }
        for bad in ["etc/x", "/etc/../x", "/a\0b", "/a\nb", ""] {
            assert!(check_absolute_path(bad).is_err(), "{bad:?}");
        }
        check_absolute_path("/etc/evil/pwned").unwrap();
        for bad in ["a/b", "a\nb", "-x", "x-", "", &"h".repeat(65)] {
            assert!(check_hostname(bad).is_err(), "{bad:?}");
        }
        check_hostname("trident-vm.example").unwrap();
    }
}
