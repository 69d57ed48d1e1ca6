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

use super::kind::{ExtensionKind, Staged, changed, under};
use crate::new_root::tools::run_tool;

/// Copies every staged image to its path under `root`. Blocking.
pub fn into_root(root: &Path, staged: &[Staged]) -> Result<(), TridentError> {
    for s in staged {
        let target = under(root, &s.path);
        if target == s.file {
            continue;
        }
        let dir = target.parent().unwrap_or(root);
        std::fs::create_dir_all(dir)
            .structured_msg(Subkind::Io, format!("Cannot create {}", dir.display()))?;
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let partial = dir.join(format!(".{name}.trident-partial"));
        std::fs::copy(&s.file, &partial).structured_msg(
            Subkind::Io,
            format!("Cannot copy the extension image to {}", partial.display()),
        )?;
        std::fs::rename(&partial, &target).structured_msg(
            Subkind::Io,
            format!("Cannot place the extension image at {}", target.display()),
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
            match std::fs::remove_file(under(host_root, gone)) {
                Ok(()) => {
                    tracing::info!(path = %gone, kind = kind.tool(), "extension image removed")
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
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
}
