//! The external tools the new-root step drives (`losetup`, `mount`,
//! `umount`, `resize2fs`) and the guards that undo what they did.

use std::path::{Path, PathBuf};
use std::process::Command;

use trident_host::{ResultExt, Subkind, TridentError};

/// Runs `program args..`; its stdout on success, or an error naming the
/// command and its stderr.
pub fn run_tool(program: &str, args: &[&str], subkind: Subkind) -> Result<String, TridentError> {
    let output = Command::new(program)
        .args(args)
        .output()
        .structured_msg(subkind, format!("Cannot run '{program}'"))?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
    }
    Err(TridentError::new(
        subkind,
        format!(
            "'{program} {}' failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    ))
}

/// A loop device over one partition's byte range of a disk (a disk-image
/// file or a block device): the same path works for both, and no
/// partition-table reread is needed. Detached when dropped.
#[derive(Debug)]
pub struct LoopDevice {
    path: PathBuf,
}

impl LoopDevice {
    pub fn attach(backing: &str, offset: u64, size: u64) -> Result<LoopDevice, TridentError> {
        let path = run_tool(
            "losetup",
            &[
                "--find",
                "--show",
                "--offset",
                &offset.to_string(),
                "--sizelimit",
                &size.to_string(),
                backing,
            ],
            Subkind::MountNewRoot,
        )?;
        Ok(LoopDevice {
            path: PathBuf::from(path),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn path_str(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        if let Err(e) = run_tool("losetup", &["-d", &self.path_str()], Subkind::MountNewRoot) {
            tracing::warn!(error = %e.report(), "loop device not detached");
        }
    }
}

/// A mounted filesystem; unmounted when dropped. Keeps its loop device
/// alive until after the unmount (field order: `mounted` drops first).
#[derive(Debug)]
pub struct MountGuard {
    mounted: Option<PathBuf>,
    device: LoopDevice,
}

impl MountGuard {
    pub fn mount(
        device: LoopDevice,
        fs_type: &str,
        target: &Path,
    ) -> Result<MountGuard, TridentError> {
        std::fs::create_dir_all(target).structured_msg(
            Subkind::MountNewRoot,
            format!("Cannot create mount point {}", target.display()),
        )?;
        let target_str = target.to_string_lossy().into_owned();
        run_tool(
            "mount",
            &["-t", fs_type, &device.path_str(), &target_str],
            Subkind::MountNewRoot,
        )?;
        Ok(MountGuard {
            mounted: Some(target.to_path_buf()),
            device,
        })
    }

    pub fn device(&self) -> &LoopDevice {
        &self.device
    }

    /// Unmounts now, reporting failure (Drop can only log it).
    pub fn unmount(mut self) -> Result<(), TridentError> {
        match self.mounted.take() {
            Some(target) => umount(&target),
            None => Ok(()),
        }
    }
}

fn umount(target: &Path) -> Result<(), TridentError> {
    run_tool(
        "umount",
        &[&target.to_string_lossy()],
        Subkind::MountNewRoot,
    )
    .map(|_| ())
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        if let Some(target) = self.mounted.take()
            && let Err(e) = umount(&target)
        {
            tracing::warn!(error = %e.report(), "unmount failed; detaching lazily");
            let _ = run_tool(
                "umount",
                &["--lazy", &target.to_string_lossy()],
                Subkind::MountNewRoot,
            );
        }
    }
}
