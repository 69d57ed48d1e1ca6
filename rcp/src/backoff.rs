//! Exponential backoff with jitter for the agent's dial loop: a fleet of
//! hosts rebooting together must not dial the orchestrator in lock step.

use std::time::Duration;

/// Delays between dial attempts: doubling from `initial` up to `max`, each
/// drawn uniformly from the upper half of the current step ("equal jitter"),
/// so a delay is never below half the step nor above `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    step: Duration,
}

impl Backoff {
    /// A backoff starting at `initial` and never exceeding `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        let initial = initial.max(Duration::from_millis(1));
        let max = max.max(initial);
        Backoff {
            initial,
            max,
            step: initial,
        }
    }

    /// The next delay; the step doubles for the one after.
    pub fn next_delay(&mut self) -> Duration {
        let step = self.step;
        self.step = (self.step * 2).min(self.max);
        let half = step / 2;
        let jitter_nanos = fastrand::u64(0..=half.as_nanos().min(u128::from(u64::MAX)) as u64);
        half + Duration::from_nanos(jitter_nanos)
    }

    /// Back to the initial step (after a tunnel that was established).
    pub fn reset(&mut self) {
        self.step = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_stay_bounded_and_reset() {
        let initial = Duration::from_millis(100);
        let max = Duration::from_secs(2);
        let mut backoff = Backoff::new(initial, max);
        let mut step = initial;
        for _ in 0..20 {
            let delay = backoff.next_delay();
            assert!(
                delay >= step / 2 && delay <= step,
                "{delay:?} for step {step:?}"
            );
            step = (step * 2).min(max);
        }
        backoff.reset();
        assert!(backoff.next_delay() <= initial);
    }
}
