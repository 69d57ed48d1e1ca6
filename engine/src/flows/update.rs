//! Update: what the new configuration needs ([`classify`]), then an A/B
//! update, stage (new image into the inactive volume of each pair; the
//! active volume is never opened for writing) and finalize (next boot =
//! inactive volume, reboot), or a runtime update (`runtime_update`).

use trident_host::config::{HostConfiguration, MountPoint, MountPointSpec};
use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{ResultExt, Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};

use super::finalize::{Switch, finalize};
use super::new_root_step::{NewRootRequest, service_new_root};
use super::runtime_update;
use crate::block_device::{self, BlockDevices, Targets};
use crate::extensions::{self, ExtensionKind};
use crate::image::{preflight, verity_blocks, write};
use crate::machinery::plan::{Halves, StepPlan};
use crate::machinery::runner::{StepContext, StepOutcome, StepResult};
use crate::machinery::step::{
    blocking, next_status, script_phase, stage_extensions, validate_phase,
};
use crate::new_root::SharedFs;
use crate::new_storage;
use crate::scripts::{ScriptEnv, ServicingType};

/// What a new configuration asks of a provisioned host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing to do: the same configuration (extension paths recorded
    /// where the images were placed count as the same).
    None,
    /// Same image, and only what a runtime update applies changed: the
    /// extension images, netplan, scripts, health checks.
    Runtime,
    /// Another image, or the same image with other OS settings (as
    /// upstream: those are applied in the other volume).
    AbUpdate,
}

fn json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, TridentError> {
    serde_json::to_value(value).structured(Subkind::SerializeHostStatus)
}

/// `hc` without what a runtime update applies.
fn without_runtime_keys(hc: &HostConfiguration) -> Result<serde_json::Value, TridentError> {
    let mut rest = hc.clone();
    rest.os.sysexts.clear();
    rest.os.confexts.clear();
    rest.os.netplan = None;
    rest.scripts = Default::default();
    rest.health = Default::default();
    // Only a clean install applies it (to the OS running the install).
    rest.management_os = Default::default();
    let mut value = json(&rest)?;
    value["storage"] = storage_value(hc)?;
    Ok(value)
}

/// Compares `new` with the provisioned configuration.
pub fn classify(
    current: &HostConfiguration,
    new: &HostConfiguration,
) -> Result<Change, TridentError> {
    let same_image = match (&current.image, &new.image) {
        (Some(a), Some(b)) => a == b && a.sha384 != trident_host::config::HASH_IGNORED,
        _ => false,
    };
    if !same_image || without_runtime_keys(current)? != without_runtime_keys(new)? {
        return Ok(Change::AbUpdate);
    }
    let runtime = ExtensionKind::ALL
        .iter()
        .any(|kind| extensions::changed(*kind, &current.os, &new.os))
        || current.os.netplan != new.os.netplan
        || json(&current.scripts)? != json(&new.scripts)?
        || json(&current.health)? != json(&new.health)?;
    Ok(if runtime {
        Change::Runtime
    } else {
        Change::None
    })
}

/// `hc`'s storage as two configurations are compared: each mount point
/// with the options it is mounted with (none given is `defaults`, as
/// upstream records them) and each filesystem with its source (none given
/// is the image), so the storage upstream recorded reads the same as the
/// configuration that described it.
fn storage_value(hc: &HostConfiguration) -> Result<serde_json::Value, TridentError> {
    let mut storage = hc.storage.clone();
    for fs in &mut storage.filesystems {
        if !fs.mount_point.is_none() {
            fs.mount_point = MountPoint::Full(MountPointSpec {
                path: fs.mount_point.path().to_owned(),
                options: Some(fs.mount_point.options().unwrap_or("defaults").to_owned()),
            });
        }
        fs.source = Some(fs.effective_source());
    }
    json(&storage)
}

/// The active volume and the provisioned configuration of a host that
/// can take an A/B update.
fn provisioned(current: &HostStatus) -> Result<(AbVolume, &HostConfiguration), TridentError> {
    let ok_state = matches!(
        current.servicing_state,
        ServicingState::Provisioned | ServicingState::AbUpdateStaged
    );
    let (Some(active), Some(spec), true) =
        (current.ab_active_volume, current.spec.as_ref(), ok_state)
    else {
        return Err(TridentError::new(
            Subkind::InvalidServicingState,
            format!(
                "An A/B update needs a provisioned host; this host is '{}'",
                current.servicing_state
            ),
        ));
    };
    // While staged, `spec` is the staged config and `specOld` the running one.
    let running = if current.servicing_state == ServicingState::AbUpdateStaged {
        current.spec_old.as_ref().unwrap_or(spec)
    } else {
        spec
    };
    Ok((active, running))
}

/// What the first half of an update did.
enum Staged {
    /// The configuration is already provisioned.
    Nothing,
    /// An A/B update staged: its Host Status and image hash.
    Ab(Box<HostStatus>, String),
    /// A runtime update, applied whole (Update only).
    Runtime(Box<StepOutcome>),
}

/// UpdateStage (and the first half of Update, as `halves` says: the plan
/// it declares).
async fn stage(ctx: &StepContext, yaml: &str, halves: Halves) -> Result<Staged, TridentError> {
    let validated = validate_phase(ctx, yaml)?;
    let hc = validated.config();
    let current = ctx.engine.host_status()?;
    let (active, running) = provisioned(&current)?;
    let running = running.clone();
    match classify(&running, hc)? {
        Change::None => {
            tracing::info!("the Host Configuration is already provisioned: nothing to update");
            return Ok(Staged::Nothing);
        }
        Change::Runtime if halves == Halves::Stage => {
            return Err(TridentError::new(
                Subkind::UnsupportedFeature,
                "The new Host Configuration needs a runtime update, which is applied in one \
                 step: use Update (stage and finalize), not UpdateStage",
            ));
        }
        Change::Runtime => {
            let outcome =
                runtime_update::apply(ctx, validated.into_config(), &current, running, active)
                    .await?;
            return Ok(Staged::Runtime(Box::new(outcome)));
        }
        Change::AbUpdate => {}
    }
    let mut plan = StepPlan::servicing(hc, ServicingType::AbUpdate, halves);
    plan.declare();
    if storage_value(&running)? != storage_value(hc)? {
        return Err(TridentError::new(
            Subkind::UnsupportedFeature,
            "The new Host Configuration changes 'storage': storage changes need a clean install",
        ));
    }
    let inactive = active.other();
    // A new root an earlier run left mounted (the inactive volume's, most
    // likely) is cleaned, or the update refused, before a byte is written.
    let engine = ctx.engine.clone();
    blocking(move || engine.clear_stale_new_roots()).await?;
    let env = ScriptEnv {
        servicing_type: ServicingType::AbUpdate,
        operation_id: ctx.operation_id.clone(),
        target_disks: hc.storage.disks.iter().map(|d| d.device.clone()).collect(),
        target_volume: Some(inactive.to_string()),
        target_root: None,
        chrooted: false,
    };
    script_phase("preServicing", &hc.scripts.pre_servicing, &env).await?;
    // The recorded devices, opened by their layers, resolved for the
    // inactive volume.
    let opened = current.clone();
    blocking(move || block_device::open_all(&opened)).await?;
    let devices = BlockDevices::of_validated(&validated, &current);
    let targets = devices.write_targets(Targets::AbUpdate { volume: inactive })?;
    if targets.is_empty() {
        return Err(TridentError::new(
            Subkind::InvalidHostConfiguration,
            "No filesystem is on an A/B volume pair: nothing can be updated",
        ));
    }
    tracing::info!(active = %active, target = %inactive, "staging A/B update into the inactive volume");
    let hash_trees = devices.verity_hash_targets(Targets::AbUpdate { volume: inactive })?;
    let serviced = verity_blocks::verity_filesystems(hc)
        .into_iter()
        .filter(|fs| hash_trees.contains_key(&fs.mount_point))
        .collect();
    preflight::check_image(hc, serviced, &ctx.engine.sources).await?;
    // The active volume's devices: an indexed image's chunks found there
    // are copied, not fetched (read only; never opened for writing).
    let reuse = write::LocalVolumes {
        filesystems: devices.write_targets(Targets::AbUpdate { volume: active })?,
        hash_trees: devices.verity_hash_targets(Targets::AbUpdate { volume: active })?,
    };
    let written = write::write_step(ctx, &current, hc, &targets, &hash_trees, Some(reuse)).await?;
    let image_hash = written.hash.clone();
    let verity_root_hashes = written.verity_root_hashes.clone();
    let (new_hc, new_devices, new_targets) = (hc.clone(), devices.clone(), targets.clone());
    blocking(move || new_storage::create(&new_hc, &new_devices, &new_targets, false)).await?;
    let (extensions, _staging) = stage_extensions(ctx, &hc.os, Some(&running.os)).await?;
    let shared = devices
        .shared_mount_points()
        .into_iter()
        .map(|(mp, device_id)| {
            let source = ctx.engine.host_root.join(mp.trim_start_matches('/'));
            SharedFs {
                mount_point: mp,
                device_id,
                source,
            }
        })
        .collect();
    let new_root = NewRootRequest {
        hc: hc.clone(),
        devices,
        targets,
        shared,
        volume: inactive,
        path: ctx.engine.new_root_dir(&ctx.operation_id),
        image: written.boot,
        install: false,
        extensions: extensions.clone(),
    };
    service_new_root(ctx.engine.clone(), new_root, &env, &mut plan).await?;

    let mut hc = validated.into_config();
    hc.os = extensions::with_paths(&hc.os, &extensions);
    let mut status = next_status(&current);
    status.spec_old = Some(running);
    status.spec = Some(hc);
    status.servicing_state = ServicingState::AbUpdateStaged;
    status.staged_image_hash = Some(image_hash.clone());
    if verity_root_hashes.is_empty() {
        status.verity_root_hashes.remove(&inactive);
    } else {
        status
            .verity_root_hashes
            .insert(inactive, verity_root_hashes);
    }
    Ok(Staged::Ab(Box::new(status), image_hash))
}

/// The finalize of an A/B update: the updated volume boots next.
const UPDATE: Switch = Switch {
    rpc: "UpdateFinalize",
    staged: ServicingState::AbUpdateStaged,
    staged_name: "a staged A/B update",
    wrong_state: Subkind::InvalidServicingState,
    finalized: ServicingState::AbUpdateFinalized,
    phase_label: "Switch next boot to the updated volume",
    reason: "A/B update finalized",
    keeps_staged_image: true,
    servicing_kind: ServicingKind::AbUpdate,
};

fn nothing_to_do() -> StepOutcome {
    StepOutcome {
        servicing_kind: Some(ServicingKind::NoneRequired),
        ..StepOutcome::default()
    }
}

/// UpdateStage.
pub async fn stage_step(ctx: StepContext, yaml: String) -> StepResult {
    Ok(match stage(&ctx, &yaml, Halves::Stage).await? {
        Staged::Ab(status, hash) => StepOutcome {
            status: Some(*status),
            reboot: None,
            image_hash: Some(hash),
            servicing_kind: Some(ServicingKind::AbUpdate),
            keep_last_error: false,
        },
        Staged::Runtime(outcome) => *outcome,
        Staged::Nothing => nothing_to_do(),
    })
}

/// UpdateFinalize.
pub async fn finalize_step(ctx: StepContext, handling: RebootHandling) -> StepResult {
    StepPlan::finalize().declare();
    let current = ctx.engine.host_status()?;
    Ok(finalize(&ctx, &current, handling, UPDATE).await?)
}

/// Update: stage, commit the staged state, finalize; a runtime update is
/// applied whole.
pub async fn update_step(ctx: StepContext, yaml: String, handling: RebootHandling) -> StepResult {
    match stage(&ctx, &yaml, Halves::StageAndFinalize).await? {
        Staged::Nothing => Ok(nothing_to_do()),
        Staged::Runtime(outcome) => Ok(*outcome),
        Staged::Ab(staged, _) => {
            ctx.commit_status(&staged).await?;
            Ok(finalize(&ctx, &staged, handling, UPDATE).await?)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn config(root_mount: &str, esp_source: &str) -> HostConfiguration {
        trident_host::config::parse(&format!(
            r#"
image: {{ url: "https://images.example.com/os.cosi", sha384: {sha384} }}
storage:
  disks:
  - id: os
    device: /dev/sda
    partitionTableType: gpt
    partitions:
    - {{ id: esp, type: esp, size: 8M }}
    - {{ id: root-a, type: root, size: 48M }}
    - {{ id: root-b, type: root, size: 48M }}
  abUpdate:
    volumePairs:
    - {{ id: root, volumeAId: root-a, volumeBId: root-b }}
  filesystems:
  - {{ deviceId: esp, {esp_source}mountPoint: {{ path: /boot/efi, options: umask=0077 }} }}
  - {{ deviceId: root, mountPoint: {root_mount} }}
"#,
            sha384 = "2e".repeat(48)
        ))
        .unwrap()
    }

    /// Upstream records every mount point with its options (`defaults`
    /// when none were given) and every filesystem's source: the storage
    /// of a host it installed is the configuration that described it.
    #[test]
    fn storage_as_upstream_records_it_is_the_same_storage() {
        let written = config("/", "");
        let recorded = config("{ path: /, options: defaults }", "source: image, ");
        assert_eq!(
            storage_value(&written).unwrap(),
            storage_value(&recorded).unwrap()
        );
        assert_eq!(classify(&recorded, &written).unwrap(), Change::None);
        let other = config("{ path: /, options: ro }", "");
        assert_ne!(
            storage_value(&written).unwrap(),
            storage_value(&other).unwrap()
        );
    }
}
