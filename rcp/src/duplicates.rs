//! The rule for two connections with the same host identity.
//!
//! The newer connection wins: it replaces an older one that is still open
//! (the listener closes the older one and every stream through it before
//! it reports `disconnected`). Normally that is a rebooted host whose old
//! connection was not closed yet. Two agents holding the same certificate
//! would instead replace each other for ever, so an identity replaced more
//! than [`DuplicatePolicy::limit`] times within [`DuplicatePolicy::window`]
//! is a duplicate: reported once (an `Event::Duplicate` naming the host and
//! both peer addresses), after which the listener keeps the connection it
//! has and holds every newcomer of that identity unused until
//! [`DuplicatePolicy::backoff`] has passed (then closes it). Holding, not
//! refusing at once, is what stops the flapping: an agent that dials again
//! the moment its connection closes (upstream's does) would otherwise spin.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

/// When an identity counts as a duplicate, and for how long newcomers are
/// then held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DuplicatePolicy {
    /// Replacements of one identity allowed within `window`.
    pub limit: u32,
    /// The window the replacements are counted in.
    pub window: Duration,
    /// How long newcomers are held once the limit was passed.
    pub backoff: Duration,
}

impl Default for DuplicatePolicy {
    fn default() -> Self {
        DuplicatePolicy {
            limit: 5,
            window: Duration::from_secs(60),
            backoff: Duration::from_secs(60),
        }
    }
}

/// What to do with a newcomer whose identity has an open connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Replace the older connection.
    Replace,
    /// The identity just became a duplicate: report it, hold the newcomer.
    Duplicate { replacements: u32, until: Instant },
    /// Still backing off from an earlier report: hold the newcomer.
    Hold { until: Instant },
}

#[derive(Debug, Default)]
struct Identity {
    replacements: VecDeque<Instant>,
    backoff_until: Option<Instant>,
}

/// Replacement history of every identity.
#[derive(Debug, Default)]
pub(crate) struct Duplicates {
    policy: DuplicatePolicy,
    identities: HashMap<String, Identity>,
}

impl Duplicates {
    pub(crate) fn new(policy: DuplicatePolicy) -> Self {
        Duplicates {
            policy,
            identities: HashMap::new(),
        }
    }

    /// A newcomer of `id` arrives while an older connection is open.
    pub(crate) fn newcomer(&mut self, id: &str, now: Instant) -> Verdict {
        let policy = self.policy;
        let identity = self.identities.entry(id.to_owned()).or_default();
        if let Some(until) = identity.backoff_until {
            if now < until {
                return Verdict::Hold { until };
            }
            identity.backoff_until = None;
        }
        while identity
            .replacements
            .front()
            .is_some_and(|at| now.duration_since(*at) >= policy.window)
        {
            identity.replacements.pop_front();
        }
        let replacements = identity.replacements.len() as u32;
        if replacements >= policy.limit {
            let until = now + policy.backoff;
            identity.backoff_until = Some(until);
            identity.replacements.clear();
            return Verdict::Duplicate {
                replacements,
                until,
            };
        }
        identity.replacements.push_back(now);
        Verdict::Replace
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replacement_after_the_limit_is_a_duplicate_then_held_until_the_backoff_ends() {
        let policy = DuplicatePolicy {
            limit: 3,
            window: Duration::from_secs(60),
            backoff: Duration::from_secs(30),
        };
        let mut d = Duplicates::new(policy);
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        for i in 0..3 {
            assert_eq!(d.newcomer("h", t0 + s * i), Verdict::Replace);
        }
        // Another identity is counted apart.
        assert_eq!(d.newcomer("other", t0), Verdict::Replace);
        let until = t0 + s * 3 + policy.backoff;
        assert_eq!(
            d.newcomer("h", t0 + s * 3),
            Verdict::Duplicate {
                replacements: 3,
                until
            }
        );
        assert_eq!(d.newcomer("h", t0 + s * 10), Verdict::Hold { until });
        // After the backoff the count starts afresh.
        assert_eq!(d.newcomer("h", until), Verdict::Replace);
    }

    #[test]
    fn replacements_older_than_the_window_do_not_count() {
        let policy = DuplicatePolicy {
            limit: 2,
            window: Duration::from_secs(10),
            backoff: Duration::from_secs(30),
        };
        let mut d = Duplicates::new(policy);
        let t0 = Instant::now();
        for i in 0..10 {
            // One every 6 s: never more than 2 within 10 s.
            assert_eq!(
                d.newcomer("h", t0 + Duration::from_secs(6 * i)),
                Verdict::Replace
            );
        }
    }
}
