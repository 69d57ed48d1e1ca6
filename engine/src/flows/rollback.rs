//! Manual A/B rollback: back to the volume that was active before the last
//! committed A/B update (it still holds that OS).
//!
//! As upstream's `engine::manual_rollback` (its `main`, and the next
//! release's `trident.v1.RollbackService`): a rollback is refused when the
//! host is not provisioned (or staged for a rollback) or carries a last
//! error, and when a runtime rollback is asked for while the next one
//! would undo an A/B update; with nothing to roll back to it succeeds, does
//! nothing, and says so in `Completed.servicing_kind`
//! (`SERVICING_KIND_NONE_REQUIRED`).

use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_proto::v1preview::{CheckRollbackKind, ManualRollbackKind};

use super::finalize::{Switch, finalize};
use crate::machinery::plan::StepPlan;
use crate::machinery::runner::{StepContext, StepOutcome, StepResult};
use crate::machinery::step::next_status;

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

/// The host may be rolled back at all (upstream's states and last-error
/// rule).
fn check_state(current: &HostStatus) -> Result<(), TridentError> {
    match current.servicing_state {
        ServicingState::Provisioned | ServicingState::ManualRollbackAbStaged => {}
        state => {
            return Err(TridentError::new(
                Subkind::InvalidRollbackState,
                format!("Cannot roll back: the host is in unexpected state '{state}'"),
            ));
        }
    }
    if current.last_error.is_some() {
        return Err(TridentError::new(
            Subkind::InvalidRollbackState,
            "Cannot roll back: the host is provisioned but has a last error set; \
             use install or update rather than rollback",
        ));
    }
    Ok(())
}

/// The staged state, or `None` when there is nothing to roll back to.
fn stage(
    current: &HostStatus,
    kind: ManualRollbackKind,
) -> Result<Option<HostStatus>, TridentError> {
    check_state(current)?;
    if current.servicing_state == ServicingState::ManualRollbackAbStaged {
        // Staged again: the same target, nothing changes.
        return Ok(Some(next_status(current)));
    }
    let Some(target) = ab_rollback_target(current) else {
        tracing::info!("no available rollback to perform: nothing to do");
        return Ok(None);
    };
    if kind == ManualRollbackKind::RuntimeRollbackRequested {
        return Err(TridentError::new(
            Subkind::InvalidRollbackExpectation,
            "Expected to undo a runtime update, but the rollback would undo an A/B update",
        ));
    }
    tracing::info!(target = %target, "manual rollback staged");
    let mut status = next_status(current);
    status.servicing_state = ServicingState::ManualRollbackAbStaged;
    Ok(Some(status))
}

/// A rollback with nothing to roll back to: success, no state change.
fn nothing_to_do() -> StepOutcome {
    StepOutcome {
        servicing_kind: Some(ServicingKind::NoneRequired),
        ..StepOutcome::default()
    }
}

/// The finalize of a manual rollback: the previous volume boots next.
const ROLLBACK: Switch = Switch {
    rpc: "RollbackFinalize",
    staged: ServicingState::ManualRollbackAbStaged,
    staged_name: "a staged rollback",
    wrong_state: Subkind::InvalidRollbackState,
    finalized: ServicingState::ManualRollbackAbFinalized,
    phase_label: "Switch next boot to the previous volume",
    reason: "manual rollback finalized",
    keeps_staged_image: false,
    servicing_kind: ServicingKind::ManualRollbackAb,
};

/// RollbackStage.
pub async fn stage_step(ctx: StepContext, kind: ManualRollbackKind) -> StepResult {
    let current = ctx.engine.host_status()?;
    let Some(staged) = stage(&current, kind)? else {
        return Ok(nothing_to_do());
    };
    Ok(StepOutcome {
        status: Some(staged),
        servicing_kind: Some(ServicingKind::ManualRollbackAb),
        ..StepOutcome::default()
    })
}

/// RollbackFinalize.
pub async fn finalize_step(ctx: StepContext, handling: RebootHandling) -> StepResult {
    StepPlan::finalize().declare();
    let current = ctx.engine.host_status()?;
    Ok(finalize(&ctx, &current, handling, ROLLBACK).await?)
}

/// Rollback: stage, commit the staged state, finalize.
pub async fn rollback_step(
    ctx: StepContext,
    kind: ManualRollbackKind,
    handling: RebootHandling,
) -> StepResult {
    let current = ctx.engine.host_status()?;
    let Some(staged) = stage(&current, kind)? else {
        return Ok(nothing_to_do());
    };
    StepPlan::finalize().declare();
    ctx.commit_status(&staged).await?;
    Ok(finalize(&ctx, &staged, handling, ROLLBACK).await?)
}
