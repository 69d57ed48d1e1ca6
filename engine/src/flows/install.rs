//! Clean install: stage (GPT + images into A volumes) and finalize (next
//! boot = volume A, reboot).

use std::path::PathBuf;

use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_telemetry::progress::{Phase, Unit};

use super::handoff;
use super::new_root_step::{NewRootRequest, service_new_root};
use crate::block_device::{self, BlockDevices, Targets};
use crate::image::{preflight, verity_blocks, write};
use crate::machinery::plan::{Halves, StepPlan};
use crate::machinery::runner::{RebootRequest, StepContext, StepOutcome, StepResult};
use crate::machinery::step::{
    blocking, next_status, script_phase, stage_extensions, validate_phase,
};
use crate::scripts::{ScriptEnv, ServicingType};
use crate::{install_safety, new_storage};

/// States from which a clean install may (re)start.
fn may_install(state: ServicingState) -> bool {
    matches!(
        state,
        ServicingState::NotProvisioned
            | ServicingState::CleanInstallStaged
            | ServicingState::CleanInstallFinalized
    )
}

/// Stages a clean install (the first of `halves`, whose steps it
/// declares); returns the staged Host Status and image hash.
async fn stage(
    ctx: &StepContext,
    yaml: &str,
    halves: Halves,
) -> Result<(HostStatus, String), TridentError> {
    let validated = validate_phase(ctx, yaml)?;
    let hc = validated.config();
    let mut plan = StepPlan::servicing(hc, ServicingType::CleanInstall, halves);
    plan.declare();
    let current = ctx.engine.host_status()?;
    if !may_install(current.servicing_state) {
        return Err(TridentError::new(
            Subkind::InvalidServicingState,
            format!(
                "A clean install needs a host that is not provisioned; this host is '{}' (use an A/B update)",
                current.servicing_state
            ),
        ));
    }
    // Before anything is written (scripts included): never repartition the
    // disk the running OS is on.
    let disks: Vec<(String, String)> = hc
        .storage
        .disks
        .iter()
        .map(|d| (d.id.clone(), d.device.clone()))
        .collect();
    install_safety::check(&ctx.engine.install_safety, &disks)?;
    // A new root an earlier run left mounted is cleaned (or the install
    // refused) before a byte is written under it.
    let engine = ctx.engine.clone();
    blocking(move || engine.clear_stale_new_roots()).await?;
    // The image is opened and checked against the configuration before
    // the disk is partitioned: an unreachable or mismatched image leaves
    // the disk as it was.
    let verity = verity_blocks::verity_filesystems(hc);
    preflight::check_image(hc, verity, &ctx.engine.sources).await?;
    if let Some(path) = hc.datastore_path() {
        ctx.engine
            .switch_datastore(&PathBuf::from(path), &ctx.ids())?;
    }
    let env = ScriptEnv {
        servicing_type: ServicingType::CleanInstall,
        operation_id: ctx.operation_id.clone(),
        target_disks: hc.storage.disks.iter().map(|d| d.device.clone()).collect(),
        target_volume: Some(AbVolume::VolumeA.to_string()),
        target_root: None,
        chrooted: false,
    };
    script_phase("preServicing", &hc.scripts.pre_servicing, &env).await?;

    let partition = Phase::start(
        "partition",
        "Create partition tables",
        Unit::Items,
        Some(hc.storage.disks.len() as u64),
    );
    // The block-device stack creates the storage and records it in the
    // next Host Status.
    let (hc_for_stack, previous, mut created) =
        (hc.clone(), current.clone(), next_status(&current));
    let mut status = blocking(move || {
        block_device::create_all(&hc_for_stack, &previous, &mut created)?;
        Ok(created)
    })
    .await?;
    partition.set(hc.storage.disks.len() as u64);
    partition.done();

    let devices = BlockDevices::of_validated(&validated, &status);
    let targets = devices.write_targets(Targets::Install)?;
    let hash_trees = devices.verity_hash_targets(Targets::Install)?;
    let written = write::write_step(ctx, &current, hc, &targets, &hash_trees, None).await?;
    let image_hash = written.hash.clone();
    status.verity_root_hashes.clear();
    if !written.verity_root_hashes.is_empty() {
        status
            .verity_root_hashes
            .insert(AbVolume::VolumeA, written.verity_root_hashes.clone());
    }
    let (new_hc, new_devices, new_targets) = (hc.clone(), devices.clone(), targets.clone());
    blocking(move || new_storage::create(&new_hc, &new_devices, &new_targets, true)).await?;
    let (extensions, _staging) = stage_extensions(ctx, &hc.os, None).await?;

    let new_root = NewRootRequest {
        hc: hc.clone(),
        devices,
        targets,
        // Every filesystem is written or made anew: nothing to share.
        shared: Vec::new(),
        volume: AbVolume::VolumeA,
        path: ctx.engine.new_root_dir(&ctx.operation_id),
        image: written.boot,
        install: true,
        extensions: extensions.clone(),
    };
    service_new_root(ctx.engine.clone(), new_root, &env, &mut plan).await?;

    let mut hc = validated.into_config();
    hc.os = crate::extensions::with_paths(&hc.os, &extensions);
    status.spec = Some(hc);
    status.spec_old = None;
    status.servicing_state = ServicingState::CleanInstallStaged;
    status.ab_active_volume = None;
    status.image_hash = None;
    status.staged_image_hash = Some(image_hash.clone());
    status.install_index = current.install_index + 1;
    Ok((status, image_hash))
}

/// Finalizes a staged install: next boot = volume A; the installed OS
/// gets a datastore that says so (unless `trident.disable`).
async fn finalize(
    ctx: &StepContext,
    current: &HostStatus,
    handling: RebootHandling,
) -> Result<StepOutcome, TridentError> {
    if current.servicing_state != ServicingState::CleanInstallStaged {
        return Err(TridentError::new(
            Subkind::InvalidServicingState,
            format!(
                "InstallFinalize needs a staged install; the host is '{}'",
                current.servicing_state
            ),
        ));
    }
    let phase = Phase::start(
        "finalize",
        "Set next boot to volume A",
        Unit::Items,
        Some(1),
    );
    ctx.engine
        .boot
        .set_next_boot(current, AbVolume::VolumeA, &ctx.operation_id)?;
    let mut status = next_status(current);
    status.servicing_state = ServicingState::CleanInstallFinalized;
    let disabled = current
        .spec
        .as_ref()
        .is_some_and(|spec| spec.trident.disable);
    if disabled {
        tracing::info!("trident.disable: the installed OS gets no datastore (its agent is masked)");
    } else {
        let engine = ctx.engine.clone();
        let (handed, op) = (status.clone(), ctx.clone());
        blocking(move || handoff::hand_off_install(&engine, &handed, &op.ids())).await?;
    }
    phase.set(1);
    phase.done();
    Ok(StepOutcome {
        status: Some(status),
        reboot: Some(RebootRequest {
            reason: "clean install finalized: boot volume A".to_owned(),
            handling,
        }),
        image_hash: current.staged_image_hash.clone(),
        servicing_kind: Some(ServicingKind::CleanInstall),
        keep_last_error: false,
    })
}

/// InstallStage.
pub async fn stage_step(ctx: StepContext, yaml: String) -> StepResult {
    let (status, image_hash) = stage(&ctx, &yaml, Halves::Stage).await?;
    Ok(StepOutcome {
        status: Some(status),
        reboot: None,
        image_hash: Some(image_hash),
        servicing_kind: Some(ServicingKind::CleanInstall),
        keep_last_error: false,
    })
}

/// InstallFinalize.
pub async fn finalize_step(ctx: StepContext, handling: RebootHandling) -> StepResult {
    StepPlan::finalize().declare();
    let current = ctx.engine.host_status()?;
    Ok(finalize(&ctx, &current, handling).await?)
}

/// Install: stage, commit the staged state, finalize.
pub async fn install_step(ctx: StepContext, yaml: String, handling: RebootHandling) -> StepResult {
    let (staged, _) = stage(&ctx, &yaml, Halves::StageAndFinalize).await?;
    ctx.commit_status(&staged).await?;
    Ok(finalize(&ctx, &staged, handling).await?)
}
