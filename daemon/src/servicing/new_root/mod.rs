//! The new root: after the images are written, the serviced volume's
//! filesystems are mounted under one directory, ext4 is grown to its
//! partition (before mounting), the configure steps run on it ([`CONFIGURE_STEPS`]: fstab,
//! and the OS configuration steps), then postProvision scripts run on this
//! host with `TARGET_ROOT` set to it and postConfigure scripts chrooted
//! into it (`chroot`), and everything is unmounted (guards unmount and
//! detach on every path, errors included).
//!
//! Mounting goes through loop devices over each partition's byte range of
//! its disk, so a disk-image file and a block device are handled alike.
//! Volumes that hold no filesystem we recognize (the pseudo-random test
//! fixtures) are not mounted; when the root is one of them the step is
//! skipped with a warning and scripts run without `TARGET_ROOT`.

pub mod chroot;
pub mod fstab;
pub mod partitions;
pub mod probe;
pub mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trident_host::config::{HostConfiguration, Script};
use trident_host::status::{AbVolume, PartitionLayout};
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};
use trident_telemetry::progress::{Phase, Unit};

use self::partitions::PartitionInfo;
use self::probe::FsKind;
use self::tools::{LoopDevice, MountGuard, run_tool};
use super::engine::layout::WriteTarget;
use super::engine::plan::{BOOT_FILES, CONFIGURE, StepPlan};
use super::engine::{Engine, blocking, script_phase};
use super::scripts::ScriptEnv;

/// One step that configures the mounted new root.
#[derive(Debug, Clone, Copy)]
pub struct ConfigureStep {
    /// Names the step in progress and errors.
    pub name: &'static str,
    pub run: fn(&NewRoot) -> Result<(), TridentError>,
}

/// Every configure step, in order. OS configuration steps go here.
pub const CONFIGURE_STEPS: &[ConfigureStep] = &[
    ConfigureStep {
        name: "fstab",
        run: fstab::write_fstab,
    },
    ConfigureStep {
        name: "os-config",
        run: super::os_config::configure_step,
    },
];

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
    /// The Host Configuration being applied.
    pub hc: HostConfiguration,
    /// The volume being serviced (A on install).
    pub volume: AbVolume,
    /// Every partition of the host, with its PARTUUID.
    pub partitions: BTreeMap<String, PartitionInfo>,
    /// Mounted filesystems, parents first.
    pub mounted: Vec<MountedFs>,
}

impl NewRoot {
    /// Mounts the written `targets` (mount point → partition) under
    /// `path`. `Ok(None)`: the root volume holds no known filesystem.
    pub fn mount(
        hc: &HostConfiguration,
        layout: &BTreeMap<String, PartitionLayout>,
        targets: &BTreeMap<String, WriteTarget>,
        volume: AbVolume,
        path: &Path,
    ) -> Result<Option<NewRoot>, TridentError> {
        let Some(root) = targets.get("/") else {
            tracing::warn!("no filesystem is mounted at '/': the new root is not mounted");
            return Ok(None);
        };
        if probe::probe(&root.layout.device, root.layout.offset).is_none() {
            tracing::warn!(
                partition = %root.partition_id,
                "the root volume holds no filesystem this daemon recognizes: not mounted, \
                 fstab and configure steps skipped"
            );
            return Ok(None);
        }
        let mut new_root = NewRoot {
            path: path.to_path_buf(),
            hc: hc.clone(),
            volume,
            partitions: partitions::read_partitions(layout)?,
            mounted: Vec::new(),
        };
        // Parents before children: "/" then "/boot" then "/boot/efi".
        let mut order: Vec<(&String, &WriteTarget)> = targets.iter().collect();
        order.sort_by_key(|(mp, _)| mp.trim_end_matches('/').matches('/').count());
        for (mount_point, target) in order {
            let Some(kind) = probe::probe(&target.layout.device, target.layout.offset) else {
                tracing::warn!(mount_point = %mount_point, partition = %target.partition_id,
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
        Ok(Some(new_root))
    }

    fn mount_one(
        &mut self,
        mount_point: &str,
        target: &WriteTarget,
        kind: FsKind,
    ) -> Result<(), TridentError> {
        let device = LoopDevice::attach(
            &target.layout.device,
            target.layout.offset,
            target.layout.size,
        )?;
        if kind == FsKind::Ext4 {
            grow_ext4(&device)
                .with_context(|| format!("Growing '{mount_point}' to its partition"))?;
        }
        let dir = self.path.join(mount_point.trim_start_matches('/'));
        let guard = MountGuard::mount(device, kind.as_str(), &dir)
            .with_context(|| format!("Mounting '{mount_point}' of the new root"))?;
        tracing::info!(mount_point, partition = %target.partition_id, fs = kind.as_str(),
            loop_device = %guard.device().path().display(), "mounted in the new root");
        self.mounted.push(MountedFs {
            mount_point: mount_point.to_owned(),
            partition_id: target.partition_id.clone(),
            kind,
            guard,
        });
        Ok(())
    }

    /// The partition a mount point of the Host Configuration lands on.
    pub fn partition_of(&self, mount_point: &str) -> Option<&PartitionInfo> {
        let fs = self
            .hc
            .storage
            .filesystems
            .iter()
            .find(|f| f.mount_point.path() == mount_point)?;
        self.partitions.get(&partitions::partition_for(
            &self.hc,
            &fs.device_id,
            self.volume,
        ))
    }

    /// Unmounts children first, then removes the mount directory.
    pub fn unmount(mut self) -> Result<(), TridentError> {
        let mut first_error = None;
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

    /// Runs [`CONFIGURE_STEPS`] as one progress phase.
    pub fn configure(&self) -> Result<(), TridentError> {
        let phase = Phase::start(
            CONFIGURE,
            "Configure the new root",
            Unit::Items,
            Some(CONFIGURE_STEPS.len() as u64),
        );
        for (done, step) in CONFIGURE_STEPS.iter().enumerate() {
            (step.run)(self).with_context(|| format!("Configure step '{}'", step.name))?;
            phase.set(done as u64 + 1);
        }
        phase.done();
        Ok(())
    }
}

impl Drop for NewRoot {
    fn drop(&mut self) {
        // Children first (a Vec drops front to back).
        while let Some(fs) = self.mounted.pop() {
            drop(fs);
        }
    }
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

/// What [`service_new_root`] needs besides the scripts' environment.
#[derive(Debug, Clone)]
pub struct NewRootRequest {
    pub hc: HostConfiguration,
    pub layout: BTreeMap<String, PartitionLayout>,
    pub targets: BTreeMap<String, WriteTarget>,
    pub volume: AbVolume,
    /// Where to mount (created, removed afterwards).
    pub path: PathBuf,
    /// A clean install (the ESP gets the bootloader too).
    pub install: bool,
}

/// Mount, grow, configure, postProvision and postConfigure scripts, the
/// volume's boot files (boot control), unmount: the whole new-root step of
/// install and A/B update.
/// Without a mounted new root, the configure and boot-files steps leave
/// `plan`.
pub async fn service_new_root(
    engine: Arc<Engine>,
    req: NewRootRequest,
    env: &ScriptEnv,
    plan: &mut StepPlan,
) -> Result<(), TridentError> {
    let scripts = req.hc.scripts.clone();
    let install = req.install;
    let phase = Phase::start("mount", "Mount the new root", Unit::Items, Some(1));
    let mounted = blocking(move || {
        let root = NewRoot::mount(&req.hc, &req.layout, &req.targets, req.volume, &req.path)?;
        if root.is_none() {
            super::os_config::refuse_without_new_root(&req.hc.os)?;
        }
        Ok(root)
    })
    .await?;
    phase.set(1);
    phase.done();
    // A step of its own (planned), after mount rather than inside it.
    let mounted = match mounted {
        Some(root) => Some(
            blocking(move || {
                root.configure()?;
                Ok(root)
            })
            .await?,
        ),
        None => {
            plan.skip(CONFIGURE);
            plan.skip(BOOT_FILES);
            None
        }
    };
    let mut env = env.clone();
    env.target_root = mounted.as_ref().map(|r| r.path.clone());
    let scripts_result = async {
        script_phase("postProvision", &scripts.post_provision, &env).await?;
        post_configure(&scripts.post_configure, &env).await
    }
    .await;
    let Some(root) = mounted else {
        return scripts_result;
    };
    blocking(move || {
        let prepared = match scripts_result {
            Ok(()) => boot_files(&engine, &root, install),
            Err(e) => Err(e),
        };
        let unmounted = root.unmount();
        prepared.and(unmounted)
    })
    .await
}

/// postConfigure as upstream runs it: chrooted into the mounted new root
/// (`TARGET_ROOT=/`), with `/dev`, `/proc` and `/sys` mounted inside for the
/// time of the scripts and unmounted whatever they did. Without a mounted
/// root (a volume holding no known filesystem) on this host, without
/// `TARGET_ROOT`.
async fn post_configure(scripts: &[Script], env: &ScriptEnv) -> Result<(), TridentError> {
    let Some(root) = env.target_root.clone() else {
        return script_phase("postConfigure", scripts, env).await;
    };
    if !scripts
        .iter()
        .any(|s| env.servicing_type.selected_by(&s.run_on))
    {
        return Ok(());
    }
    let special = blocking(move || chroot::SpecialMounts::mount(&root)).await?;
    let chrooted = ScriptEnv {
        chrooted: true,
        ..env.clone()
    };
    let ran = script_phase("postConfigure", scripts, &chrooted).await;
    let released = blocking(move || special.release()).await;
    ran.and(released)
}

/// The boot-control phase: the volume's boot files (and, on install, the
/// bootloader) from the mounted new root.
fn boot_files(engine: &Engine, root: &NewRoot, install: bool) -> Result<(), TridentError> {
    let phase = Phase::start(BOOT_FILES, "Write boot files", Unit::Items, Some(1));
    engine.boot.prepare_volume(root, install)?;
    phase.set(1);
    phase.done();
    Ok(())
}
