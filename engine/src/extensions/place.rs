//! Placing staged extension images: into a new root (install, A/B
//! update), or onto the running system (runtime update: the images the
//! new configuration no longer has are removed and each kind whose images
//! changed is re-merged with `systemd-sysext refresh` /
//! `systemd-confext refresh`). Each image lands under a temporary name in
//! its directory and is renamed into place, so systemd never sees half a
//! file.

use std::collections::BTreeSet;
use std::path::Path;

use trident_host::config::Os;
use trident_host::{ResultExt, Subkind, TridentError};

use super::kind::{ExtensionKind, Staged, changed};
use crate::new_root::root_dir::RootDir;
use crate::new_root::tools::run_tool;

/// Copies every staged image to its path in the root at `root` (a new
/// root, or the running system's), resolved inside it: a symlink on the
/// way is followed there, never out of it. Blocking.
pub fn into_root(root: &Path, staged: &[Staged]) -> Result<(), TridentError> {
    if staged.is_empty() {
        return Ok(());
    }
    let dir = RootDir::open(root)
        .structured_msg(Subkind::Io, format!("Cannot open {}", root.display()))?;
    for s in staged {
        let target = Path::new(&s.path);
        // The running system's own copy, already in place.
        let own = std::fs::canonicalize(&s.file).ok();
        if own.is_some() && dir.host_path(target) == own {
            continue;
        }
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(TridentError::new(
                Subkind::Io,
                format!("'{}' names no file", s.path),
            ));
        };
        let partial = parent.join(format!(".{}.trident-partial", name.to_string_lossy()));
        dir.remove_file(&partial)
            .and_then(|_| dir.copy_in(&s.file, &partial, 0o644))
            .structured_msg(
                Subkind::Io,
                format!("Cannot copy the extension image to {}", partial.display()),
            )?;
        dir.rename(&partial, target).structured_msg(
            Subkind::Io,
            format!("Cannot place the extension image at {}", s.path),
        )?;
        tracing::info!(path = %s.path, kind = s.kind.tool(), "extension image placed");
    }
    Ok(())
}

/// Runtime update of the system at `host_root` from `old` (as placed) to
/// `new`: places the `staged` images, removes the ones `old` placed that
/// no image takes the place of now, refreshes each kind that changed.
/// Returns the kinds refreshed. Blocking.
pub fn onto_running(
    host_root: &Path,
    old: &Os,
    new: &Os,
    staged: &[Staged],
) -> Result<Vec<ExtensionKind>, TridentError> {
    into_root(host_root, staged)?;
    let kept: BTreeSet<&str> = staged.iter().map(|s| s.path.as_str()).collect();
    for kind in ExtensionKind::ALL {
        for gone in kind
            .list(old)
            .iter()
            .filter_map(|e| e.path.as_deref())
            .filter(|p| !kept.contains(p))
        {
            let root = RootDir::open(host_root).structured_msg(
                Subkind::ApplyRuntimeUpdate,
                format!("Cannot open {}", host_root.display()),
            )?;
            match root.remove_file(Path::new(gone)) {
                Ok(true) => {
                    tracing::info!(path = %gone, kind = kind.tool(), "extension image removed")
                }
                Ok(false) => {}
                Err(e) => {
                    return Err(TridentError::with_source(
                        Subkind::ApplyRuntimeUpdate,
                        format!("Cannot remove the extension image {gone}"),
                        e,
                    ));
                }
            }
        }
    }
    let mut refreshed = Vec::new();
    for kind in ExtensionKind::ALL
        .into_iter()
        .filter(|k| changed(*k, old, new))
    {
        refresh(kind, host_root)?;
        refreshed.push(kind);
    }
    Ok(refreshed)
}

/// Re-merges `kind`'s images on the system at `host_root`.
fn refresh(kind: ExtensionKind, host_root: &Path) -> Result<(), TridentError> {
    let root = format!("--root={}", host_root.display());
    let mut args = vec!["refresh"];
    if host_root != Path::new("/") {
        args.push(&root);
    }
    run_tool(kind.tool(), &args, Subkind::ApplyRuntimeUpdate)?;
    tracing::info!(tool = kind.tool(), root = %host_root.display(), "extensions merged again");
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn images_land_at_their_paths_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let staged_file = dir.path().join("abc.raw");
        std::fs::write(&staged_file, b"image bytes").unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let staged = [Staged {
            kind: ExtensionKind::Confext,
            index: 0,
            sha384: "a".repeat(96),
            file: staged_file,
            path: "/var/lib/confexts/motd.raw".into(),
        }];
        into_root(&root, &staged).unwrap();
        let placed = root.join("var/lib/confexts");
        assert_eq!(
            std::fs::read(placed.join("motd.raw")).unwrap(),
            b"image bytes"
        );
        let names: Vec<PathBuf> = std::fs::read_dir(&placed)
            .unwrap()
            .map(|e| e.unwrap().file_name().into())
            .collect();
        assert_eq!(names, [PathBuf::from("motd.raw")], "no partial file left");
    }

    /// Issue 37: an image placed in a root whose symlinks point out of it
    /// lands inside it.
    #[test]
    fn images_stay_inside_a_root_whose_links_point_out() {
        let path = "/var/lib/extensions/tools.raw";
        for root in crate::new_root::hostile_root::HostileRoot::variants(path) {
            let staged_dir = tempfile::tempdir().unwrap();
            let staged_file = staged_dir.path().join("abc.raw");
            std::fs::write(&staged_file, b"image bytes").unwrap();
            let staged = [Staged {
                kind: ExtensionKind::Sysext,
                index: 0,
                sha384: "a".repeat(96),
                file: staged_file,
                path: path.into(),
            }];
            into_root(&root.root, &staged).unwrap();
            root.assert_outside_untouched();
            // Renamed into place: a link at the file itself is replaced.
            assert_eq!(root.seen(path), "image bytes", "{}", root.variant);
        }
    }
}
