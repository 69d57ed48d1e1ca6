//! Rate limit of the "denied RPC" warning: one WARN per refused peer
//! (uid, pid) per interval, the next one carrying how many were suppressed.
//! Without it every RPC of a refused caller adds a record to the telemetry
//! ring, so a caller that may not use the API could still push real
//! records (an operation's logs) out of the ring.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::peer::PeerInfo;

/// Default for `--refused-peer-log-interval`.
pub const DEFAULT_REFUSED_PEER_LOG_INTERVAL: &str = "1m";

/// Peers remembered at most; beyond it, expired entries are dropped first
/// and then the oldest, so many distinct refused pids cannot grow memory.
const MAX_PEERS: usize = 1024;

/// A refused peer: uid and pid (SO_PEERCRED).
type PeerKey = (u32, Option<i32>);

/// Per-peer window state.
#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    suppressed: u64,
}

/// Decides whether a refusal is logged. Cheap to clone; clones share state.
#[derive(Debug, Clone)]
pub struct RefusalLog {
    interval: Duration,
    peers: Arc<Mutex<HashMap<PeerKey, Window>>>,
}

impl RefusalLog {
    /// At most one warning per peer per `interval`.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            peers: Arc::default(),
        }
    }

    /// Logs the refusal of an RPC to `path` by `peer`, unless this peer
    /// was already warned about within the interval (then it is counted).
    pub fn refused(&self, peer: &PeerInfo, path: &str) {
        if let Some(suppressed) = self.admit(peer.uid, peer.pid, Instant::now()) {
            tracing::warn!(
                peer = %peer,
                path,
                suppressed,
                interval = %humantime::format_duration(self.interval),
                "denied RPC (at most one warning per peer per interval; suppressed = refusals of this peer not logged since the last warning)"
            );
        }
    }

    /// `Some(suppressed since the last warning)` when a warning is due.
    fn admit(&self, uid: u32, pid: Option<i32>, now: Instant) -> Option<u64> {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(window) = peers.get_mut(&(uid, pid)) {
            if now.duration_since(window.started) < self.interval {
                window.suppressed += 1;
                return None;
            }
            let suppressed = window.suppressed;
            *window = Window {
                started: now,
                suppressed: 0,
            };
            return Some(suppressed);
        }
        if peers.len() >= MAX_PEERS {
            let interval = self.interval;
            peers.retain(|_, w| now.duration_since(w.started) < interval);
            if peers.len() >= MAX_PEERS {
                let oldest = peers.iter().min_by_key(|(_, w)| w.started).map(|(k, _)| *k);
                if let Some(oldest) = oldest {
                    peers.remove(&oldest);
                }
            }
        }
        peers.insert(
            (uid, pid),
            Window {
                started: now,
                suppressed: 0,
            },
        );
        Some(0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_warning_per_peer_per_interval_then_the_suppressed_count() {
        let log = RefusalLog::new(Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(log.admit(1000, Some(7), t0), Some(0));
        for i in 1..=99 {
            assert_eq!(
                log.admit(1000, Some(7), t0 + Duration::from_millis(i)),
                None
            );
        }
        // Another peer has its own window.
        assert_eq!(log.admit(1000, Some(8), t0), Some(0));
        assert_eq!(
            log.admit(1000, Some(7), t0 + Duration::from_secs(61)),
            Some(99)
        );
        assert_eq!(log.admit(1000, Some(7), t0 + Duration::from_secs(62)), None);
    }

    #[test]
    fn remembered_peers_are_bounded() {
        let log = RefusalLog::new(Duration::from_secs(60));
        let t0 = Instant::now();
        for pid in 0..(MAX_PEERS as i32 * 3) {
            assert_eq!(log.admit(1000, Some(pid), t0), Some(0));
        }
        assert!(log.peers.lock().unwrap().len() <= MAX_PEERS);
    }
}
