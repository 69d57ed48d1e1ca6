//! Following md syncs to their end: the initial resync after
//! `mdadm --create` (up to `storage.raid.syncTimeout`) and the recovery
//! after `rebuild-raid` re-adds a member. Progress is bytes over all the
//! arrays followed, from sysfs `md/sync_completed` (an array whose sync
//! is delayed behind another on the same disks counts as not started; one
//! that is idle and whole as done).

use std::path::Path;
use std::time::{Duration, Instant};

use trident_host::{Subkind, TridentError};
use trident_telemetry::progress::{Phase, Unit};

use super::sysfs::{self, ArrayState, Kernel};

/// How often sysfs is read while waiting.
const POLL: Duration = Duration::from_millis(500);

/// How long a sync may take.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    /// All of it (`syncTimeout`).
    Total(Duration),
    /// No limit once running, but each array must start syncing (or be
    /// whole) within this: a member md did not take would wait forever.
    StartWithin(Duration),
}

/// An array being followed: its id and md device name (`md127`).
#[derive(Debug, Clone)]
pub struct Followed {
    pub id: String,
    pub md: String,
    pub size: u64,
}

/// Bytes done of one array: the sync's fraction of its usable size
/// (`sync_completed` counts sectors per member, which for parity levels
/// is not the array's size).
fn done_bytes(state: Option<&ArrayState>, size: u64) -> u64 {
    match state {
        None => 0,
        Some(s) if s.syncing() => s.sync_progress.map_or(0, |(done, total)| {
            (u128::from(done.min(total)) * u128::from(size) / u128::from(total.max(1))) as u64
        }),
        Some(s) if s.degraded > 0 => 0,
        Some(_) => size,
    }
}

/// Whether an array's sync is over: idle, whole.
fn finished(state: Option<&ArrayState>) -> bool {
    state.is_some_and(|s| !s.syncing() && s.degraded == 0)
}

/// The md devices of `arrays` (id, name, size): `/dev/md/root` → `md127`.
pub fn md_names(
    kernel: &Kernel,
    arrays: &[(String, String, u64)],
    subkind: Subkind,
) -> Result<Vec<Followed>, TridentError> {
    arrays
        .iter()
        .map(|(id, name, size)| {
            let md = kernel.md_of(name).ok_or_else(|| {
                TridentError::new(
                    subkind,
                    format!("RAID array '{id}': /dev/md/{name} does not exist"),
                )
            })?;
            Ok(Followed {
                id: id.clone(),
                md,
                size: *size,
            })
        })
        .collect()
}

/// Follows `arrays` until every one is idle and whole, as phase
/// `phase_id` (bytes over all of them); fails with `subkind` past
/// `limit`, naming each array's state.
pub fn follow(
    sys: &Path,
    arrays: &[Followed],
    limit: Limit,
    phase_id: &str,
    name: &str,
    subkind: Subkind,
) -> Result<(), TridentError> {
    let total: u64 = arrays.iter().map(|a| a.size).sum();
    let phase = Phase::start(phase_id, name, Unit::Bytes, Some(total));
    let started = Instant::now();
    loop {
        let states: Vec<Option<ArrayState>> = arrays
            .iter()
            .map(|a| sysfs::array_state(sys, &a.md))
            .collect();
        let done: u64 = arrays
            .iter()
            .zip(&states)
            .map(|(a, s)| done_bytes(s.as_ref(), a.size))
            .sum();
        phase.set(done);
        if states.iter().all(|s| finished(s.as_ref())) {
            phase.set(total);
            phase.done();
            tracing::info!(
                arrays = arrays.len(),
                seconds = started.elapsed().as_secs(),
                "RAID arrays in sync"
            );
            return Ok(());
        }
        let stuck =
            |s: &Option<ArrayState>| s.as_ref().is_none_or(|s| !s.syncing() && s.degraded > 0);
        let over = match limit {
            Limit::Total(timeout) => started.elapsed() >= timeout,
            Limit::StartWithin(wait) => started.elapsed() >= wait && states.iter().any(stuck),
        };
        if over {
            phase.fail();
            let report: Vec<String> = arrays
                .iter()
                .zip(&states)
                .map(|(a, s)| {
                    format!(
                        "{}: {}",
                        a.id,
                        s.as_ref()
                            .map_or_else(|| "gone".to_owned(), ArrayState::summary)
                    )
                })
                .collect();
            let why = match limit {
                Limit::Total(timeout) => format!(
                    "The RAID arrays did not finish syncing within {} s (storage.raid.syncTimeout)",
                    timeout.as_secs()
                ),
                Limit::StartWithin(wait) => format!(
                    "A RAID array did not start recovering within {} s",
                    wait.as_secs()
                ),
            };
            return Err(TridentError::new(
                subkind,
                format!("{why}: {}", report.join(", ")),
            ));
        }
        std::thread::sleep(POLL);
    }
}
