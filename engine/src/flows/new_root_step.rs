//! The new-root step of install and A/B update: mount the written volume
//! (`new_root::NewRoot`), run the configure steps on it ([`CONFIGURE_STEPS`]:
//! fstab, mdadm.conf, crypttab, then the OS configuration) and place the
//! extension images, postProvision scripts on this host
//! with `TARGET_ROOT` set to it, postConfigure scripts chrooted into it,
//! the volume's boot files (the boot control, as a trait object), unmount.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use trident_host::config::{HostConfiguration, Script};
use trident_host::status::AbVolume;
use trident_host::{ContextExt, TridentError};
use trident_telemetry::progress::{Phase, Unit};

use crate::block_device::{BlockDevices, ResolvedDevice};
use crate::boot_control::BootControl;
use crate::boot_control::image_boot::ImageBoot;
use crate::extensions::{Staged, place};
use crate::machinery::Engine;
use crate::machinery::plan::StepPlan;
use crate::machinery::step::{blocking, script_phase};
use crate::new_root::volume::VolumeRoot;
use crate::new_root::{NewRoot, SharedFs, chroot, crypttab, fstab, mdadm_conf};
use crate::os_config;
use crate::scripts::ScriptEnv;
use crate::step_ids::{BOOT_FILES, CONFIGURE};

/// One step that configures the mounted new root.
#[derive(Debug, Clone, Copy)]
pub struct ConfigureStep {
    /// Names the step in progress and errors.
    pub name: &'static str,
    pub run: fn(&VolumeRoot<'_>) -> Result<(), TridentError>,
}

/// Every configure step, in order. OS configuration steps go here.
pub const CONFIGURE_STEPS: &[ConfigureStep] = &[
    ConfigureStep {
        name: "fstab",
        run: fstab::write_fstab,
    },
    ConfigureStep {
        name: "mdadm.conf",
        run: mdadm_conf::write_mdadm_conf,
    },
    ConfigureStep {
        name: "crypttab",
        run: crypttab::write_crypttab,
    },
    ConfigureStep {
        name: "os-config",
        run: os_config::configure_step,
    },
];

/// Runs [`CONFIGURE_STEPS`] on `root` as one progress phase.
fn configure(root: &VolumeRoot<'_>) -> Result<(), TridentError> {
    let phase = Phase::start(
        CONFIGURE,
        "Configure the new root",
        Unit::Items,
        Some(CONFIGURE_STEPS.len() as u64),
    );
    for (done, step) in CONFIGURE_STEPS.iter().enumerate() {
        (step.run)(root).with_context(|| format!("Configure step '{}'", step.name))?;
        phase.set(done as u64 + 1);
    }
    phase.done();
    Ok(())
}

/// What [`service_new_root`] needs besides the scripts' environment.
#[derive(Debug, Clone)]
pub struct NewRootRequest {
    pub hc: HostConfiguration,
    /// The host's block devices.
    pub devices: BlockDevices,
    /// Mount point → the device written for it.
    pub targets: BTreeMap<String, ResolvedDevice>,
    pub volume: AbVolume,
    /// An A/B update: the filesystems it leaves alone, each a mount point
    /// and the running system's directory bound there
    /// (`NewRoot::bind_shared`); none at install.
    pub shared: Vec<SharedFs>,
    /// Where to mount (created, removed afterwards).
    pub path: PathBuf,
    /// A clean install (the ESP gets the bootloader too).
    pub install: bool,
    /// Extension images to place in the new root (checked already).
    pub extensions: Vec<Staged>,
    /// How the written image boots (boot control), its ESP copy removed
    /// when the step ends.
    pub image: ImageBoot,
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
    let esp_copy = req.image.esp_copy.clone();
    let result = new_root_steps(engine, req, env, plan).await;
    if let Some(copy) = esp_copy {
        let _ = std::fs::remove_file(copy);
    }
    result
}

async fn new_root_steps(
    engine: Arc<Engine>,
    req: NewRootRequest,
    env: &ScriptEnv,
    plan: &mut StepPlan,
) -> Result<(), TridentError> {
    let scripts = req.hc.scripts.clone();
    let install = req.install;
    let extensions = req.extensions.clone();
    let image = req.image.clone();
    let phase = Phase::start("mount", "Mount the new root", Unit::Items, Some(1));
    let mounted = blocking(move || {
        let mut root = NewRoot::mount(&req.hc, &req.devices, &req.targets, req.volume, &req.path)?;
        if let Some(root) = root.as_mut() {
            root.bind_shared(&req.shared)?;
        }
        if root.is_none() {
            os_config::refuse_without_new_root(&req.hc.os)?;
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
                configure(&root.view())?;
                place::into_root(&root.path, &extensions)?;
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
            Ok(()) => boot_files(engine.boot.as_ref(), &root.view(), install, &image),
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
/// bootloader) from the mounted new root; its count is the files written
/// (each named in the backend's "boot files written" record).
fn boot_files(
    boot: &dyn BootControl,
    root: &VolumeRoot<'_>,
    install: bool,
    image: &ImageBoot,
) -> Result<(), TridentError> {
    let phase = Phase::start(
        BOOT_FILES,
        format!("Write boot files ({})", image.kind.name()),
        Unit::Items,
        None,
    );
    let written = boot.prepare_volume(root, install, image)?;
    phase.set(written.len() as u64);
    phase.done();
    Ok(())
}
