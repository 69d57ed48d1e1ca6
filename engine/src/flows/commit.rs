//! Commit after the reboot: which volume booted (boot record), health
//! checks, then provisioned — or ab-update-health-check-failed with the
//! next boot pointed back at the old volume.

use trident_host::datastore::{OperationEnd, OperationResult};
use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{ContextExt, Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_telemetry::progress::{Phase, Unit};

use super::handoff;
use crate::machinery::plan::StepPlan;
use crate::machinery::runner::{RebootRequest, StepContext, StepError, StepOutcome, StepResult};
use crate::machinery::step::next_status;
use crate::scripts::{ScriptEnv, ServicingType, run_health_checks};

/// What a commit in the current state expects.
struct Expectation {
    volume: AbVolume,
    servicing_type: ServicingType,
    kind: ServicingKind,
}

fn expectation(status: &HostStatus) -> Result<Option<Expectation>, TridentError> {
    let active = status.ab_active_volume;
    let exp = |volume, servicing_type, kind| {
        Ok(Some(Expectation {
            volume,
            servicing_type,
            kind,
        }))
    };
    match (status.servicing_state, active) {
        (ServicingState::CleanInstallFinalized, _) => exp(
            AbVolume::VolumeA,
            ServicingType::CleanInstall,
            ServicingKind::CleanInstall,
        ),
        (ServicingState::AbUpdateFinalized, Some(a)) => {
            exp(a.other(), ServicingType::AbUpdate, ServicingKind::AbUpdate)
        }
        (ServicingState::ManualRollbackAbFinalized, Some(a)) => exp(
            a.other(),
            ServicingType::AbUpdate,
            ServicingKind::ManualRollbackAb,
        ),
        // Not provisioned: the commit service on installer media has
        // nothing to do.
        (
            ServicingState::NotProvisioned
            | ServicingState::Provisioned
            | ServicingState::AbUpdateHealthCheckFailed,
            _,
        ) => Ok(None),
        (state, _) => Err(TridentError::new(
            Subkind::InvalidServicingState,
            format!("Nothing to commit: the host is '{state}' (finalize first)"),
        )),
    }
}

/// Volume the host runs on now (boot control: the running root, or the
/// boot record after its simulated reboot).
fn booted(ctx: &StepContext, current: &HostStatus) -> Result<Option<AbVolume>, TridentError> {
    ctx.engine.boot.booted(current)
}

/// Commit.
pub async fn commit_step(ctx: StepContext, handling: RebootHandling) -> StepResult {
    let current = ctx.engine.host_status()?;
    let booted = booted(&ctx, &current)?;
    let Some(exp) = expectation(&current)? else {
        return Ok(nothing_expected(&current, booted));
    };
    if booted != Some(exp.volume) && awaiting_reboot(&ctx) {
        return Ok(before_the_reboot(&current));
    }
    StepPlan::commit().declare();
    if let Err(error) = check_booted(booted, &exp) {
        return Err(roll_back(&ctx, &current, error, handling).await);
    }
    if let Err(error) = health_checks(&ctx, &current, &exp).await {
        return Err(roll_back(&ctx, &current, error, handling).await);
    }
    // Only now does the new volume become the default boot.
    ctx.engine.boot.commit(&current, exp.volume)?;
    Ok(committed(&current, &exp))
}

/// Whether the host has not rebooted since the finalize that recorded the
/// current state: the commit service of installer media that has just
/// installed, or an orchestrator committing before the reboot. The host
/// then runs the old system, which says nothing about the new one: no
/// check fails the install or rolls the update back before its reboot.
fn awaiting_reboot(ctx: &StepContext) -> bool {
    let finalized = ctx
        .engine
        .with_datastore(|ds| ds.status_operation())
        .ok()
        .flatten()
        .and_then(|row| trident_host::time_util::parse_system_time(&row.started_at));
    finalized.is_some_and(|at| !ctx.engine.boot.rebooted_since(at))
}

/// The outcome of a commit before the finalize's reboot: nothing yet.
fn before_the_reboot(current: &HostStatus) -> StepOutcome {
    tracing::info!(state = %current.servicing_state,
        "the host has not rebooted since the finalize: nothing to commit before that reboot");
    StepOutcome {
        servicing_kind: Some(ServicingKind::NoneRequired),
        ..StepOutcome::default()
    }
}

/// The quick check of a commit (under the servicing lock, before the
/// operation runs): nothing finalized and nothing to settle, so nothing
/// to commit. Settling a failed update needs the booted volume: not here.
pub fn nothing_to_commit(current: &HostStatus) -> Option<StepOutcome> {
    if current.servicing_state == ServicingState::AbUpdateHealthCheckFailed {
        return None;
    }
    match expectation(current) {
        Ok(None) => {
            tracing::info!(state = %current.servicing_state, "nothing to commit");
            Some(StepOutcome {
                servicing_kind: Some(ServicingKind::NoneRequired),
                ..StepOutcome::default()
            })
        }
        _ => None,
    }
}

/// Whether a commit in this state settles the operation that recorded it:
/// a finalize (install, A/B update, rollback) waiting for its reboot, or
/// the failed commit that sent the host back to its old volume. The commit
/// then continues that operation's trace (one trace across the reboot).
pub fn settles_pending(current: &HostStatus) -> bool {
    matches!(
        current.servicing_state,
        ServicingState::CleanInstallFinalized
            | ServicingState::AbUpdateFinalized
            | ServicingState::ManualRollbackAbFinalized
            | ServicingState::AbUpdateHealthCheckFailed
    )
}

/// Commit with nothing finalized: back on the old volume after a failed
/// update it is provisioned again; otherwise there is nothing to do.
fn nothing_expected(current: &HostStatus, booted: Option<AbVolume>) -> StepOutcome {
    if current.servicing_state == ServicingState::AbUpdateHealthCheckFailed
        && booted == current.ab_active_volume
    {
        let mut status = next_status(current);
        status.servicing_state = ServicingState::Provisioned;
        status.staged_image_hash = None;
        // The old volume's configuration is current again (upstream's
        // record of a failed update, and ours, keep it in `specOld`; a
        // datastore of an older tridentd had already put it in `spec`).
        if let Some(running) = status.spec_old.take() {
            status.spec = Some(running);
        }
        return StepOutcome {
            status: Some(status),
            servicing_kind: Some(ServicingKind::AbUpdate),
            // Why the host runs the old image stays readable (GetLastError)
            // until the next servicing.
            keep_last_error: true,
            ..StepOutcome::default()
        };
    }
    tracing::info!(state = %current.servicing_state, "nothing to commit");
    StepOutcome {
        servicing_kind: Some(ServicingKind::NoneRequired),
        ..StepOutcome::default()
    }
}

/// The "check-root" phase: the host booted the expected volume.
fn check_booted(booted: Option<AbVolume>, exp: &Expectation) -> Result<(), TridentError> {
    let check = Phase::start(
        "check-root",
        "Check the booted volume",
        Unit::Items,
        Some(1),
    );
    if booted != Some(exp.volume) {
        return Err(TridentError::new(
            Subkind::BootedWrongVolume,
            format!(
                "Expected to boot {} but the host runs on {}",
                exp.volume,
                booted.map_or("nothing booted".to_owned(), |v| v.to_string())
            ),
        ));
    }
    check.set(1);
    check.done();
    Ok(())
}

/// The "health-checks" phase: the booted configuration's checks (`spec`:
/// an update's new configuration, or the one a rollback returns to).
async fn health_checks(
    ctx: &StepContext,
    current: &HostStatus,
    exp: &Expectation,
) -> Result<(), TridentError> {
    let spec = current.spec.clone().unwrap_or_default();
    let env = ScriptEnv {
        servicing_type: exp.servicing_type,
        operation_id: ctx.operation_id.clone(),
        target_disks: spec
            .storage
            .disks
            .iter()
            .map(|d| d.device.clone())
            .collect(),
        target_volume: Some(exp.volume.to_string()),
        target_root: None,
        chrooted: false,
    };
    let selected = spec
        .health
        .checks
        .iter()
        .filter(|c| exp.servicing_type.selected_by(&c.run_on))
        .count() as u64;
    let health = Phase::start(
        "health-checks",
        "Run health checks",
        Unit::Items,
        Some(selected),
    );
    run_health_checks(&spec.health.checks, &env)
        .await
        .context("Health checks after the reboot failed")?;
    health.set(selected);
    health.done();
    Ok(())
}

/// The committed state: provisioned on the expected volume.
fn committed(current: &HostStatus, exp: &Expectation) -> StepOutcome {
    let mut status = next_status(current);
    status.servicing_state = ServicingState::Provisioned;
    status.ab_active_volume = Some(exp.volume);
    if let Some(hash) = status.staged_image_hash.take() {
        status.image_hash = Some(hash);
    }
    tracing::info!(active = %exp.volume, "servicing committed: host provisioned");
    StepOutcome {
        status: Some(status),
        reboot: None,
        image_hash: current.staged_image_hash.clone(),
        servicing_kind: Some(exp.kind),
        keep_last_error: false,
    }
}

/// A failed commit: install stays finalized (error recorded); an A/B
/// update or rollback becomes ab-update-health-check-failed, with the
/// previous configuration restored and the next boot pointed back at the
/// volume that was active, and a reboot requested to get there.
async fn roll_back(
    ctx: &StepContext,
    current: &HostStatus,
    error: TridentError,
    handling: RebootHandling,
) -> StepError {
    let Some(old) = current.ab_active_volume else {
        return StepError::from(error);
    };
    if let Err(e) = ctx
        .engine
        .boot
        .point_next_boot(current, old, &ctx.operation_id)
    {
        return StepError::from(e.context("Pointing the next boot back at the old volume"));
    }
    // As upstream records it: `spec` the configuration that failed,
    // `specOld` the one the old volume runs, which the commit there makes
    // current again (so upstream's agent put back settles it the same way).
    let mut status = next_status(current);
    status.servicing_state = ServicingState::AbUpdateHealthCheckFailed;
    status.staged_image_hash = None;
    hand_back(ctx, &status, old, &error).await;
    tracing::warn!(back_to = %old, "commit failed: next boot points back at the old volume");
    StepError {
        error,
        status: Some(status),
        reboot: Some(RebootRequest {
            reason: format!("commit failed: boot back into {old}"),
            handling,
        }),
    }
}

/// The old volume's datastore still says "finalized, boot the new one":
/// it gets this one, recording the failed commit and its error, so its
/// commit service finds `ab-update-health-check-failed` and settles. A
/// failure here does not stop the way back: the old volume's commit then
/// sees it booted the wrong volume and rolls back once more.
async fn hand_back(ctx: &StepContext, status: &HostStatus, old: AbVolume, error: &TridentError) {
    let record = error.record().stamped(&ctx.operation_id, &ctx.trace_id);
    let mut status = status.clone();
    status.last_error = Some(record.clone());
    let end = OperationEnd {
        result: OperationResult::Failure,
        error: Some(record),
    };
    if let Err(e) = handoff::hand_over_blocking(ctx, &status, old, end).await {
        tracing::error!(error = %e.report(), "could not hand the datastore back to the old volume");
    }
}

/// CheckRoot: is the host running on the volume the servicing expects?
pub async fn check_root_step(ctx: StepContext) -> StepResult {
    let current = ctx.engine.host_status()?;
    let booted = booted(&ctx, &current)?;
    let expected = match expectation(&current)? {
        Some(exp) => Some(exp.volume),
        None => current.ab_active_volume,
    };
    if expected.is_some() && booted != expected {
        return Err(TridentError::new(
            Subkind::BootedWrongVolume,
            format!(
                "Expected root on {} but the host runs on {}",
                expected.map_or("-".to_owned(), |v| v.to_string()),
                booted.map_or("nothing booted".to_owned(), |v| v.to_string())
            ),
        )
        .into());
    }
    tracing::info!(booted = ?booted, "root volume as expected");
    Ok(StepOutcome {
        servicing_kind: Some(ServicingKind::NoneRequired),
        ..StepOutcome::default()
    })
}
