//! The bookkeeping every resumable download shares (`http(s)://` here,
//! `oci://` blobs in `source/oci/`): how many retries are left, how long
//! to wait before the next, whether the deadline has passed, and the
//! notice each retry sends to the caller's observer.

use std::time::{Duration, Instant};

use crate::error::CosiError;
use crate::source::options::{Cancel, ResumePolicy, RetryNotice, RetryObserver, SourceOptions};

/// Slice of a backoff wait between two looks at the cancel request, so a
/// daemon shutting down is not held by a 30 s wait.
pub(crate) const CANCEL_POLL: Duration = Duration::from_millis(50);

/// One download's retries so far.
#[derive(Debug)]
pub(crate) struct Retrying {
    url: String,
    policy: ResumePolicy,
    observer: RetryObserver,
    cancel: Cancel,
    started: Instant,
    retries: u32,
    restarts: u32,
}

impl Retrying {
    pub(crate) fn new(url: &str, options: &SourceOptions) -> Self {
        Retrying {
            url: url.to_owned(),
            policy: options.resume,
            observer: options.on_retry.clone(),
            cancel: options.cancel.clone(),
            started: Instant::now(),
            retries: 0,
            restarts: 0,
        }
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) fn retries(&self) -> u32 {
        self.retries
    }

    pub(crate) fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    pub(crate) fn observer(&self) -> &RetryObserver {
        &self.observer
    }

    /// The next retry after a failure (`reason`) with `offset` bytes
    /// delivered, or why there is none: the retries are used up or the
    /// deadline has passed (the text to append to the failure).
    pub(crate) fn next(
        &mut self,
        reason: &str,
        offset: u64,
        total: Option<u64>,
    ) -> Result<RetryNotice, String> {
        if self.retries >= self.policy.max_retries {
            return Err(match self.retries {
                0 => String::new(),
                1 => " (gave up after 1 retry)".to_owned(),
                n => format!(" (gave up after {n} retries)"),
            });
        }
        let delay = backoff(&self.policy, self.retries + 1, jitter());
        if self.started.elapsed() + delay > self.policy.deadline {
            return Err(format!(
                " (gave up after {} retries: the download's deadline of {:?} would pass)",
                self.retries, self.policy.deadline
            ));
        }
        self.retries += 1;
        Ok(RetryNotice {
            url: self.url.clone(),
            attempt: self.retries,
            max_retries: self.policy.max_retries,
            offset,
            total,
            reason: reason.to_owned(),
            delay,
            restart: false,
        })
    }

    /// Counts a re-read from byte 0 of a server that ignored `Range`;
    /// false once they are used up.
    pub(crate) fn restart(&mut self) -> bool {
        if self.restarts >= self.policy.max_restarts_without_ranges {
            return false;
        }
        self.restarts += 1;
        true
    }

    pub(crate) fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Tells the observer, then waits the notice's delay (failing with
    /// `Cancelled` as soon as the cancel is requested).
    pub(crate) fn announce_and_wait(&self, notice: &RetryNotice) -> Result<(), CosiError> {
        self.observer.notify(notice);
        let until = Instant::now() + notice.delay;
        loop {
            if self.cancel.requested() {
                return Err(self.cancelled());
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(CANCEL_POLL));
        }
    }

    pub(crate) fn cancelled(&self) -> CosiError {
        CosiError::Cancelled {
            what: format!("downloading {}", self.url),
        }
    }
}

/// A random fraction in [0, 1) for the backoff's jitter.
fn jitter() -> f64 {
    fastrand::f64()
}

/// The wait before retry `attempt` (1-based): `initial_backoff` doubled
/// per earlier retry, capped at `max_backoff`; its second half scaled by
/// `jitter` ("equal jitter": never less than half the step, so retries
/// still back off, yet hosts that lost the same server spread out).
pub(crate) fn backoff(policy: &ResumePolicy, attempt: u32, jitter: f64) -> Duration {
    let doublings = attempt.saturating_sub(1).min(32);
    let step = policy
        .initial_backoff
        .saturating_mul(1u32 << doublings.min(31))
        .min(policy.max_backoff);
    let half = step / 2;
    half + half.mul_f64(jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn policy(max_retries: u32) -> ResumePolicy {
        ResumePolicy {
            max_retries,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            deadline: Duration::from_secs(60),
            max_restarts_without_ranges: 1,
        }
    }

    #[test]
    fn backoff_doubles_is_capped_and_keeps_half_its_step_under_jitter() {
        let p = policy(10);
        let ms = |attempt, jitter| backoff(&p, attempt, jitter).as_millis();
        assert_eq!(ms(1, 0.0), 50);
        assert_eq!(ms(1, 1.0), 100);
        assert_eq!(ms(2, 0.0), 100);
        assert_eq!(ms(3, 0.5), 300);
        // 100 ms * 2^4 = 1.6 s, capped at 1 s.
        assert_eq!(ms(5, 1.0), 1000);
        assert_eq!(ms(5, 0.0), 500);
        assert_eq!(ms(u32::MAX, 1.0), 1000);
    }

    #[test]
    fn retries_stop_at_the_bound_and_say_how_many_were_made() {
        let options = SourceOptions {
            resume: policy(2),
            ..SourceOptions::default()
        };
        let mut retrying = Retrying::new("http://h/f", &options);
        let first = retrying.next("dropped", 10, Some(100)).unwrap();
        assert_eq!((first.attempt, first.offset, first.max_retries), (1, 10, 2));
        assert_eq!(first.total, Some(100));
        assert!(first.delay <= Duration::from_millis(100));
        assert_eq!(retrying.next("dropped", 20, None).unwrap().attempt, 2);
        let why = retrying.next("dropped", 30, None).unwrap_err();
        assert_eq!(why, " (gave up after 2 retries)");
        let options = SourceOptions {
            resume: policy(0),
            ..SourceOptions::default()
        };
        // No retries: the failure as it was, nothing appended.
        assert_eq!(
            Retrying::new("http://h/f", &options)
                .next("x", 0, None)
                .unwrap_err(),
            ""
        );
    }

    #[test]
    fn no_retry_starts_past_the_deadline() {
        let options = SourceOptions {
            resume: ResumePolicy {
                deadline: Duration::from_millis(10),
                ..policy(5)
            },
            ..SourceOptions::default()
        };
        let mut retrying = Retrying::new("http://h/f", &options);
        // The first wait (50..100 ms) already ends past 10 ms.
        let why = retrying.next("dropped", 0, None).unwrap_err();
        assert!(why.contains("deadline"), "{why}");
    }

    #[test]
    fn restarts_without_ranges_are_bounded_on_their_own() {
        let mut retrying = Retrying::new(
            "http://h/f",
            &SourceOptions {
                resume: policy(5),
                ..SourceOptions::default()
            },
        );
        assert!(retrying.restart());
        assert!(!retrying.restart());
        assert_eq!(retrying.restarts(), 1);
    }

    #[test]
    fn a_cancel_ends_the_wait() {
        let options = SourceOptions {
            resume: ResumePolicy {
                initial_backoff: Duration::from_secs(20),
                max_backoff: Duration::from_secs(20),
                ..policy(5)
            },
            ..SourceOptions::default()
        };
        let mut retrying = Retrying::new("http://h/f", &options);
        let notice = retrying.next("dropped", 0, None).unwrap();
        options.cancel.request();
        let started = Instant::now();
        let err = retrying.announce_and_wait(&notice).unwrap_err();
        assert_eq!(err.subkind(), "cancelled");
        assert!(started.elapsed() < Duration::from_secs(1));
    }
}
