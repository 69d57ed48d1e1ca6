//! The installed OS's datastore. An install runs on installer media; the
//! OS it installs has its own tridentd, whose commit service must find
//! the install finalized. So finalize writes a datastore into the new
//! root (at `trident.datastorePath`, else `/var/lib/trident/datastore.sqlite`)
//! holding the finalized Host Status and this operation, ended as
//! succeeded. A root volume with no filesystem we know (test fixtures)
//! gets none.

use std::path::Path;

use trident_host::datastore::{Datastore, OperationEnd, OperationResult};
use trident_host::status::{AbVolume, HostStatus};
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};

use super::layout::{self, Targets};
use super::{Engine, OperationIds};
use crate::servicing::new_root::NewRoot;

/// Where the installed OS's tridentd looks by default.
const DEFAULT_DATASTORE: &str = "var/lib/trident/datastore.sqlite";

/// Writes `status` (finalized) into volume A's root. Blocking.
pub fn hand_off(
    engine: &Engine,
    status: &HostStatus,
    op: &OperationIds<'_>,
) -> Result<(), TridentError> {
    let Some(hc) = status.spec.as_ref() else {
        return Ok(());
    };
    let mut targets = layout::write_targets(hc, &status.layout, Targets::Install)?;
    targets.retain(|mount_point, _| mount_point == "/");
    let path = engine.new_root_dir(&format!("{}-datastore", op.id));
    let Some(root) = NewRoot::mount(hc, &status.layout, &targets, AbVolume::VolumeA, &path)? else {
        return Ok(());
    };
    let relative = hc
        .datastore_path()
        .map(|p| p.trim_start_matches('/').to_owned())
        .unwrap_or_else(|| DEFAULT_DATASTORE.to_owned());
    let written = write(&root.path.join(&relative), status, op)
        .with_context(|| format!("Writing the installed OS's datastore /{relative}"));
    let unmounted = root.unmount();
    written.and(unmounted)?;
    tracing::info!(path = %format!("/{relative}"), "datastore handed to the installed OS");
    Ok(())
}

fn write(path: &Path, status: &HostStatus, op: &OperationIds<'_>) -> Result<(), TridentError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).structured(Subkind::Io)?;
    }
    for stale in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{stale}", path.display()));
    }
    let mut ds = Datastore::open(path)?;
    ds.operation_started(op.id, op.kind, op.rpc, op.trace_id)?;
    let end = OperationEnd {
        result: OperationResult::Success,
        error: None,
    };
    ds.commit(Some(status), Some(op.id), Some(&end))
}
