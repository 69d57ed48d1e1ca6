//! Manual A/B rollback: back to the volume that was active before the last
//! committed A/B update (it still holds that OS).

use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_proto::v1preview::{CheckRollbackKind, ManualRollbackKind};
use trident_telemetry::progress::{Phase, Unit};

use super::handoff;
use super::plan::StepPlan;
use super::runner::{RebootRequest, StepContext, StepOutcome, StepResult};
use super::step::next_status;

/// The volume an A/B rollback would boot, if one is available.
pub fn ab_rollback_target(status: &HostStatus) -> Option<AbVolume> {
    match (
        status.servicing_state,
        status.ab_active_volume,
        &status.spec_old,
    ) {
        (ServicingState::Provisioned, Some(active), Some(_)) => Some(active.other()),
        _ => None,
    }
}

/// CheckRollback.
pub fn check(status: &HostStatus, kind: ManualRollbackKind) -> CheckRollbackKind {
    match kind {
        ManualRollbackKind::RuntimeRollbackRequested => CheckRollbackKind::NoRollbackAvailable,
        _ if ab_rollback_target(status).is_some() => CheckRollbackKind::AbRollbackExpected,
        _ => CheckRollbackKind::NoRollbackAvailable,
    }
}

/// GetRollbackChain: newest first, `ab:<volume>:<image url>`.
pub fn chain(status: &HostStatus) -> Vec<String> {
    ab_rollback_target(status)
        .map(|volume| {
            let url = status
                .spec_old
                .as_ref()
                .and_then(|s| s.image.as_ref())
                .map_or("", |i| i.url.as_str());
            vec![format!("ab:{volume}:{url}")]
        })
        .unwrap_or_default()
}

fn check_kind(kind: ManualRollbackKind) -> Result<(), TridentError> {
    if kind == ManualRollbackKind::RuntimeRollbackRequested {
        return Err(TridentError::new(
            Subkind::RollbackUnavailable,
            "Runtime rollback is not available: runtime updates are not supported",
        ));
    }
    Ok(())
}

fn stage(current: &HostStatus, kind: ManualRollbackKind) -> Result<HostStatus, TridentError> {
    check_kind(kind)?;
    let Some(target) = ab_rollback_target(current) else {
        return Err(TridentError::new(
            Subkind::RollbackUnavailable,
            format!(
                "No A/B rollback is available (the host is '{}'{})",
                current.servicing_state,
                if current.spec_old.is_none() {
                    ", no previous A/B update"
                } else {
                    ""
                }
            ),
        ));
    };
    tracing::info!(target = %target, "manual rollback staged");
    let mut status = next_status(current);
    status.servicing_state = ServicingState::ManualRollbackAbStaged;
    Ok(status)
}

async fn finalize(
    ctx: &StepContext,
    current: &HostStatus,
    handling: RebootHandling,
) -> Result<StepOutcome, TridentError> {
    let (ServicingState::ManualRollbackAbStaged, Some(active)) =
        (current.servicing_state, current.ab_active_volume)
    else {
        return Err(TridentError::new(
            Subkind::InvalidServicingState,
            format!(
                "RollbackFinalize needs a staged rollback; the host is '{}'",
                current.servicing_state
            ),
        ));
    };
    let phase = Phase::start(
        "finalize",
        "Switch next boot to the previous volume",
        Unit::Items,
        Some(1),
    );
    let mut status = next_status(current);
    status.servicing_state = ServicingState::ManualRollbackAbFinalized;
    // The image on the rollback target becomes active at commit.
    status.staged_image_hash = None;
    // The rollback target's own datastore is from before the update.
    handoff::hand_over_success(ctx, &status, active.other()).await?;
    ctx.engine
        .boot
        .set_next_boot(current, active.other(), &ctx.operation_id)?;
    phase.set(1);
    phase.done();
    Ok(StepOutcome {
        status: Some(status),
        reboot: Some(RebootRequest {
            reason: format!("manual rollback finalized: boot {}", active.other()),
            handling,
        }),
        image_hash: None,
        servicing_kind: Some(ServicingKind::ManualRollbackAb),
        keep_last_error: false,
    })
}

/// RollbackStage.
pub async fn stage_step(ctx: StepContext, kind: ManualRollbackKind) -> StepResult {
    let current = ctx.engine.host_status()?;
    Ok(StepOutcome {
        status: Some(stage(&current, kind)?),
        servicing_kind: Some(ServicingKind::ManualRollbackAb),
        ..StepOutcome::default()
    })
}

/// RollbackFinalize.
pub async fn finalize_step(ctx: StepContext, handling: RebootHandling) -> StepResult {
    StepPlan::finalize().declare();
    let current = ctx.engine.host_status()?;
    Ok(finalize(&ctx, &current, handling).await?)
}

/// Rollback: stage, commit the staged state, finalize.
pub async fn rollback_step(
    ctx: StepContext,
    kind: ManualRollbackKind,
    handling: RebootHandling,
) -> StepResult {
    StepPlan::finalize().declare();
    let current = ctx.engine.host_status()?;
    let staged = stage(&current, kind)?;
    ctx.commit_status(&staged).await?;
    Ok(finalize(&ctx, &staged, handling).await?)
}
