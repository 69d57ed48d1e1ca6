//! Runtime update: a configuration that keeps the image and changes only
//! what can be applied to the running system (extension images, netplan;
//! scripts and health checks, which only say how to service) is applied
//! there, without an A/B update or a reboot, as upstream's runtime update:
//! preServicing scripts selected for `runtime-update`, the new extension
//! images downloaded and checked (`extensions` phase), then the `apply`
//! phase (images placed on the running system under `--host-root`, the
//! ones no longer configured removed, each kind whose images changed
//! merged again with `systemd-sysext refresh` / `systemd-confext refresh`,
//! a changed netplan written and `netplan apply`ed), postConfigure scripts
//! selected for `runtime-update` (on the running system, `TARGET_ROOT` =
//! the host root). The new configuration, with each image's path, becomes
//! the Host Status's `spec`; `specOld` is left as it was (the A/B rollback
//! target's configuration: runtime updates are not rolled back).

use trident_host::config::HostConfiguration;
use trident_host::status::{AbVolume, HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::ServicingKind;
use trident_telemetry::progress::{Phase, Unit};

use crate::extensions::{self, place};
use crate::machinery::plan::StepPlan;
use crate::machinery::runner::{StepContext, StepOutcome};
use crate::machinery::step::{blocking, next_status, script_phase, stage_extensions};
use crate::os_config;
use crate::scripts::{ScriptEnv, ServicingType};
use crate::step_ids::APPLY;

/// Applies `hc` (classified as a runtime update of `running`) to the
/// running system of `current`, booted from `active`.
pub async fn apply(
    ctx: &StepContext,
    hc: HostConfiguration,
    current: &HostStatus,
    running: HostConfiguration,
    active: AbVolume,
) -> Result<StepOutcome, TridentError> {
    if current.servicing_state != ServicingState::Provisioned {
        return Err(TridentError::new(
            Subkind::InvalidServicingState,
            format!(
                "A runtime update needs a provisioned host with nothing staged; this host is '{}'",
                current.servicing_state
            ),
        ));
    }
    StepPlan::runtime(&hc).declare();
    let host_root = ctx.engine.host_root.clone();
    let env = ScriptEnv {
        servicing_type: ServicingType::RuntimeUpdate,
        operation_id: ctx.operation_id.clone(),
        target_disks: hc.storage.disks.iter().map(|d| d.device.clone()).collect(),
        target_volume: Some(active.to_string()),
        target_root: Some(host_root.clone()),
        chrooted: false,
    };
    script_phase("preServicing", &hc.scripts.pre_servicing, &env).await?;
    let (staged, _staging) = stage_extensions(ctx, &hc.os, Some(&running.os)).await?;

    let phase = Phase::start(APPLY, "Apply to the running system", Unit::Items, Some(1));
    let (old_os, new_os, root) = (running.os.clone(), hc.os.clone(), host_root.clone());
    let placed = staged.clone();
    blocking(move || {
        let refreshed = place::onto_running(&root, &old_os, &new_os, &placed)?;
        for kind in refreshed {
            tracing::info!(
                key = kind.key(),
                "extension images merged on the running system"
            );
        }
        if old_os.netplan != new_os.netplan {
            os_config::netplan::apply_running(&root, new_os.netplan.as_ref())?;
        }
        Ok(())
    })
    .await?;
    phase.set(1);
    phase.done();
    script_phase("postConfigure", &hc.scripts.post_configure, &env).await?;

    let mut hc = hc;
    hc.os = extensions::with_paths(&hc.os, &staged);
    let mut status = next_status(current);
    status.spec = Some(hc);
    Ok(StepOutcome {
        status: Some(status),
        reboot: None,
        image_hash: current.image_hash.clone(),
        servicing_kind: Some(ServicingKind::RuntimeUpdate),
        keep_last_error: false,
    })
}
