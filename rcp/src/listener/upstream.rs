//! Upstream protocol on the listener: each authenticated connection is
//! parked in its host's slot until a client claims it. The first one since
//! the host was last seen registers it (`Connected`); the agent's next
//! connections (it dials again after each close) join the same host. A
//! connection arriving while the host's current one is still open is
//! another agent with the same identity (or a host that restarted without
//! closing): the newer wins as in our protocol (see
//! [`crate::duplicates`]). A host whose parked connection closed and whose
//! agent did not dial again within [`RAW_GRACE`] is `Disconnected`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::registry::{self, Admission, Conn, Shared};
use super::{Host, Opener, hold};
use crate::raw::RawSlot;
use crate::sever::{SeverOnDrop, Severable, liveness};

/// A host whose parked connection closed is gone when its agent (which
/// dials again within a second) has not come back in this.
const RAW_GRACE: Duration = Duration::from_secs(5);

pub(super) async fn serve_raw<S>(
    stream: S,
    severable: Severable,
    id: &str,
    addr: SocketAddr,
    shared: &Shared,
    mut shutdown: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let Some(turn) = registry::turn(shared, id).await else {
        return;
    };
    match registry::admit(shared, id, addr) {
        Admission::Hold(until) => {
            drop(turn);
            return hold(stream, id, addr, until, shutdown).await;
        }
        Admission::Replace => {
            let reason = format!("replaced by a newer connection from {addr}");
            registry::retire(shared, id, None, reason).await;
        }
        Admission::Fresh | Admission::Successor => {}
    }
    let end = match severable.try_clone() {
        Ok(handle) => SeverOnDrop(handle),
        Err(err) => {
            drop(turn);
            return registry::refuse(shared, addr, format!("cannot keep the connection: {err}"));
        }
    };
    let (token, liveness) = liveness();
    let conn = Conn {
        severable,
        liveness,
    };
    let (slot, generation) = match registry::redialled(shared, id, conn) {
        Ok(joined) => joined,
        Err(conn) => match register_raw(shared, id, addr, conn) {
            Some(registered) => registered,
            None => return,
        },
    };
    drop(turn);
    let arrivals = slot.arrivals();
    let closed = tokio::select! {
        closed = slot.park(stream, token, end) => closed,
        _ = shutdown.changed() => return,
    };
    if !closed {
        return;
    }
    let shared = Arc::clone(shared);
    let id = id.to_owned();
    tokio::spawn(async move {
        tokio::time::sleep(RAW_GRACE).await;
        let Some(_turn) = registry::turn(&shared, &id).await else {
            return;
        };
        // Gone only if no newer connection parked in this host's slot.
        if slot.arrivals() != arrivals + 1 {
            return;
        }
        let reason = format!(
            "the host's agent closed its connection and did not dial again within {}s",
            RAW_GRACE.as_secs()
        );
        registry::retire(&shared, &id, Some(generation), reason).await;
    });
}

/// Registers a new host on the upstream protocol (`Connected`); its slot
/// and generation.
fn register_raw(
    shared: &Shared,
    id: &str,
    addr: SocketAddr,
    conn: Conn,
) -> Option<(Arc<RawSlot>, u64)> {
    let generation = registry::next_generation(shared)?;
    let slot = Arc::new(RawSlot::default());
    let (closed_tx, closed_rx) = watch::channel(false);
    let host = Host {
        id: Arc::from(id),
        addr,
        generation,
        opener: Opener::Raw(Arc::clone(&slot)),
        closed: closed_rx,
    };
    registry::register(
        shared,
        host,
        conn,
        None,
        Some((Arc::clone(&slot), closed_tx)),
    );
    Some((slot, generation))
}
