//! `os.modules`: kernel modules loaded at boot (`loadMode: always`, in
//! /etc/modules-load.d), kept from loading (`disable`: blacklisted in
//! /etc/modprobe.d), and their `options` (modprobe.d). `auto` and `inherit`
//! leave loading to the kernel and the image; their options still apply.

use std::path::Path;

use trident_host::config::document_rules;
use trident_host::config::{LoadMode, Module};

use super::root_fs::{OsConfigError, write_file};
use crate::new_root::root_dir::RootDir;

pub const MODULES_LOAD_FILE: &str = "etc/modules-load.d/99-trident.conf";
pub const MODPROBE_FILE: &str = "etc/modprobe.d/99-trident.conf";
const HEADER: &str = "# Written by Trident from the Host Configuration (os.modules).\n";

/// A module name or option as modprobe reads it: one word, no `#` (the
/// rule validation applies).
fn check_word(word: &str, key: &str) -> Result<(), OsConfigError> {
    document_rules::check_module_word(word, "module name or option")
        .map_err(|rule| OsConfigError::document(key, rule))
}

/// (modules-load.d text, modprobe.d text).
pub fn render(modules: &[Module]) -> Result<(String, String), OsConfigError> {
    let mut load = String::from(HEADER);
    let mut modprobe = String::from(HEADER);
    for (i, m) in modules.iter().enumerate() {
        let key = format!("os.modules[{i}]");
        check_word(&m.name, &format!("{key}.name"))?;
        match m.load_mode {
            LoadMode::Always => load.push_str(&format!("{}\n", m.name)),
            LoadMode::Disable => modprobe.push_str(&format!("blacklist {}\n", m.name)),
            LoadMode::Auto | LoadMode::Inherit => {}
        }
        if !m.options.is_empty() {
            let mut line = format!("options {}", m.name);
            for (k, v) in &m.options {
                let key = format!("{key}.options.{k}");
                check_word(k, &key)?;
                check_word(v, &key)?;
                line.push_str(&format!(" {k}={v}"));
            }
            modprobe.push_str(&line);
            modprobe.push('\n');
        }
    }
    Ok((load, modprobe))
}

pub fn apply(root: &RootDir, modules: &[Module]) -> Result<(), OsConfigError> {
    if modules.is_empty() {
        return Ok(());
    }
    let (load, modprobe) = render(modules)?;
    write_file(
        root,
        Path::new(MODULES_LOAD_FILE),
        load.as_bytes(),
        0o644,
        "os.modules",
    )?;
    write_file(
        root,
        Path::new(MODPROBE_FILE),
        modprobe.as_bytes(),
        0o644,
        "os.modules",
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::test_root::TestRoot;
    use super::*;

    fn module(name: &str, mode: LoadMode, options: &[(&str, &str)]) -> Module {
        Module {
            name: name.to_owned(),
            load_mode: mode,
            options: options
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn load_blacklist_and_options_files() {
        let root = TestRoot::new();
        let modules = [
            module("br_netfilter", LoadMode::Always, &[]),
            module("floppy", LoadMode::Disable, &[]),
            module("kvm_intel", LoadMode::Auto, &[("nested", "1")]),
        ];
        apply(&root.dir(), &modules).unwrap();
        assert_eq!(
            root.read(MODULES_LOAD_FILE),
            format!("{HEADER}br_netfilter\n")
        );
        assert_eq!(
            root.read(MODPROBE_FILE),
            format!("{HEADER}blacklist floppy\noptions kvm_intel nested=1\n")
        );
    }

    #[test]
    fn a_name_with_spaces_is_refused_naming_the_key() {
        let root = TestRoot::new();
        let err = apply(&root.dir(), &[module("a b", LoadMode::Always, &[])]).unwrap_err();
        assert_eq!(err.key(), "os.modules[0].name");
        let err = apply(&root.dir(), &[module("m", LoadMode::Auto, &[("k", "x y")])]).unwrap_err();
        assert_eq!(err.key(), "os.modules[0].options.k");
        assert!(!root.path().join(MODULES_LOAD_FILE).exists());
    }
}
