//! The new root: after the images are written, the serviced volume's
//! filesystems are mounted under one directory ([`NewRoot`]), ext4 grown
//! to its partition (before mounting), and everything is unmounted again
//! (guards unmount and detach on every path, errors included). What runs
//! on it in between (configure steps, scripts, boot files) is the engine's
//! new-root step (`flows::new_root_step`); configure steps and boot
//! control see it through [`volume::VolumeRoot`]. Its tools: fstab,
//! mdadm.conf,
//! chroot mounts for postConfigure, loop devices and mounts, partition
//! identities.
//!
//! Mounting goes through loop devices over each device's byte range, as
//! the block-device stack resolves it (a partition: its range of its
//! disk), so a disk-image file and a block device are handled alike.
//! Volumes that hold no filesystem we recognize (the pseudo-random test
//! fixtures) are not mounted; when the root is one of them the step is
//! skipped with a warning and scripts run without `TARGET_ROOT`.
//!
//! A filesystem on a verity device is mounted read-only and never grown
//! (its bytes are what the root hash covers); a verity root gets the
//! writable `/etc` overlay ([`etc_overlay`]) on top.

pub mod chroot;
pub mod crypttab;
pub mod etc_overlay;
pub mod fstab;
#[cfg(test)]
pub(crate) mod hostile_root;
pub mod mdadm_conf;
pub mod partitions;
pub mod probe;
#[cfg(test)]
mod raid_tests;
pub mod root_dir;
#[cfg(test)]
mod root_dir_tests;
#[cfg(test)]
mod shared_tests;
pub mod stale;
pub mod tools;
pub mod volume;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use trident_host::config::HostConfiguration;
use trident_host::config::verity_rules::ETC_OVERLAY_MOUNT_POINT;
use trident_host::status::AbVolume;
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};

use self::etc_overlay::EtcOverlay;
use self::partitions::PartitionInfo;
use self::probe::FsKind;
use self::root_dir::RootDir;
use self::tools::{BindGuard, LoopDevice, MountGuard, run_tool};
use self::volume::VolumeRoot;
use super::block_device::{BlockDevices, ResolvedDevice};

/// A filesystem an A/B update leaves alone, which the new root binds from
/// the running system ([`NewRoot::bind_shared`]).
#[derive(Debug, Clone)]
pub struct SharedFs {
    pub mount_point: String,
    /// Its device in the Host Configuration.
    pub device_id: String,
    /// Where the running system has it mounted.
    pub source: PathBuf,
}

/// A filesystem of the new root, mounted.
#[derive(Debug)]
pub struct MountedFs {
    pub mount_point: String,
    pub partition_id: String,
    pub kind: FsKind,
    guard: MountGuard,
}

/// The serviced volume's filesystems, mounted under `path`.
#[derive(Debug)]
pub struct NewRoot {
    /// Directory the new root is mounted at (`TARGET_ROOT`).
    pub path: PathBuf,
    /// The mounted root filesystem as a directory handle: every path of
    /// the new root (mount points included) is resolved through it. Open
    /// until unmounting (an open descriptor keeps the filesystem busy).
    dir: Option<RootDir>,
    /// The Host Configuration being applied.
    pub hc: HostConfiguration,
    /// The volume being serviced (A on install).
    pub volume: AbVolume,
    /// The host's block devices.
    pub devices: BlockDevices,
    /// Every partition of the host, with its PARTUUID.
    pub partitions: BTreeMap<String, PartitionInfo>,
    /// Mounted filesystems, parents first.
    pub mounted: Vec<MountedFs>,
    /// The writable `/etc` over a verity root (unmounted first).
    etc_overlay: Option<EtcOverlay>,
    /// The running system's shared filesystems bound in (unmounted first).
    shared: Vec<BindGuard>,
}

impl NewRoot {
    /// Mounts the written `targets` (mount point → device) under `path`.
    /// `Ok(None)`: the root volume holds no known filesystem.
    pub fn mount(
        hc: &HostConfiguration,
        devices: &BlockDevices,
        targets: &BTreeMap<String, ResolvedDevice>,
        volume: AbVolume,
        path: &Path,
    ) -> Result<Option<NewRoot>, TridentError> {
        let Some(root) = targets.get("/") else {
            tracing::warn!("no filesystem is mounted at '/': the new root is not mounted");
            return Ok(None);
        };
        let Some(root_kind) = probe::probe_device(root) else {
            tracing::warn!(
                partition = %root.id(),
                "the root volume holds no filesystem this daemon recognizes: not mounted, \
                 fstab and configure steps skipped"
            );
            return Ok(None);
        };
        // Parents before children: "/" then "/boot" then "/boot/efi".
        let mut order: Vec<(&String, &ResolvedDevice)> = targets.iter().collect();
        order.sort_by_key(|(mp, _)| mp.trim_end_matches('/').matches('/').count());
        // The root at the new root's directory itself (on the host, in the
        // private state directory); every other mount point is a
        // directory of the root filesystem, resolved inside it.
        let root_fs = mount_fs(hc, "/", root, root_kind, path)?;
        let dir = RootDir::open(path)
            .structured_msg(Subkind::MountNewRoot, "Cannot open the mounted new root")?;
        let mut new_root = NewRoot {
            path: path.to_path_buf(),
            dir: Some(dir),
            hc: hc.clone(),
            volume,
            devices: devices.clone(),
            partitions: partitions::read_partitions(devices.partitions())?,
            mounted: vec![root_fs],
            etc_overlay: None,
            shared: Vec::new(),
        };
        for (mount_point, target) in order.into_iter().filter(|(mp, _)| mp.as_str() != "/") {
            let Some(kind) = probe::probe_device(target) else {
                tracing::warn!(mount_point = %mount_point, partition = %target.id(),
                    "no known filesystem: not mounted in the new root");
                continue;
            };
            match new_root.mount_one(mount_point, target, kind) {
                // The ESP's content is the boot backend's, which writes it
                // without mounting; a kernel without vfat (containers)
                // still gets a configured root.
                Err(e) if kind == FsKind::Vfat => {
                    tracing::warn!(mount_point = %mount_point, error = %e.report(),
                        "vfat not mountable here: not mounted in the new root");
                }
                other => other?,
            }
        }
        // The overlay's directories are on its own filesystem: a partial
        // mount without it (the datastore handoff mounts `/` and
        // `/var/lib/trident` only) writes nothing to /etc and gets none.
        let overlay_mounted = new_root
            .mounted
            .iter()
            .any(|m| m.mount_point == ETC_OVERLAY_MOUNT_POINT);
        if on_verity(hc, "/") && overlay_mounted {
            new_root.etc_overlay = Some(EtcOverlay::mount(new_root.dir())?);
        }
        Ok(Some(new_root))
    }

    /// Mounts `target` at `mount_point`, a directory of the mounted root
    /// resolved inside it (a symlink on the way is followed there, as the
    /// installed OS would, never out to the host).
    fn mount_one(
        &mut self,
        mount_point: &str,
        target: &ResolvedDevice,
        kind: FsKind,
    ) -> Result<(), TridentError> {
        let dir = self.dir().host_dir(Path::new(mount_point)).structured_msg(
            Subkind::MountNewRoot,
            format!("Cannot make the mount point '{mount_point}' in the new root"),
        )?;
        let mounted = mount_fs(&self.hc, mount_point, target, kind, &dir)?;
        self.mounted.push(mounted);
        Ok(())
    }

    /// The mounted root as a directory handle.
    pub fn dir(&self) -> &RootDir {
        self.dir.as_ref().expect("open from mount to unmount")
    }

    /// What configure steps and boot control see of it.
    pub fn view(&self) -> VolumeRoot<'_> {
        VolumeRoot {
            path: &self.path,
            dir: self.dir(),
            hc: &self.hc,
            volume: self.volume,
            devices: &self.devices,
            partitions: &self.partitions,
        }
    }

    /// An A/B update: binds each of `shared`, the filesystems the update
    /// leaves alone, from where the running system has them mounted into
    /// the new root, as upstream mounts every
    /// filesystem of the configuration there: configuring the new OS (a
    /// user's home on a shared `/home`, files, scripts) reaches them as it
    /// will boot, instead of the directory under their mount point (on a
    /// read-only verity root, not writable at all). Bound, never mounted
    /// again from their device (a second mount of a filesystem in use
    /// corrupts it). Skipped with a warning: one the running system does
    /// not have mounted from its device (a host serviced from elsewhere, a
    /// disk-image target), and one a written filesystem is mounted under
    /// (binding it would hide that one).
    pub fn bind_shared(&mut self, shared: &[SharedFs]) -> Result<(), TridentError> {
        for fs in shared {
            let (mount_point, source) = (&fs.mount_point, &fs.source);
            let hides_target = self.mounted.iter().any(|m| {
                mount_point != "/"
                    && m.mount_point
                        .starts_with(&format!("{}/", mount_point.trim_end_matches('/')))
            });
            let node = self.device_node(&fs.device_id);
            let mounted_there = node.as_deref().is_some_and(|n| mounts_device(source, n));
            if hides_target || !mounted_there {
                tracing::warn!(mount_point = %mount_point, source = %source.display(),
                    device = ?node, hides_target,
                    "shared filesystem not bound into the new root");
                continue;
            }
            let dir = match self.dir().host_dir(Path::new(mount_point)) {
                Ok(dir) => dir,
                Err(e) => {
                    tracing::warn!(mount_point = %mount_point, error = %e,
                        "no directory for the shared filesystem in the new root: not bound");
                    continue;
                }
            };
            let bind = BindGuard::bind(source, &dir)
                .with_context(|| format!("Binding the shared '{mount_point}' into the new root"))?;
            tracing::info!(mount_point = %mount_point, source = %source.display(),
                "shared filesystem bound into the new root");
            self.shared.push(bind);
        }
        Ok(())
    }

    /// The block device node of `device_id` on this host (its volume's).
    fn device_node(&self, device_id: &str) -> Option<PathBuf> {
        match self.devices.device_of(device_id, self.volume).ok()? {
            ResolvedDevice::Partition { id, .. } => self
                .partitions
                .get(&id)
                .map(|p| PathBuf::from(format!("/dev/disk/by-partuuid/{}", p.part_uuid))),
            ResolvedDevice::RaidArray { path, .. }
            | ResolvedDevice::EncryptedVolume { path, .. } => Some(PathBuf::from(path)),
        }
    }

    /// Unmounts children first, then removes the mount directory.
    pub fn unmount(mut self) -> Result<(), TridentError> {
        self.dir = None;
        let mut first_error = None;
        while let Some(bind) = self.shared.pop() {
            if let Err(e) = bind.unmount() {
                first_error.get_or_insert(e);
            }
        }
        if let Some(overlay) = self.etc_overlay.take()
            && let Err(e) = overlay.unmount()
        {
            first_error = Some(e);
        }
        while let Some(fs) = self.mounted.pop() {
            if let Err(e) = fs.guard.unmount() {
                first_error.get_or_insert(e);
            }
        }
        if first_error.is_none() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for NewRoot {
    fn drop(&mut self) {
        self.dir = None;
        // The shared filesystems and the overlay on top first, then
        // children first (a Vec drops front to back).
        while let Some(bind) = self.shared.pop() {
            drop(bind);
        }
        drop(self.etc_overlay.take());
        while let Some(fs) = self.mounted.pop() {
            drop(fs);
        }
    }
}

/// Mounts `target` (a filesystem of `kind`) at the host directory `dir`:
/// a verity filesystem read-only and unchanged, others grown (ext4) and
/// writable.
fn mount_fs(
    hc: &HostConfiguration,
    mount_point: &str,
    target: &ResolvedDevice,
    kind: FsKind,
    dir: &Path,
) -> Result<MountedFs, TridentError> {
    let extent = target.extent();
    let guard = if on_verity(hc, mount_point) {
        // Read-only all the way down: its bytes are what the root hash covers.
        let device = LoopDevice::attach_read_only_range(
            Path::new(extent.backing),
            extent.offset,
            extent.size,
        )?;
        MountGuard::mount_unchanged(device, kind.as_str(), dir)
    } else {
        let device = LoopDevice::attach(extent.backing, extent.offset, extent.size)?;
        if kind == FsKind::Ext4 {
            grow_ext4(&device)
                .with_context(|| format!("Growing '{mount_point}' to its partition"))?;
        }
        MountGuard::mount(device, kind.as_str(), dir)
    }
    .with_context(|| format!("Mounting '{mount_point}' of the new root"))?;
    tracing::info!(mount_point, partition = %target.id(), fs = kind.as_str(),
        loop_device = %guard.device().path().display(), "mounted in the new root");
    Ok(MountedFs {
        mount_point: mount_point.to_owned(),
        partition_id: target.id().to_owned(),
        kind,
        guard,
    })
}

/// Whether the filesystem at `dir` is the one on block device `node`.
fn mounts_device(dir: &Path, node: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    match (std::fs::metadata(dir), std::fs::metadata(node)) {
        (Ok(dir), Ok(node)) => node.file_type().is_block_device() && node.rdev() == dir.dev(),
        _ => false,
    }
}

/// Whether the filesystem mounted at `mount_point` is on a verity device.
fn on_verity(hc: &HostConfiguration, mount_point: &str) -> bool {
    hc.storage
        .filesystems
        .iter()
        .find(|f| f.mount_point.path() == mount_point)
        .is_some_and(|f| hc.storage.verity.iter().any(|v| v.id == f.device_id))
}

/// Grows an unmounted ext4 filesystem to its (loop) device: offline, as
/// online resizing needs privileges containers lack. `e2fsck -f` first, as
/// resize2fs demands; exit 1 ("errors corrected") is fine.
fn grow_ext4(device: &LoopDevice) -> Result<(), TridentError> {
    let path = device.path_str();
    let status = std::process::Command::new("e2fsck")
        .args(["-f", "-p", &path])
        .stdout(std::process::Stdio::null())
        .status()
        .structured_msg(Subkind::MountNewRoot, "Cannot run 'e2fsck'")?;
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(TridentError::new(
            Subkind::MountNewRoot,
            format!("'e2fsck -f -p {path}' found errors it cannot fix ({status})"),
        ));
    }
    run_tool("resize2fs", &[&path], Subkind::MountNewRoot)?;
    tracing::info!(device = %path, "ext4 grown to its partition");
    Ok(())
}
