//! Writing files on the ESP. When the ESP is mounted on this system (a
//! running host: `/boot/efi`), through that mount: writing the same vfat
//! through a second path would corrupt it. Otherwise (an installer writing
//! another disk, a disk-image file) with mtools on `DEVICE@@OFFSET`, which
//! needs no mount (and no vfat in the kernel); without mtools (a minimal
//! installer) it is loop-mounted for the time of the change.

use std::path::{Path, PathBuf};
use std::process::Command;

use trident_host::{ResultExt, Subkind, TridentError};

use super::booted::mount_point_of;
use crate::block_device::ResolvedDevice;
use crate::new_root::tools::{LoopDevice, MountGuard};

/// The ESP, by one of three routes.
#[derive(Debug)]
pub enum Esp {
    /// Mounted at this directory.
    Mounted(PathBuf),
    /// Not mounted: mtools image spec `DEVICE@@OFFSET`.
    Unmounted(String),
    /// Mounted by us at `dir` until dropped (no mtools here).
    LoopMounted {
        dir: PathBuf,
        guard: Option<MountGuard>,
    },
}

impl Esp {
    /// Finds how to reach the ESP, the resolved `device`.
    pub fn open(device: &ResolvedDevice) -> Result<Esp, TridentError> {
        if let Some(dir) = mounted_at(device) {
            tracing::info!(esp = %dir.display(), "ESP is mounted: writing through the mount");
            return Ok(Esp::Mounted(dir));
        }
        let extent = device.extent();
        if on_path("mcopy") {
            return Ok(Esp::Unmounted(format!(
                "{}@@{}",
                extent.backing, extent.offset
            )));
        }
        // No mtools (a minimal installer): mount it for the time of the change.
        let dir = std::env::temp_dir().join(format!("trident-esp-{}", uuid::Uuid::new_v4()));
        let device = LoopDevice::attach(extent.backing, extent.offset, extent.size)?;
        let guard = MountGuard::mount(device, "vfat", &dir)?;
        Ok(Esp::LoopMounted {
            dir,
            guard: Some(guard),
        })
    }

    /// A vfat filesystem image file (the image's ESP copied out of a COSI),
    /// read with mtools, else loop-mounted.
    pub fn open_file(image: &Path) -> Result<Esp, TridentError> {
        let size = std::fs::metadata(image)
            .structured_msg(
                Subkind::BootControl,
                format!("Cannot open {}", image.display()),
            )?
            .len();
        let path = image.to_string_lossy();
        if on_path("mcopy") {
            return Ok(Esp::Unmounted(format!("{path}@@0")));
        }
        let dir = std::env::temp_dir().join(format!("trident-esp-{}", uuid::Uuid::new_v4()));
        let device = LoopDevice::attach(&path, 0, size)?;
        let guard = MountGuard::mount(device, "vfat", &dir)?;
        Ok(Esp::LoopMounted {
            dir,
            guard: Some(guard),
        })
    }

    /// Removes `path` (absent: nothing to do).
    pub fn remove(&self, path: &str) -> Result<(), TridentError> {
        match self {
            Esp::Mounted(dir) | Esp::LoopMounted { dir, .. } => {
                match std::fs::remove_file(dir.join(path)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e)
                        .structured_msg(Subkind::BootControl, format!("Cannot remove ESP {path}")),
                    _ => Ok(()),
                }
            }
            Esp::Unmounted(image) => {
                let spec = format!("::/{path}");
                if mtool("mdir", &["-b", "-i", image, &spec]).is_ok() {
                    mtool("mdel", &["-i", image, &spec])?;
                }
                Ok(())
            }
        }
    }

    /// Writes `bytes` to `path` (relative to the ESP root), creating
    /// directories; replaces the file.
    pub fn write(&self, path: &str, bytes: &[u8]) -> Result<(), TridentError> {
        match self {
            Esp::Mounted(dir) | Esp::LoopMounted { dir, .. } => {
                let target = dir.join(path);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).structured(Subkind::BootControl)?;
                }
                let tmp = target.with_extension("trident-tmp");
                std::fs::write(&tmp, bytes)
                    .structured_msg(Subkind::BootControl, format!("Cannot write ESP {path}"))?;
                std::fs::rename(&tmp, &target)
                    .structured_msg(Subkind::BootControl, format!("Cannot write ESP {path}"))
            }
            Esp::Unmounted(_) => {
                let tmp =
                    std::env::temp_dir().join(format!("trident-esp-{}", uuid::Uuid::new_v4()));
                std::fs::write(&tmp, bytes).structured(Subkind::BootControl)?;
                let copied = self.copy_in(&tmp, path);
                let _ = std::fs::remove_file(&tmp);
                copied
            }
        }
    }

    /// Copies the host file `source` to `path` on the ESP.
    pub fn copy_in(&self, source: &Path, path: &str) -> Result<(), TridentError> {
        match self {
            Esp::Mounted(dir) | Esp::LoopMounted { dir, .. } => {
                let target = dir.join(path);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).structured(Subkind::BootControl)?;
                }
                std::fs::copy(source, &target).structured_msg(
                    Subkind::BootControl,
                    format!("Cannot copy {} to ESP {path}", source.display()),
                )?;
                Ok(())
            }
            Esp::Unmounted(image) => {
                self.make_parents(path)?;
                mtool(
                    "mcopy",
                    &[
                        "-o",
                        "-i",
                        image,
                        &source.to_string_lossy(),
                        &format!("::/{path}"),
                    ],
                )
                .map(|_| ())
            }
        }
    }

    /// Reads `path` from the ESP (`None`: absent).
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, TridentError> {
        match self {
            Esp::Mounted(dir) | Esp::LoopMounted { dir, .. } => match std::fs::read(dir.join(path))
            {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e).structured(Subkind::BootControl),
            },
            Esp::Unmounted(image) => Ok(mtool("mtype", &["-i", image, &format!("::/{path}")]).ok()),
        }
    }

    fn make_parents(&self, path: &str) -> Result<(), TridentError> {
        let Esp::Unmounted(image) = self else {
            return Ok(());
        };
        let mut dir = String::new();
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            dir.push('/');
            dir.push_str(part);
            let spec = format!("::{dir}");
            // mmd fails on an existing directory (whatever -D says).
            if mtool("mdir", &["-b", "-i", image, &spec]).is_err() {
                mtool("mmd", &["-i", image, &spec])?;
            }
        }
        Ok(())
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

impl Drop for Esp {
    fn drop(&mut self) {
        if let Esp::LoopMounted { dir, guard } = self {
            if let Some(Err(e)) = guard.take().map(MountGuard::unmount) {
                tracing::warn!(error = %e.report(), "ESP not unmounted");
                return;
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
}

fn mtool(program: &str, args: &[&str]) -> Result<Vec<u8>, TridentError> {
    let output = Command::new(program)
        .args(args)
        .env("MTOOLS_SKIP_CHECK", "1")
        .output()
        .structured_msg(
            Subkind::BootControl,
            format!("Cannot run '{program}' (mtools)"),
        )?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    Err(TridentError::new(
        Subkind::BootControl,
        format!(
            "'{program} {}' failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ),
    ))
}

/// Where `device` is mounted on this system, if it is a partition of a
/// block device, or a RAID array, that is mounted.
fn mounted_at(device: &ResolvedDevice) -> Option<PathBuf> {
    let layout = match device {
        ResolvedDevice::Partition { layout, .. } => layout,
        // The ESP is never encrypted (the storage graph's rule).
        ResolvedDevice::EncryptedVolume { .. } => return None,
        ResolvedDevice::RaidArray { path, .. } => {
            let md = std::fs::canonicalize(path).ok()?;
            let dev = std::fs::read_to_string(
                Path::new("/sys/class/block")
                    .join(md.file_name()?)
                    .join("dev"),
            )
            .ok()?;
            let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
            return mount_point_of(&mountinfo, dev.trim());
        }
    };
    let disk = std::fs::canonicalize(&layout.device).ok()?;
    let disk_name = disk.file_name()?.to_owned();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    for entry in std::fs::read_dir("/sys/class/block").ok()?.flatten() {
        let real = std::fs::canonicalize(entry.path()).ok()?;
        let number = std::fs::read_to_string(real.join("partition")).ok();
        let same_disk = real.parent().and_then(Path::file_name) == Some(disk_name.as_os_str());
        if same_disk && number.as_deref().map(str::trim) == Some(&layout.number.to_string()) {
            let dev = std::fs::read_to_string(real.join("dev")).ok()?;
            return mount_point_of(&mountinfo, dev.trim());
        }
    }
    None
}
