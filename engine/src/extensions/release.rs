//! An extension image's name: the NAME of its one
//! `extension-release.NAME` file (in `usr/lib/extension-release.d/` of a
//! system extension, `etc/extension-release.d/` of a configuration
//! extension), which systemd requires the image file to be named after
//! (`NAME.raw`). Read by mounting the image read-only on a read-only loop
//! device, so its bytes (and hash) never change. The image is a
//! filesystem image (squashfs, erofs, ext4, ...) as `mount` detects it,
//! or a GPT disk image ([`super::ddi`]) whose root or `/usr` partition
//! holds the release file.

use std::path::Path;

use trident_host::{Subkind, TridentError};

use super::ddi::{self, Layout, Range};
use super::kind::ExtensionKind;
use crate::new_root::tools::{LoopDevice, MountGuard};

/// The prefix of the release file's name.
const RELEASE_PREFIX: &str = "extension-release.";

/// The NAME of the image `file` of `kind` (Host Configuration key `key`),
/// mounted at `mount_dir` for the time of the read. Blocking.
pub fn name_of(
    kind: ExtensionKind,
    key: &str,
    file: &Path,
    mount_dir: &Path,
) -> Result<String, TridentError> {
    let not_mergeable = |what: String| {
        TridentError::new(
            Subkind::InvalidExtension,
            format!("Host Configuration key '{key}': {what}"),
        )
    };
    // Where the release file is: the whole image, or the partition of a
    // disk image that systemd-dissect mounts where the release dir lives
    // (a sysext's `/usr` partition at `/usr`, else the root partition).
    let (device, release_dir) = match ddi::layout(file).map_err(&not_mergeable)? {
        Layout::Filesystem => (
            LoopDevice::attach_read_only(file)?,
            kind.release_dir().to_owned(),
        ),
        Layout::Disk { root, usr } => {
            let sysext_usr = usr.filter(|_| kind == ExtensionKind::Sysext);
            let (Range { offset, size }, dir) = match (sysext_usr, root) {
                (Some(usr), _) => (usr, kind.release_dir().trim_start_matches("usr/")),
                (None, Some(root)) => (root, kind.release_dir()),
                (None, None) => {
                    return Err(not_mergeable(format!(
                        "the disk image has no x86-64 root{} partition",
                        if kind == ExtensionKind::Sysext {
                            " or /usr"
                        } else {
                            ""
                        }
                    )));
                }
            };
            (
                LoopDevice::attach_read_only_range(file, offset, size)?,
                dir.to_owned(),
            )
        }
    };
    let mounted = MountGuard::mount_read_only(device, mount_dir).map_err(|e| {
        not_mergeable(format!(
            "the image is no filesystem this system can mount ({})",
            e.message()
        ))
    })?;
    let name = name_in_dir(kind, mount_dir, &release_dir).map_err(not_mergeable);
    mounted.unmount()?;
    name
}

/// The NAME of the one release file of `kind` under the mounted image
/// `root`, or why there is none.
pub fn name_in(kind: ExtensionKind, root: &Path) -> Result<String, String> {
    name_in_dir(kind, root, kind.release_dir())
}

/// The NAME of the one release file in `release_dir` (relative) under the
/// mounted `root`.
fn name_in_dir(kind: ExtensionKind, root: &Path, release_dir: &str) -> Result<String, String> {
    let entries = std::fs::read_dir(root.join(release_dir)).map_err(|_| {
        format!(
            "the image has no /{} (is it a {}?)",
            kind.release_dir(),
            kind.tool()
        )
    })?;
    let names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let [only] = names.as_slice() else {
        return Err(format!(
            "the image's /{} holds {} files, expected one extension-release.NAME",
            kind.release_dir(),
            names.len()
        ));
    };
    match only.strip_prefix(RELEASE_PREFIX) {
        Some(name) if !name.is_empty() && !name.contains('/') => Ok(name.to_owned()),
        _ => Err(format!(
            "'/{}/{only}' is not named extension-release.NAME",
            kind.release_dir()
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn tree(kind: ExtensionKind, files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let release = dir.path().join(kind.release_dir());
        std::fs::create_dir_all(&release).unwrap();
        for f in files {
            std::fs::write(release.join(f), "ID=_any\n").unwrap();
        }
        dir
    }

    #[test]
    fn the_name_is_the_one_release_files_suffix() {
        let t = tree(ExtensionKind::Confext, &["extension-release.motd"]);
        assert_eq!(name_in(ExtensionKind::Confext, t.path()).unwrap(), "motd");
        // A system extension's release file is elsewhere.
        let e = name_in(ExtensionKind::Sysext, t.path()).unwrap_err();
        assert!(e.contains("usr/lib/extension-release.d"), "{e}");
    }

    #[test]
    fn none_or_two_or_a_misnamed_release_file_is_an_error() {
        for files in [
            &[][..],
            &["extension-release.a", "extension-release.b"],
            &["os-release"],
        ] {
            let t = tree(ExtensionKind::Sysext, files);
            assert!(
                name_in(ExtensionKind::Sysext, t.path()).is_err(),
                "{files:?}"
            );
        }
    }
}
