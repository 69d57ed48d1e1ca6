//! The two kinds of extension image and what is known of one once it is
//! checked (a leaf of `extensions`: the other modules of it name it).

use std::path::{Path, PathBuf};

use trident_host::config::{DEFAULT_CONFEXT_DIRECTORY, DEFAULT_SYSEXT_DIRECTORY, Extension, Os};

/// Which kind of extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionKind {
    Sysext,
    Confext,
}

impl ExtensionKind {
    pub const ALL: [ExtensionKind; 2] = [Self::Sysext, Self::Confext];

    /// Its Host Configuration key.
    pub fn key(self) -> &'static str {
        match self {
            Self::Sysext => "os.sysexts",
            Self::Confext => "os.confexts",
        }
    }

    pub fn list(self, os: &Os) -> &[Extension] {
        match self {
            Self::Sysext => &os.sysexts,
            Self::Confext => &os.confexts,
        }
    }

    pub(super) fn list_mut(self, os: &mut Os) -> &mut Vec<Extension> {
        match self {
            Self::Sysext => &mut os.sysexts,
            Self::Confext => &mut os.confexts,
        }
    }

    /// Where the image holds its `extension-release.NAME`.
    pub fn release_dir(self) -> &'static str {
        match self {
            Self::Sysext => "usr/lib/extension-release.d",
            Self::Confext => "etc/extension-release.d",
        }
    }

    /// Where the image goes without a `path`.
    pub fn default_dir(self) -> &'static str {
        match self {
            Self::Sysext => DEFAULT_SYSEXT_DIRECTORY,
            Self::Confext => DEFAULT_CONFEXT_DIRECTORY,
        }
    }

    /// The systemd tool that merges this kind.
    pub fn tool(self) -> &'static str {
        match self {
            Self::Sysext => "systemd-sysext",
            Self::Confext => "systemd-confext",
        }
    }
}

/// One extension image, checked and ready to be placed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staged {
    pub kind: ExtensionKind,
    /// Its index in the kind's list.
    pub index: usize,
    /// SHA-384 of the image, lowercase.
    pub sha384: String,
    /// The checked image: downloaded into the staging directory, or the
    /// running OS's copy of it.
    pub file: PathBuf,
    /// Where it goes in the target OS (absolute).
    pub path: String,
}

/// `path` (absolute in the target OS) under the directory `root`.
pub fn under(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// Whether `new` asks for other images of `kind` than `old` placed:
/// another count, another hash, or a `path` other than where it is.
/// URLs do not count (the bytes are the hash's).
pub fn changed(kind: ExtensionKind, old: &Os, new: &Os) -> bool {
    let (old, new) = (kind.list(old), kind.list(new));
    old.len() != new.len()
        || old.iter().zip(new).any(|(o, n)| {
            !o.sha384.eq_ignore_ascii_case(&n.sha384)
                || n.path.as_ref().is_some_and(|p| Some(p) != o.path.as_ref())
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn ext(sha: char, path: Option<&str>) -> Extension {
        Extension {
            url: "http://x/e.raw".into(),
            sha384: sha.to_string().repeat(96),
            path: path.map(str::to_owned),
        }
    }

    fn os(sysexts: Vec<Extension>) -> Os {
        Os {
            sysexts,
            ..Os::default()
        }
    }

    #[test]
    fn a_change_is_another_image_or_another_given_path_not_a_filled_one() {
        let placed = os(vec![ext('a', Some("/var/lib/extensions/a.raw"))]);
        // The same image without a path: where it is is fine.
        assert!(!changed(
            ExtensionKind::Sysext,
            &placed,
            &os(vec![ext('a', None)])
        ));
        assert!(!changed(
            ExtensionKind::Sysext,
            &placed,
            &os(vec![ext('A', None)])
        ));
        assert!(changed(
            ExtensionKind::Sysext,
            &placed,
            &os(vec![ext('b', None)])
        ));
        assert!(changed(
            ExtensionKind::Sysext,
            &placed,
            &os(vec![ext('a', Some("/etc/extensions/a.raw"))])
        ));
        assert!(changed(ExtensionKind::Sysext, &placed, &os(vec![])));
        assert!(!changed(ExtensionKind::Confext, &placed, &os(vec![])));
    }

    #[test]
    fn paths_land_under_the_root() {
        assert_eq!(
            under(Path::new("/host"), "/var/lib/confexts/a.raw"),
            PathBuf::from("/host/var/lib/confexts/a.raw")
        );
        assert_eq!(
            under(Path::new("/"), "/etc/extensions/a.raw"),
            PathBuf::from("/etc/extensions/a.raw")
        );
    }
}
