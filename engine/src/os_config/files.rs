//! `os.additionalFiles`: files placed in the new root, from inline
//! `content` or from a `source` file on the machine running the daemon,
//! with their `permissions` (octal; default 0644).

use std::fs;

use trident_host::config::AdditionalFile;
use trident_host::config::document_rules;

use super::root_fs::{OsConfigError, in_root, write_file};
use crate::new_root::root_dir::RootDir;

const DEFAULT_MODE: u32 = 0o644;

/// `"0750"` / `"750"` → 0o750.
fn parse_mode(text: &str, key: &str) -> Result<u32, OsConfigError> {
    document_rules::parse_file_mode(text).map_err(|rule| OsConfigError::document(key, rule))
}

/// Each file resolved inside the new root: a symlink in the image (an
/// absolute one too) leads to a place in the root, never on the host.
pub fn apply(root: &RootDir, files: &[AdditionalFile]) -> Result<(), OsConfigError> {
    for (i, file) in files.iter().enumerate() {
        let key = format!("os.additionalFiles[{i}]");
        let mode = match &file.permissions {
            Some(p) => parse_mode(p, &format!("{key}.permissions"))?,
            None => DEFAULT_MODE,
        };
        let content = match (&file.content, &file.source) {
            (Some(text), None) => text.clone().into_bytes(),
            (None, Some(source)) => fs::read(source).map_err(|e| {
                OsConfigError::io(
                    &format!("{key}.source"),
                    format!("cannot read '{source}'"),
                    e,
                )
            })?,
            _ => {
                return Err(OsConfigError::document(
                    key,
                    "give exactly one of 'content' and 'source'".into(),
                ));
            }
        };
        let dest = in_root(&file.destination, &format!("{key}.destination"))?;
        write_file(root, dest, &content, mode, &key)?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_root::TestRoot;
    use super::*;

    fn file(
        dest: &str,
        content: Option<&str>,
        source: Option<&str>,
        mode: Option<&str>,
    ) -> AdditionalFile {
        AdditionalFile {
            destination: dest.to_owned(),
            content: content.map(str::to_owned),
            source: source.map(str::to_owned),
            permissions: mode.map(str::to_owned),
        }
    }

    #[test]
    fn content_and_source_land_with_their_modes() {
        let root = TestRoot::new();
        let src = tempfile::NamedTempFile::new().unwrap();
        fs::write(src.path(), "from source\n").unwrap();
        let files = [
            file(
                "/usr/local/bin/site.sh",
                Some("echo hi"),
                None,
                Some("0750"),
            ),
            file(
                "/etc/site.conf",
                None,
                Some(src.path().to_str().unwrap()),
                None,
            ),
        ];
        apply(&root.dir(), &files).unwrap();
        assert_eq!(root.read("usr/local/bin/site.sh"), "echo hi");
        assert_eq!(root.mode("usr/local/bin/site.sh"), 0o750);
        assert_eq!(root.read("etc/site.conf"), "from source\n");
        assert_eq!(root.mode("etc/site.conf"), 0o644);
    }

    #[test]
    fn bad_entries_are_refused_naming_the_key() {
        let root = TestRoot::new();
        let cases = [
            (
                file("/a", Some("x"), None, Some("rwx")),
                "os.additionalFiles[0].permissions",
            ),
            (file("/a", None, None, None), "os.additionalFiles[0]"),
            (
                file("/a", Some("x"), Some("/b"), None),
                "os.additionalFiles[0]",
            ),
            (
                file("/../../etc/passwd", Some("x"), None, None),
                "os.additionalFiles[0].destination",
            ),
            (
                file("relative", Some("x"), None, None),
                "os.additionalFiles[0].destination",
            ),
            (
                file("/a", None, Some("/no/such/file"), None),
                "os.additionalFiles[0].source",
            ),
        ];
        for (f, key) in cases {
            let err = apply(&root.dir(), &[f]).unwrap_err();
            assert_eq!(err.key(), key, "{err}");
        }
        assert!(!root.path().join("a").exists());
    }
}
