//! The booted OS's datastore. Each root volume has its own
//! `/var/lib/trident`, so the tridentd of the OS that boots next only knows
//! what servicing did if its volume holds the datastore saying so:
//!
//! * an install runs on installer media; finalize writes a new datastore
//!   into volume A's root holding the finalized Host Status and this
//!   operation, ended as succeeded ([`hand_off_install`]);
//! * an A/B update, a manual rollback and a failed commit boot the other
//!   volume of the pair; before the reboot its root gets a copy of this
//!   datastore (status and operation history) with the state the runner is
//!   about to record ([`hand_over`]), so its commit service finds the update
//!   finalized, or the failed update with its error.
//!
//! The datastore goes to `trident.datastorePath` of the Host Configuration,
//! else `/var/lib/trident/datastore.sqlite`, on the filesystem of the
//! configuration that holds that path (the root, or one of its own such as
//! upstream samples' `/var/lib/trident`). On a filesystem outside the A/B
//! pairs, which both volumes share, an A/B handover has nothing to do: the
//! booted OS reads what this daemon records there. A root volume with no
//! filesystem we know (test fixtures) gets none.
//!
//! The telemetry journal goes with it, at the same moments, to
//! `/var/lib/trident/journal` (where the booted OS's tridentd keeps it):
//! merged with the journal that volume already holds, so the volume that
//! boots holds the host's whole history, each record once, with the end of
//! this operation as recorded here (`Bus::hand_over_journal`). A journal
//! that cannot be written fails the handover, as a datastore would.

use std::path::{Path, PathBuf};

use trident_host::config::HostConfiguration;
use trident_host::datastore::{Datastore, OperationEnd, OperationResult};
use trident_host::status::{AbVolume, HostStatus};
use trident_host::{ContextExt, ResultExt, Subkind, TridentError};
use trident_proto::v1::{RebootStatus, StatusCode};
use trident_telemetry::journal::HandedEnd;

use crate::block_device::{BlockDevices, Targets};
use crate::machinery::Engine;
use crate::machinery::runner::StepContext;
use crate::new_root::NewRoot;
use crate::new_root::root_dir::RootDir;
use trident_host::datastore::OperationStart;

/// Where the booted OS's tridentd looks by default.
const DEFAULT_DATASTORE: &str = "var/lib/trident/datastore.sqlite";
/// Where the booted OS's tridentd keeps its telemetry journal by default.
const DEFAULT_JOURNAL: &str = "var/lib/trident/journal";

/// Writes `status` (install finalized) into volume A's root as a new
/// datastore. Blocking.
pub fn hand_off_install(
    engine: &Engine,
    status: &HostStatus,
    op: &OperationStart<'_>,
) -> Result<(), TridentError> {
    let end = OperationEnd {
        result: OperationResult::Success,
        error: None,
    };
    let write = |path: &Path| {
        let mut ds = Datastore::open(path)?;
        ds.operation_started(op)?;
        ds.commit(Some(status), Some(op.id), Some(&end))
    };
    into_root(
        engine,
        status,
        AbVolume::VolumeA,
        Targets::Install,
        (op, &end),
        write,
    )
}

/// Copies this datastore into `volume`'s root and records there `status`
/// and the end of operation `op` (what the runner records here once the
/// step returns). Blocking.
pub fn hand_over(
    engine: &Engine,
    status: &HostStatus,
    volume: AbVolume,
    op: &OperationStart<'_>,
    end: &OperationEnd,
) -> Result<(), TridentError> {
    let write = |path: &Path| {
        engine.with_datastore(|ds| ds.snapshot_to(path))?;
        Datastore::open(path)?.commit(Some(status), Some(op.id), Some(end))
    };
    into_root(
        engine,
        status,
        volume,
        Targets::AbUpdate { volume },
        (op, end),
        write,
    )
}

/// Mounts the root filesystem of `volume`, runs `write` on its datastore
/// path, hands the journal over with the operation's `end`, unmounts.
fn into_root(
    engine: &Engine,
    status: &HostStatus,
    volume: AbVolume,
    which: Targets,
    (op, end): (&OperationStart<'_>, &OperationEnd),
    write: impl FnOnce(&Path) -> Result<(), TridentError>,
) -> Result<(), TridentError> {
    let Some(hc) = status.spec.as_ref() else {
        return Ok(());
    };
    let relative = hc
        .datastore_path()
        .map(|p| p.trim_start_matches('/').to_owned())
        .unwrap_or_else(|| DEFAULT_DATASTORE.to_owned());
    let devices = BlockDevices::new(hc, status)?;
    let mut targets = devices.write_targets(which)?;
    // The filesystems the datastore and the journal live on: the root, or
    // one of their own (upstream's samples mount /var/lib/trident apart).
    let holders = [relative.as_str(), DEFAULT_JOURNAL].map(|p| holder(hc, p));
    if !targets.contains_key(&holders[0]) {
        // Not on an A/B volume: both volumes share it, and the booted OS's
        // tridentd reads what this one records there.
        tracing::info!(filesystem = %holders[0], %volume,
            "the datastore is on a filesystem both volumes share: nothing to hand over");
        return Ok(());
    }
    // With the filesystems they are mounted on (`/var` under
    // `/var/lib/trident`): a read-only (verity) root cannot make the
    // mount point that a filesystem between them holds.
    targets.retain(|mount_point, _| {
        let under = format!("{}/", mount_point.trim_end_matches('/'));
        mount_point == "/"
            || holders
                .iter()
                .any(|h| h == mount_point || h.starts_with(&under))
    });
    engine.clear_stale_new_roots()?;
    let path = engine.new_root_dir(&format!("{}-datastore", op.id));
    let Some(root) = NewRoot::mount(hc, &devices, &targets, volume, &path)? else {
        return Ok(());
    };
    let written = datastore_file(root.dir(), &relative)
        .and_then(|file| write(&file))
        .with_context(|| format!("Writing the datastore /{relative} of {volume}"))
        .and_then(|()| {
            let journal = journal_dir(root.dir())?;
            engine
                .bus()
                .hand_over_journal(&journal, Some(handed_end(op.id, end)))
                .structured(Subkind::Io)
                .with_context(|| {
                    format!("Writing the telemetry journal /{DEFAULT_JOURNAL} of {volume}")
                })
        });
    let unmounted = root.unmount();
    let journal = written.and_then(|summary| unmounted.map(|()| summary))?;
    tracing::info!(
        path = %format!("/{relative}"),
        %volume,
        journal_records = journal.records,
        journal_duplicates = journal.duplicates,
        journal_dropped = journal.dropped,
        "datastore and journal handed to the volume that boots next"
    );
    Ok(())
}

/// The mount point of the Host Configuration's filesystem holding
/// `relative` (a path under `/`): the longest mount point that is a
/// prefix of it, else `/`.
fn holder(hc: &HostConfiguration, relative: &str) -> String {
    let path = format!("/{relative}");
    hc.storage
        .filesystems
        .iter()
        .map(|f| f.mount_point.path().trim_end_matches('/'))
        .filter(|mp| !mp.is_empty() && (path == *mp || path.starts_with(&format!("{mp}/"))))
        .max_by_key(|mp| mp.len())
        .map_or_else(|| "/".to_owned(), str::to_owned)
}

/// The operation's end as the journal records it: the volume boots next,
/// so a reboot is required.
fn handed_end(operation_id: &str, end: &OperationEnd) -> HandedEnd {
    let result = match end.result {
        OperationResult::Success => StatusCode::Success,
        _ => StatusCode::Failure,
    };
    HandedEnd {
        operation_id: operation_id.to_owned(),
        result,
        reboot_status: RebootStatus::RebootRequired,
        error: end.error.as_ref().map(|e| (e.to_proto(), e.to_report())),
    }
}

/// The host's path of the datastore `relative` (a path of the root) in
/// `root`: its directory resolved (and made) inside the root, its old copy,
/// WAL and shared memory removed (a symlink there is removed, never
/// followed), so SQLite creates the file where the booted OS opens it.
fn datastore_file(root: &RootDir, relative: &str) -> Result<PathBuf, TridentError> {
    let path = Path::new("/").join(relative);
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(TridentError::new(
            Subkind::Io,
            format!("/{relative} names no file"),
        ));
    };
    let host_dir = root
        .host_dir(dir)
        .structured_msg(Subkind::Io, format!("Cannot make {}", dir.display()))?;
    for stale in ["", "-wal", "-shm"] {
        let mut stale_name = name.to_os_string();
        stale_name.push(stale);
        root.remove_file(&dir.join(&stale_name)).structured_msg(
            Subkind::Io,
            format!("Cannot remove the old /{relative}{stale}"),
        )?;
    }
    Ok(host_dir.join(name))
}

/// The host's path of the booted OS's journal directory in `root`: its
/// parent resolved (and made) inside the root; the handover replaces the
/// directory itself by renames, which follow no symlink.
fn journal_dir(root: &RootDir) -> Result<PathBuf, TridentError> {
    let journal = Path::new("/").join(DEFAULT_JOURNAL);
    let parent = journal.parent().unwrap_or(Path::new("/"));
    let host_dir = root
        .host_dir(parent)
        .structured_msg(Subkind::Io, format!("Cannot make {}", parent.display()))?;
    Ok(host_dir.join(journal.file_name().unwrap_or_default()))
}

/// [`hand_over`] from a step about to succeed, off the async runtime.
pub async fn hand_over_success(
    ctx: &StepContext,
    status: &HostStatus,
    volume: AbVolume,
) -> Result<(), TridentError> {
    let end = OperationEnd {
        result: OperationResult::Success,
        error: None,
    };
    hand_over_blocking(ctx, status, volume, end).await
}

/// [`hand_over`] on the blocking pool.
pub async fn hand_over_blocking(
    ctx: &StepContext,
    status: &HostStatus,
    volume: AbVolume,
    end: OperationEnd,
) -> Result<(), TridentError> {
    let (engine, status, op) = (ctx.engine.clone(), status.clone(), ctx.clone());
    crate::machinery::step::blocking(move || hand_over(&engine, &status, volume, &op.ids(), &end))
        .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests fail loudly on purpose
mod tests {
    use super::*;
    use crate::new_root::hostile_root::HostileRoot;

    /// Issue 37: the datastore and the journal handed to the volume that
    /// boots next land inside its root whatever symlinks lead out of it
    /// (`/var/lib/trident` a link, the datastore file a link).
    #[test]
    fn the_datastore_and_journal_stay_inside_a_root_whose_links_point_out() {
        for root in HostileRoot::variants(DEFAULT_DATASTORE) {
            let dir = root.dir();
            let file = datastore_file(&dir, DEFAULT_DATASTORE).unwrap();
            let mut ds = Datastore::open(&file).unwrap();
            ds.commit(Some(&HostStatus::default()), None, None).unwrap();
            drop(ds);
            let journal = journal_dir(&dir).unwrap();
            std::fs::create_dir(&journal).unwrap();
            std::fs::write(journal.join("segment"), b"records").unwrap();
            root.assert_outside_untouched();
            // Where the booted OS's tridentd opens them.
            let seen = dir.host_path(Path::new(DEFAULT_DATASTORE)).unwrap();
            assert!(seen.starts_with(dir.path()), "{}", root.variant);
            assert!(
                Datastore::open_read_only(&seen)
                    .unwrap()
                    .host_status()
                    .is_ok(),
                "{}",
                root.variant
            );
            let seen = dir.host_path(Path::new("/var/lib/trident/journal/segment"));
            assert!(seen.is_some(), "{}", root.variant);
        }
    }
}
