//! `os.selinux.mode`: the `SELINUX=` line of the new root's
//! /etc/selinux/config. An image without that file has no SELinux policy:
//! asking for permissive or enforcing there is refused, naming the key.

use std::path::Path;

use trident_host::config::SelinuxMode;

use super::root_fs::{OsConfigError, write_file};
use crate::new_root::root_dir::RootDir;

const KEY: &str = "os.selinux.mode";
pub const SELINUX_CONFIG: &str = "etc/selinux/config";

fn mode_word(mode: SelinuxMode) -> &'static str {
    match mode {
        SelinuxMode::Disabled => "disabled",
        SelinuxMode::Permissive => "permissive",
        SelinuxMode::Enforcing => "enforcing",
    }
}

/// `text` with its `SELINUX=` line set to `mode` (appended when missing).
pub fn set_mode(text: &str, mode: SelinuxMode) -> String {
    let line = format!("SELINUX={}", mode_word(mode));
    let mut found = false;
    let mut out: Vec<String> = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("SELINUX=") {
                found = true;
                line.clone()
            } else {
                l.to_owned()
            }
        })
        .collect();
    if !found {
        out.push(line);
    }
    out.push(String::new());
    out.join("\n")
}

pub fn apply(root: &RootDir, mode: SelinuxMode) -> Result<(), OsConfigError> {
    let path = Path::new(SELINUX_CONFIG);
    let text = match root.read_to_string(path) {
        Ok(text) => text,
        // No policy, nothing to disable.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && mode == SelinuxMode::Disabled => {
            return Ok(());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(OsConfigError::refused(
                KEY,
                format!(
                    "SELinux mode '{}' needs SELinux in the image, which has no /{SELINUX_CONFIG}",
                    mode_word(mode)
                ),
            ));
        }
        Err(e) => {
            return Err(OsConfigError::io(
                KEY,
                format!("cannot read /{SELINUX_CONFIG}"),
                e,
            ));
        }
    };
    write_file(root, path, set_mode(&text, mode).as_bytes(), 0o644, KEY)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::test_root::TestRoot;
    use super::*;

    #[test]
    fn sets_the_mode_line_and_keeps_the_rest() {
        let root = TestRoot::new();
        root.write(
            SELINUX_CONFIG,
            "# policy\nSELINUX=enforcing\nSELINUXTYPE=targeted\n",
        );
        apply(&root.dir(), SelinuxMode::Permissive).unwrap();
        assert_eq!(
            root.read(SELINUX_CONFIG),
            "# policy\nSELINUX=permissive\nSELINUXTYPE=targeted\n"
        );
    }

    #[test]
    fn without_selinux_in_the_image_only_disabled_is_accepted() {
        let root = TestRoot::new();
        apply(&root.dir(), SelinuxMode::Disabled).unwrap();
        let err = apply(&root.dir(), SelinuxMode::Enforcing).unwrap_err();
        assert!(matches!(err, OsConfigError::Refused { .. }));
        assert_eq!(err.key(), KEY);
        assert!(!root.path().join(SELINUX_CONFIG).exists());
    }
}
