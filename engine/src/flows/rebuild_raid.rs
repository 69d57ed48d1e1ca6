//! RebuildRaid: after a failed disk was replaced, its partitions are
//! recreated and its members re-added to the degraded arrays, with the
//! recovery followed to the end (`block_device::raid::rebuild`). Works
//! from the Host Configuration the host was installed with (upstream's
//! request carries none). Phases: `validate` (what to rebuild, nothing
//! touched on a refusal), `partition`, `raid-recovery`; then, for an ESP
//! mirror, boot control writes the rebuilt members' boot options.

use trident_host::{Subkind, TridentError};
use trident_proto::v1::ServicingKind;
use trident_telemetry::progress::{Phase, Unit};

use crate::block_device::raid::{Kernel, rebuild};
use crate::machinery::plan::StepPlan;
use crate::machinery::runner::{StepContext, StepOutcome, StepResult};
use crate::machinery::step::{blocking, next_status};

/// RebuildRaid.
pub async fn rebuild_raid_step(ctx: StepContext) -> StepResult {
    StepPlan::rebuild_raid().declare();
    let current = ctx.engine.host_status()?;
    let validate = Phase::start(
        "validate",
        "Find the replaced disks and the degraded arrays",
        Unit::Items,
        Some(1),
    );
    let hc = current.spec.clone().ok_or_else(|| {
        TridentError::new(
            Subkind::InvalidServicingState,
            "rebuild-raid needs an installed host: no Host Configuration is recorded",
        )
    })?;
    let status = current.clone();
    let plan = blocking(move || rebuild::plan(&hc, &status, &Kernel::host())).await?;
    tracing::info!(
        disks = %plan.disks.iter().map(|(_, d)| d.id.as_str()).collect::<Vec<_>>().join(" "),
        members = plan.re_adds.len(),
        "rebuilding RAID arrays"
    );
    validate.set(1);
    validate.done();
    let mut next = next_status(&current);
    let status = blocking(move || {
        rebuild::run(&plan, &Kernel::host(), &mut next)?;
        Ok(next)
    })
    .await?;
    // An ESP mirror's rebuilt member gets its boot options (upstream's
    // create_and_update_boot_variables_after_rebuilding).
    ctx.engine.boot.raid_rebuilt(&status)?;
    Ok(StepOutcome {
        status: Some(status),
        servicing_kind: Some(ServicingKind::NoneRequired),
        ..StepOutcome::default()
    })
}
