//! The finalize of an A/B update and of a manual rollback: the staged
//! state handed to the volume that boots next, then the next boot set to
//! it, as one phase; the reboot request and what `Completed` says follow
//! from the kind of switch.

use trident_host::status::{HostStatus, ServicingState};
use trident_host::{Subkind, TridentError};
use trident_proto::v1::{RebootHandling, ServicingKind};
use trident_telemetry::progress::{Phase, Unit};

use super::handoff;
use crate::machinery::runner::{RebootRequest, StepContext, StepOutcome};
use crate::machinery::step::next_status;

/// What differs between the finalizes of an A/B update and a rollback.
#[derive(Debug, Clone, Copy)]
pub(super) struct Switch {
    /// The RPC, for the wrong-state error (`UpdateFinalize`).
    pub rpc: &'static str,
    /// The state the host must be staged in, and what it is called in the
    /// wrong-state error ("a staged A/B update").
    pub staged: ServicingState,
    pub staged_name: &'static str,
    /// The subkind of the wrong-state error.
    pub wrong_state: Subkind,
    /// The finalized state recorded (and handed over).
    pub finalized: ServicingState,
    /// The phase's label: which volume the next boot switches to.
    pub phase_label: &'static str,
    /// The reboot reason, before ": boot <volume>".
    pub reason: &'static str,
    /// The staged image becomes `Completed.image_hash` (an update), or is
    /// dropped, the target volume's image becoming active at commit (a
    /// rollback).
    pub keeps_staged_image: bool,
    pub servicing_kind: ServicingKind,
}

/// Finalizes the switch `current` is staged for: the other volume boots
/// next (with the finalized state already in its datastore), after the
/// reboot the outcome requests.
pub(super) async fn finalize(
    ctx: &StepContext,
    current: &HostStatus,
    handling: RebootHandling,
    switch: Switch,
) -> Result<StepOutcome, TridentError> {
    let Some(active) = current
        .ab_active_volume
        .filter(|_| current.servicing_state == switch.staged)
    else {
        return Err(TridentError::new(
            switch.wrong_state,
            format!(
                "{} needs {}; the host is '{}'",
                switch.rpc, switch.staged_name, current.servicing_state
            ),
        ));
    };
    let phase = Phase::start("finalize", switch.phase_label, Unit::Items, Some(1));
    let mut status = next_status(current);
    status.servicing_state = switch.finalized;
    if !switch.keeps_staged_image {
        status.staged_image_hash = None;
    }
    // The next volume's tridentd must find the servicing finalized (a
    // rollback target's own datastore is from before the update); handed
    // over before the next boot is set, so a failed copy leaves the next
    // boot on the running volume.
    handoff::hand_over_success(ctx, &status, active.other()).await?;
    ctx.engine
        .boot
        .set_next_boot(current, active.other(), &ctx.operation_id)?;
    phase.set(1);
    phase.done();
    Ok(StepOutcome {
        status: Some(status),
        reboot: Some(RebootRequest {
            reason: format!("{}: boot {}", switch.reason, active.other()),
            handling,
        }),
        image_hash: current
            .staged_image_hash
            .clone()
            .filter(|_| switch.keeps_staged_image),
        servicing_kind: Some(switch.servicing_kind),
        keep_last_error: false,
    })
}
