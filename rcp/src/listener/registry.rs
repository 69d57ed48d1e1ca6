//! The listener's registry: the live host of each identity, the order of
//! its events, and the rule for a second connection of the same identity
//! (see [`crate::duplicates`]).
//!
//! Every change of one identity's entry happens under that identity's
//! *turn* (an async lock), held across the wait for a replaced connection
//! to close: so a replaced host's `Disconnected` is sent only after its
//! connection and every stream through it are gone, and always before its
//! successor's `Connected`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedMutexGuard, mpsc, watch};
use tokio::time::Instant;

use super::{Event, Host};
use crate::duplicates::{DuplicatePolicy, Duplicates, Verdict};
use crate::raw::RawSlot;
use crate::sever::{Liveness, Severable};

/// How long a replaced or lost connection's streams may take to end after
/// the connection was shut down (they end at their next read or write).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Live hosts by identity, and the event channel. The channel is unbounded
/// because events are few and small (one per connect/disconnect) and the
/// orchestrator must see every one: dropping a "connected" would lose a host.
#[derive(Debug)]
pub(super) struct Registry {
    next_generation: u64,
    hosts: HashMap<String, Live>,
    duplicates: Duplicates,
    turns: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
    events: mpsc::UnboundedSender<Event>,
}

pub(super) type Shared = Arc<Mutex<Registry>>;

/// One connection of a host: the means to cut it, and to see it gone.
#[derive(Debug)]
pub(super) struct Conn {
    pub(super) severable: Severable,
    pub(super) liveness: Liveness,
}

impl Conn {
    fn is_open(&mut self) -> bool {
        !self.liveness.is_done() && !self.severable.peer_closed()
    }
}

#[derive(Debug)]
struct Live {
    generation: u64,
    addr: SocketAddr,
    /// The connection serving the host now (upstream protocol: its latest).
    current: Conn,
    /// Ours: tells the tunnel's task it was replaced.
    replace: Option<watch::Sender<bool>>,
    /// Upstream protocol: the host's slot and its closed signal.
    raw: Option<(Arc<RawSlot>, watch::Sender<bool>)>,
}

/// What a newcomer gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admission {
    /// No connection of its identity: it is the host.
    Fresh,
    /// An older one is open: it replaces it.
    Replace,
    /// The older one is closing already (its peer closed it).
    Successor,
    /// A duplicate identity backing off: held unused until then.
    Hold(Instant),
}

impl Registry {
    pub(super) fn shared(events: mpsc::UnboundedSender<Event>, policy: DuplicatePolicy) -> Shared {
        Arc::new(Mutex::new(Registry {
            next_generation: 1,
            hosts: HashMap::new(),
            duplicates: Duplicates::new(policy),
            turns: HashMap::new(),
            events,
        }))
    }

    pub(super) fn send(&self, event: Event) {
        // The receiver is gone only when the listener was dropped.
        let _ = self.events.send(event);
    }
}

/// Waits for `id`'s turn (see the module docs).
pub(super) async fn turn(shared: &Shared, id: &str) -> Option<OwnedMutexGuard<()>> {
    let lock = {
        let mut registry = shared.lock().ok()?;
        Arc::clone(registry.turns.entry(id.to_owned()).or_default())
    };
    Some(lock.lock_owned().await)
}

/// Decides what a newcomer of `id` from `addr` gets (under `id`'s turn);
/// reports a duplicate identity once.
pub(super) fn admit(shared: &Shared, id: &str, addr: SocketAddr) -> Admission {
    let Ok(mut guard) = shared.lock() else {
        return Admission::Fresh;
    };
    let registry = &mut *guard;
    let Some(live) = registry.hosts.get_mut(id) else {
        return Admission::Fresh;
    };
    if !live.current.is_open() {
        return Admission::Successor;
    }
    let holder = live.addr;
    match registry.duplicates.newcomer(id, Instant::now()) {
        Verdict::Replace => Admission::Replace,
        Verdict::Hold { until } => Admission::Hold(until),
        Verdict::Duplicate {
            replacements,
            until,
        } => {
            let backoff = until.saturating_duration_since(Instant::now());
            tracing::warn!(host = id, %holder, newcomer = %addr, replacements,
                "duplicate host identity: keeping the connection it has, holding newcomers");
            registry.send(Event::Duplicate {
                host: id.to_owned(),
                addr: holder,
                other_addr: addr,
                replacements,
                backoff,
            });
            Admission::Hold(until)
        }
    }
}

/// Takes the next generation number.
pub(super) fn next_generation(shared: &Shared) -> Option<u64> {
    let mut registry = shared.lock().ok()?;
    let generation = registry.next_generation;
    registry.next_generation += 1;
    Some(generation)
}

/// Records `host` as its identity's live connection and reports it.
pub(super) fn register(
    shared: &Shared,
    host: Host,
    current: Conn,
    replace: Option<watch::Sender<bool>>,
    raw: Option<(Arc<RawSlot>, watch::Sender<bool>)>,
) {
    let Ok(mut registry) = shared.lock() else {
        return;
    };
    tracing::info!(host = host.id(), addr = %host.addr(), generation = host.generation(), "host connected");
    registry.hosts.insert(
        host.id().to_owned(),
        Live {
            generation: host.generation(),
            addr: host.addr(),
            current,
            replace,
            raw,
        },
    );
    registry.send(Event::Connected(host));
}

/// Upstream protocol: a connection of a live host (its agent dialled
/// again): it becomes the host's current one. The host's slot and
/// generation, or the connection back if the host is not live.
pub(super) fn redialled(
    shared: &Shared,
    id: &str,
    conn: Conn,
) -> Result<(Arc<RawSlot>, u64), Conn> {
    let Ok(mut registry) = shared.lock() else {
        return Err(conn);
    };
    match registry.hosts.get_mut(id) {
        Some(Live {
            raw: Some((slot, _)),
            current,
            generation,
            ..
        }) => {
            *current = conn;
            Ok((Arc::clone(slot), *generation))
        }
        _ => Err(conn),
    }
}

/// Ends `id`'s live host (only generation `only`, if given): shuts its
/// connection down, waits until it and every stream through it are gone,
/// then reports `Disconnected` with `reason`. Call under `id`'s turn.
pub(super) async fn retire(shared: &Shared, id: &str, only: Option<u64>, reason: String) {
    let live = {
        let Ok(mut registry) = shared.lock() else {
            return;
        };
        let matches = registry
            .hosts
            .get(id)
            .is_some_and(|live| only.is_none_or(|g| g == live.generation));
        if !matches {
            return;
        }
        registry.hosts.remove(id)
    };
    let Some(live) = live else { return };
    live.current.severable.sever();
    if let Some(replace) = &live.replace {
        let _ = replace.send(true);
    }
    if !live.current.liveness.wait(CLOSE_TIMEOUT).await {
        tracing::warn!(host = id, addr = %live.addr,
            "streams of a closed connection still open after {CLOSE_TIMEOUT:?}; reporting it closed");
    }
    if let Some((_, closed)) = &live.raw {
        let _ = closed.send(true);
    }
    let Ok(registry) = shared.lock() else { return };
    tracing::info!(host = id, addr = %live.addr, %reason, "host disconnected");
    registry.send(Event::Disconnected {
        host: id.to_owned(),
        addr: live.addr,
        generation: live.generation,
        reason,
    });
}

/// Reports a refused connection.
pub(super) fn refuse(shared: &Shared, addr: SocketAddr, reason: String) {
    tracing::warn!(%addr, %reason, "host refused");
    if let Ok(registry) = shared.lock() {
        registry.send(Event::Refused { addr, reason });
    }
}
