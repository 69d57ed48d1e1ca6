//! Read-only answers: configurations, required servicing type.

use trident_host::TridentError;
use trident_host::config::HostConfiguration;
use trident_host::status::{HostStatus, ServicingState};
use trident_proto::v1preview::ServicingType;

use super::update::{Change, classify};

/// The configuration the host runs (provisioned), if any.
pub fn provisioned_config(status: &HostStatus) -> Option<&HostConfiguration> {
    match status.servicing_state {
        ServicingState::Provisioned => status.spec.as_ref(),
        // While an update or a rollback is under way (and after one failed,
        // until the old volume settles it), `specOld` is what runs, as
        // upstream records it.
        ServicingState::AbUpdateStaged
        | ServicingState::AbUpdateFinalized
        | ServicingState::ManualRollbackAbStaged
        | ServicingState::ManualRollbackAbFinalized => status.spec_old.as_ref(),
        // A failed update of an older tridentd had put it in `spec` already.
        ServicingState::AbUpdateHealthCheckFailed => {
            status.spec_old.as_ref().or(status.spec.as_ref())
        }
        _ => None,
    }
}

/// The configuration of the servicing in progress, if any.
pub fn servicing_config(status: &HostStatus) -> Option<&HostConfiguration> {
    match status.servicing_state {
        ServicingState::CleanInstallStaged
        | ServicingState::CleanInstallFinalized
        | ServicingState::AbUpdateStaged
        | ServicingState::AbUpdateFinalized
        | ServicingState::ManualRollbackAbStaged
        | ServicingState::ManualRollbackAbFinalized => status.spec.as_ref(),
        _ => None,
    }
}

/// GetRequiredServicingType for a validated configuration.
pub fn required_servicing(
    status: &HostStatus,
    new: &HostConfiguration,
) -> Result<ServicingType, TridentError> {
    let Some(current) = provisioned_config(status) else {
        return Ok(ServicingType::CleanInstall);
    };
    Ok(match classify(current, new)? {
        Change::None => ServicingType::NoActiveServicing,
        Change::Runtime => ServicingType::RuntimeUpdate,
        Change::AbUpdate => ServicingType::AbUpdate,
    })
}
