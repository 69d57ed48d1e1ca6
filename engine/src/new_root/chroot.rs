//! What a chroot into the new root needs, as upstream provides it for
//! `postConfigure` (microsoft/trident `osutils::chroot`): fresh `devtmpfs`,
//! `proc` and `sysfs` mounts at the new root's `/dev`, `/proc` and `/sys`
//! (a directory missing in the image is created for the time of the
//! chroot). [`SpecialMounts`] unmounts them, children of the new root,
//! before the new root itself: explicitly with [`SpecialMounts::release`]
//! (reporting failure), else when dropped (an error path).

use std::path::{Path, PathBuf};

use trident_host::{Subkind, TridentError};

use super::tools::run_tool;

/// (directory under the new root, filesystem type = source).
const SPECIAL_DIRS: [(&str, &str); 3] = [("dev", "devtmpfs"), ("proc", "proc"), ("sys", "sysfs")];

/// `/dev`, `/proc` and `/sys` mounted inside a new root.
#[derive(Debug)]
pub struct SpecialMounts {
    /// Mounted, in mount order.
    mounted: Vec<PathBuf>,
    /// Directories created for a mount (removed afterwards).
    created: Vec<PathBuf>,
}

impl SpecialMounts {
    /// Mounts the special filesystems under `root`; on failure, what was
    /// mounted is unmounted again.
    pub fn mount(root: &Path) -> Result<SpecialMounts, TridentError> {
        let mut mounts = SpecialMounts {
            mounted: Vec::new(),
            created: Vec::new(),
        };
        for (dir, fs) in SPECIAL_DIRS {
            let target = root.join(dir);
            if std::fs::symlink_metadata(&target).is_err() {
                std::fs::create_dir(&target).map_err(|e| {
                    TridentError::new(
                        Subkind::MountNewRoot,
                        format!("Cannot create /{dir} in the new root: {e}"),
                    )
                })?;
                mounts.created.push(target.clone());
            } else if !target.is_dir() || target.is_symlink() {
                // Mounting over a symlink would follow it out of the root.
                return Err(TridentError::new(
                    Subkind::MountNewRoot,
                    format!("/{dir} of the new root is not a directory: cannot chroot into it"),
                ));
            }
            let target_str = target.to_string_lossy().into_owned();
            run_tool("mount", &["-t", fs, fs, &target_str], Subkind::MountNewRoot)?;
            mounts.mounted.push(target);
        }
        tracing::info!(root = %root.display(), "/dev, /proc and /sys mounted in the new root");
        Ok(mounts)
    }

    /// Unmounts (last mounted first) and removes the directories it made.
    pub fn release(mut self) -> Result<(), TridentError> {
        self.undo()
    }

    fn undo(&mut self) -> Result<(), TridentError> {
        let mut first_error = None;
        while let Some(target) = self.mounted.pop() {
            let target_str = target.to_string_lossy().into_owned();
            if let Err(e) = run_tool("umount", &[&target_str], Subkind::MountNewRoot) {
                tracing::warn!(error = %e.report(), "unmount failed; detaching lazily");
                let _ = run_tool("umount", &["--lazy", &target_str], Subkind::MountNewRoot);
                first_error.get_or_insert(e);
            }
        }
        for dir in self.created.drain(..) {
            let _ = std::fs::remove_dir(dir);
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for SpecialMounts {
    fn drop(&mut self) {
        if let Err(e) = self.undo() {
            tracing::warn!(error = %e.report(), "special filesystems of the new root not unmounted");
        }
    }
}
