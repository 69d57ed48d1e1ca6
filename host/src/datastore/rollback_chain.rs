//! The manual-rollback chain, computed from the Host Status history as
//! upstream Trident computes it (v0.27.0, `engine/manual_rollback/utils.rs`,
//! `ManualRollbackContext::new`), so a host handed from one agent to the
//! other offers the same rollbacks.
//!
//! The history, newest first, is cut into operations: a `provisioned` row
//! closes the operation whose staged row came after it (newer), and is the
//! state that operation rolls back to. Parsing stops at the second A/B
//! update (both volumes replaced), at an unreadable row, at a health-check
//! auto-rollback, at an initial install, and at an operation whose rows
//! come from an agent older than 0.21.0 or whose staged row carries a last
//! error. Manual rollbacks are removed together with the update each one
//! undid. What remains, newest first, is the chain.

use crate::config::HostConfiguration;
use crate::error::{Subkind, TridentError};
use crate::status::{AbVolume, HostStatus, ServicingState};

/// The oldest upstream version whose Host Status rows take part in a
/// rollback (upstream's `MINIMUM_ROLLBACK_TRIDENT_VERSION`).
const MINIMUM_VERSION: (u64, u64, u64) = (0, 21, 0);

/// What one history row tells the chain (`None` for a row that could not
/// be read: parsing stops there, as upstream's does).
#[derive(Debug, Clone)]
pub struct ChainRow {
    pub servicing_state: ServicingState,
    /// `tridentVersion` as the row spells it (empty when it has none).
    pub trident_version: String,
    pub has_last_error: bool,
    pub spec: Option<HostConfiguration>,
    pub ab_active_volume: Option<AbVolume>,
    pub install_index: u32,
}

impl ChainRow {
    pub fn of(status: &HostStatus, trident_version: &str) -> Self {
        Self {
            servicing_state: status.servicing_state,
            trident_version: trident_version.to_owned(),
            has_last_error: status.last_error.is_some(),
            spec: status.spec.clone(),
            ab_active_volume: status.ab_active_volume,
            install_index: status.install_index,
        }
    }
}

/// The kind of a rollback (upstream's `ManualRollbackKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollbackKind {
    /// Undoes an A/B update: boots the other volume.
    Ab,
    /// Undoes a runtime update, on the running volume.
    Runtime,
}

impl RollbackKind {
    /// Upstream's spelling (`ab`, `runtime`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Ab => "ab",
            Self::Runtime => "runtime",
        }
    }
}

/// One available rollback (upstream's `ManualRollbackChainItem`).
#[derive(Debug, Clone)]
pub struct RollbackChainItem {
    pub kind: RollbackKind,
    /// The configuration the rollback restores.
    pub spec: Option<HostConfiguration>,
    /// The active volume the rollback restores.
    pub ab_active_volume: Option<AbVolume>,
    pub install_index: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OperationKind {
    Unknown,
    Initial,
    AbUpdate,
    RuntimeUpdate,
    AbManualRollback,
    RuntimeManualRollback,
}

#[derive(Debug, Clone)]
struct Operation<'a> {
    kind: OperationKind,
    rollback_row: Option<&'a ChainRow>,
    operation_row: Option<&'a ChainRow>,
}

impl Operation<'_> {
    fn new() -> Self {
        Self {
            kind: OperationKind::Unknown,
            rollback_row: None,
            operation_row: None,
        }
    }

    /// Whether this operation may be rolled back and parsing go on past it.
    fn keep_parsing(&self) -> bool {
        if matches!(self.kind, OperationKind::Unknown | OperationKind::Initial) {
            return false;
        }
        if self
            .rollback_row
            .is_some_and(|row| !version_allows_rollback(&row.trident_version))
        {
            return false;
        }
        let Some(operation) = self.operation_row else {
            return false;
        };
        version_allows_rollback(&operation.trident_version) && !operation.has_last_error
    }
}

/// `tridentVersion` is semver and at least 0.21.0, pre-release and build
/// ignored (upstream's `is_trident_version_compatible`; a version that is
/// not semver, or none, is incompatible).
pub fn version_allows_rollback(version: &str) -> bool {
    semver_core(version).is_some_and(|core| core >= MINIMUM_VERSION)
}

/// `major.minor.patch` of a semver version (`-pre` and `+build` allowed).
fn semver_core(version: &str) -> Option<(u64, u64, u64)> {
    let (rest, build) = match version.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (version, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let identifiers_ok = |text: &str| {
        text.split('.')
            .all(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    };
    if !pre.is_none_or(identifiers_ok) || !build.is_none_or(identifiers_ok) {
        return None;
    }
    let number = |part: &str| {
        let leading_zero = part.len() > 1 && part.starts_with('0');
        if part.is_empty() || leading_zero || !part.chars().all(|c| c.is_ascii_digit()) {
            None
        } else {
            part.parse::<u64>().ok()
        }
    };
    let mut parts = core.split('.');
    let major = number(parts.next()?)?;
    let minor = number(parts.next()?)?;
    let patch = number(parts.next()?)?;
    parts.next().is_none().then_some((major, minor, patch))
}

fn unexpected(reason: &str) -> TridentError {
    TridentError::new(
        Subkind::InvalidRollbackExpectation,
        format!("Invalid rollback expectation: {reason}"),
    )
}

/// The chain of available rollbacks, newest first, from the history
/// (newest first; `None` for a row that could not be read).
pub fn rollback_chain(
    history: &[Option<ChainRow>],
) -> Result<Vec<RollbackChainItem>, TridentError> {
    match history.first() {
        Some(None) => return Err(unexpected("first host status was not parsed correctly")),
        Some(Some(row)) if row.servicing_state != ServicingState::Provisioned => {
            return Ok(Vec::new());
        }
        _ => {}
    }
    let mut operations: Vec<Operation<'_>> = Vec::new();
    let mut active_volume_changes = 0;
    let mut current = Operation::new();
    let mut filters: Vec<OperationKind> = Vec::new();
    for row in history.iter().skip(1) {
        let Some(row) = row else { break };
        match row.servicing_state {
            ServicingState::Provisioned => {
                if current.kind == OperationKind::Unknown {
                    // A repeated provisioned row: no operation between them.
                    continue;
                }
                if keep_operation(current.kind, &mut filters)? {
                    current.rollback_row = Some(row);
                    if !current.keep_parsing() {
                        break;
                    }
                    operations.push(current.clone());
                }
                current = Operation::new();
            }
            ServicingState::CleanInstallStaged => {
                current.kind = OperationKind::Initial;
                current.rollback_row = None;
                current.operation_row = Some(row);
            }
            ServicingState::AbUpdateStaged => {
                current.kind = OperationKind::AbUpdate;
                current.operation_row = Some(row);
                active_volume_changes += 1;
                if active_volume_changes >= 2 {
                    break;
                }
            }
            ServicingState::RuntimeUpdateStaged => {
                current.kind = OperationKind::RuntimeUpdate;
                current.operation_row = Some(row);
            }
            ServicingState::ManualRollbackAbStaged => {
                current.kind = OperationKind::AbManualRollback;
                current.operation_row = Some(row);
            }
            ServicingState::ManualRollbackRuntimeStaged => {
                current.kind = OperationKind::RuntimeManualRollback;
                current.operation_row = Some(row);
            }
            ServicingState::AbUpdateHealthCheckFailed => break,
            _ => {}
        }
    }
    operations
        .iter()
        .map(|op| {
            let Some(rollback) = op.rollback_row else {
                return Err(unexpected(
                    "rollback_host_status must be present for rollbackable operation",
                ));
            };
            let kind = match op.kind {
                OperationKind::AbUpdate => RollbackKind::Ab,
                OperationKind::RuntimeUpdate => RollbackKind::Runtime,
                _ => {
                    return Err(unexpected(
                        "unexpected operation kind for rollback operation",
                    ));
                }
            };
            Ok(RollbackChainItem {
                kind,
                spec: rollback.spec.clone(),
                ab_active_volume: rollback.ab_active_volume,
                install_index: rollback.install_index,
            })
        })
        .collect()
}

/// Whether an operation joins the list: a manual rollback does not, nor
/// the update it undid (upstream's `add_operation_to_list`).
fn keep_operation(
    kind: OperationKind,
    filters: &mut Vec<OperationKind>,
) -> Result<bool, TridentError> {
    Ok(match kind {
        OperationKind::AbManualRollback | OperationKind::RuntimeManualRollback => {
            filters.insert(0, kind);
            false
        }
        OperationKind::AbUpdate => match filters.first() {
            Some(OperationKind::AbManualRollback) => {
                filters.remove(0);
                false
            }
            Some(OperationKind::RuntimeManualRollback) => {
                return Err(unexpected(
                    "Unexpected host_status sequence: A/B update operation found during runtime manual rollback",
                ));
            }
            _ => true,
        },
        OperationKind::RuntimeUpdate => match filters.first() {
            Some(OperationKind::AbManualRollback) => false,
            Some(OperationKind::RuntimeManualRollback) => {
                filters.remove(0);
                false
            }
            _ => true,
        },
        _ if !filters.is_empty() => {
            return Err(unexpected(
                "Unexpected host_status sequence: non-update operation found during manual rollback",
            ));
        }
        _ => true,
    })
}

#[cfg(test)]
#[path = "rollback_chain_tests.rs"]
mod tests;
