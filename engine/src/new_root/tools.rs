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
        Self::losetup(&[
            "--offset",
            &offset.to_string(),
            "--sizelimit",
            &size.to_string(),
            backing,
        ])
    }

    /// A read-only loop device over the whole of `file` (an image that is
    /// read, never written: its hash must not change).
    pub fn attach_read_only(file: &Path) -> Result<LoopDevice, TridentError> {
        Self::losetup(&["--read-only", &file.to_string_lossy()])
    }

    /// A read-only loop device over `size` bytes of `file` from `offset`
    /// (one partition of a disk image that is read, never written).
    pub fn attach_read_only_range(
        file: &Path,
        offset: u64,
        size: u64,
    ) -> Result<LoopDevice, TridentError> {
        Self::losetup(&[
            "--read-only",
            "--offset",
            &offset.to_string(),
            "--sizelimit",
            &size.to_string(),
            &file.to_string_lossy(),
        ])
    }

    fn losetup(args: &[&str]) -> Result<LoopDevice, TridentError> {
        let mut all = vec!["--find", "--show"];
        all.extend_from_slice(args);
        let path = run_tool("losetup", &all, Subkind::MountNewRoot)?;
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
        Self::mount_with(device, &["-t", fs_type], target)
    }

    /// Mounts read-only, the filesystem type detected by `mount`.
    pub fn mount_read_only(device: LoopDevice, target: &Path) -> Result<MountGuard, TridentError> {
        Self::mount_with(device, &["-o", "ro"], target)
    }

    /// Mounts a filesystem that must not change by a byte: read-only and,
    /// for ext4, without replaying its journal (`noload`).
    pub fn mount_unchanged(
        device: LoopDevice,
        fs_type: &str,
        target: &Path,
    ) -> Result<MountGuard, TridentError> {
        let options = if fs_type == "ext4" { "ro,noload" } else { "ro" };
        Self::mount_with(device, &["-t", fs_type, "-o", options], target)
    }

    fn mount_with(
        device: LoopDevice,
        options: &[&str],
        target: &Path,
    ) -> Result<MountGuard, TridentError> {
        std::fs::create_dir_all(target).structured_msg(
            Subkind::MountNewRoot,
            format!("Cannot create mount point {}", target.display()),
        )?;
        let (source, target_str) = (device.path_str(), target.to_string_lossy().into_owned());
        let mut args = options.to_vec();
        args.extend([source.as_str(), target_str.as_str()]);
        run_tool("mount", &args, Subkind::MountNewRoot)?;
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

/// A directory of the running system bind-mounted into the new root;
/// unmounted when dropped.
#[derive(Debug)]
pub struct BindGuard {
    mounted: Option<PathBuf>,
}

impl BindGuard {
    /// `mount --bind source target`: the running system's mount itself
    /// (one superblock), never a second mount of its device, which would
    /// corrupt a filesystem in use.
    pub fn bind(source: &Path, target: &Path) -> Result<BindGuard, TridentError> {
        let (source, target_str) = (
            source.to_string_lossy().into_owned(),
            target.to_string_lossy().into_owned(),
        );
        run_tool(
            "mount",
            &["--bind", &source, &target_str],
            Subkind::MountNewRoot,
        )?;
        Ok(BindGuard {
            mounted: Some(target.to_path_buf()),
        })
    }

    /// Unmounts now, reporting failure (Drop can only log it).
    pub fn unmount(mut self) -> Result<(), TridentError> {
        match self.mounted.take() {
            Some(target) => umount(&target),
            None => Ok(()),
        }
    }
}

impl Drop for BindGuard {
    fn drop(&mut self) {
        if let Some(target) = self.mounted.take() {
            umount_or_detach(&target);
        }
    }
}

/// Drop's unmount: a failure can only be logged, and the mount is
/// detached lazily instead.
fn umount_or_detach(target: &Path) {
    if let Err(e) = umount(target) {
        tracing::warn!(error = %e.report(), "unmount failed; detaching lazily");
        let _ = run_tool(
            "umount",
            &["--lazy", &target.to_string_lossy()],
            Subkind::MountNewRoot,
        );
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
        if let Some(target) = self.mounted.take() {
            umount_or_detach(&target);
        }
    }
}
