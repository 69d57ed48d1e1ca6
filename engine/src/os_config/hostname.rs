//! `os.hostname`: the new root's /etc/hostname.

use std::path::Path;

use trident_host::config::document_rules;

use super::root_fs::{OsConfigError, write_file};
use crate::new_root::root_dir::RootDir;

const KEY: &str = "os.hostname";

/// The hostname rule validation applies (`document_rules::check_hostname`).
fn check(name: &str) -> Result<(), OsConfigError> {
    document_rules::check_hostname(name).map_err(|rule| OsConfigError::document(KEY, rule))
}

pub fn apply(root: &RootDir, name: &str) -> Result<(), OsConfigError> {
    check(name)?;
    write_file(
        root,
        Path::new("/etc/hostname"),
        format!("{name}\n").as_bytes(),
        0o644,
        KEY,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_root::TestRoot;
    use super::*;

    #[test]
    fn writes_etc_hostname_of_the_new_root() {
        let root = TestRoot::new();
        root.write("etc/hostname", "image-default\n");
        apply(&root.dir(), "edge-7.lab").unwrap();
        assert_eq!(root.read("etc/hostname"), "edge-7.lab\n");
        assert_eq!(root.mode("etc/hostname"), 0o644);
    }

    #[test]
    fn a_bad_name_is_refused_naming_the_key() {
        let root = TestRoot::new();
        for bad in ["", "-x", "a b", "x/y", &"a".repeat(65)] {
            let err = apply(&root.dir(), bad).unwrap_err();
            assert_eq!(err.key(), KEY, "{bad}");
        }
        assert!(!root.path().join("etc/hostname").exists());
    }
}
