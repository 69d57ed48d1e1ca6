//! Manual A/B rollback: back to the volume that was active before the last
//! committed A/B update (it still holds that OS), to the configuration it
//! ran. What may be rolled back is upstream's manual-rollback chain,
//! computed from the Host Status history
//! (`trident_host::datastore::rollback_chain`), so a host taken over from
//! upstream offers the rollbacks upstream's agent would, and the other way
//! round.
//!
//! As upstream's `engine::manual_rollback` (its `main`, and the next
//! release's `trident.v1.RollbackService`): a rollback is refused when the
//! host is not provisioned (or staged for a rollback) or carries a last
//! error, and when a runtime rollback is asked for while the next one
//! would undo an A/B update; with nothing to roll back to it succeeds, does
//! nothing, and says so in `Completed.servicing_kind`
//! (`SERVICING_KIND_NONE_REQUIRED`).

use trident_host::datastore::{RollbackChainItem, RollbackKind};
use trident_host::status::{HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_proto::v1preview::{CheckRollbackKind, ManualRollbackKind};

use super::finalize::{Switch, finalize};
use crate::machinery::plan::StepPlan;
use crate::machinery::runner::{StepContext, StepOutcome, StepResult};
use crate::machinery::step::next_status;

/// The rollback a request of `kind` asks for, from the chain (newest
/// first), as upstream picks it (`ManualRollbackContext::
/// get_requested_rollback`): none when the chain is empty; a runtime
/// rollback only when the next one undoes a runtime update; an A/B
/// rollback undoes the newest A/B update in the chain.
fn requested(
    chain: &[RollbackChainItem],
    kind: ManualRollbackKind,
) -> Result<Option<&RollbackChainItem>, TridentError> {
    let Some(first) = chain.first() else {
        return Ok(None);
    };
    match kind {
        ManualRollbackKind::RuntimeRollbackRequested if first.kind == RollbackKind::Ab => {
            Err(TridentError::new(
                Subkind::InvalidRollbackExpectation,
                "Expected to undo a runtime update, but the rollback would undo an A/B update",
            ))
        }
        ManualRollbackKind::AbRollbackRequested => chain
            .iter()
            .find(|item| item.kind == RollbackKind::Ab)
            .map(Some)
            .ok_or_else(|| {
                TridentError::new(
                    Subkind::InvalidRollbackExpectation,
                    "Expected to undo an A/B update, but no A/B rollback is available",
                )
            }),
        _ => Ok(Some(first)),
    }
}

/// CheckRollback: which rollback a request of `kind` would do.
pub fn check(chain: &[RollbackChainItem], kind: ManualRollbackKind) -> CheckRollbackKind {
    match requested(chain, kind) {
        Ok(Some(item)) if item.kind == RollbackKind::Ab => CheckRollbackKind::AbRollbackExpected,
        Ok(Some(_)) => CheckRollbackKind::RuntimeRollbackExpected,
        Ok(None) | Err(_) => CheckRollbackKind::NoRollbackAvailable,
    }
}

/// GetRollbackChain: newest first, `<kind>:<volume>:<image url>` (the
/// kind `ab` or `runtime`, the volume and image the rollback returns to).
pub fn chain(chain: &[RollbackChainItem]) -> Vec<String> {
    chain
        .iter()
        .map(|item| {
            let url = item
                .spec
                .as_ref()
                .and_then(|s| s.image.as_ref())
                .map_or("", |i| i.url.as_str());
            let volume = item
                .ab_active_volume
                .map_or_else(|| "none".to_owned(), |v| v.to_string());
            format!("{}:{volume}:{url}", item.kind.name())
        })
        .collect()
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

/// The staged state, or `None` when there is nothing to roll back to. As
/// upstream stages it: `spec` the configuration rolled back to (the
/// chain's), `specOld` the running one.
fn stage(
    current: &HostStatus,
    chain: &[RollbackChainItem],
    kind: ManualRollbackKind,
) -> Result<Option<HostStatus>, TridentError> {
    check_state(current)?;
    if current.servicing_state == ServicingState::ManualRollbackAbStaged {
        // Staged again: the same target, nothing changes.
        return Ok(Some(next_status(current)));
    }
    let Some(item) = requested(chain, kind)? else {
        tracing::info!("no available rollback to perform: nothing to do");
        return Ok(None);
    };
    if item.kind == RollbackKind::Runtime {
        return Err(TridentError::new(
            Subkind::UnsupportedFeature,
            "The next rollback undoes a runtime update upstream Trident staged; \
             tridentd does not roll back runtime updates (update to the configuration \
             wanted instead)",
        ));
    }
    let Some(active) = current.ab_active_volume else {
        return Err(TridentError::new(
            Subkind::InvalidRollbackState,
            "Cannot roll back: the host has no active A/B volume",
        ));
    };
    let target = active.other();
    if item.ab_active_volume.is_some_and(|v| v != target) {
        tracing::warn!(recorded = ?item.ab_active_volume, %target,
            "the rollback's recorded volume is the running one; booting the other");
    }
    tracing::info!(target = %target, "manual rollback staged");
    let mut status = next_status(current);
    status.spec_old = current.spec.clone();
    status.spec = item.spec.clone();
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
    let chain = ctx.engine.rollback_chain()?;
    let Some(staged) = stage(&current, &chain, kind)? else {
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
    let chain = ctx.engine.rollback_chain()?;
    let Some(staged) = stage(&current, &chain, kind)? else {
        return Ok(nothing_to_do());
    };
    StepPlan::finalize().declare();
    ctx.commit_status(&staged).await?;
    Ok(finalize(&ctx, &staged, handling, ROLLBACK).await?)
}
