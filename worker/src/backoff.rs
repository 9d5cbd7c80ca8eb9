//! Jittered, capped exponential backoff for retries against a coordinator that is down, busy or
//! has no work.

use std::time::Duration;

/// Backoff state: the delay doubles per failure up to `cap`; each wait is drawn uniformly from
/// [delay/2, delay] so that many workers restarted together do not hammer the server in step.
#[derive(Clone, Debug)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff starting at `base` and never exceeding `cap`.
    pub fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff {
            base,
            cap: cap.max(base),
            failures: 0,
        }
    }

    /// The upper bound of the next wait (before jitter).
    pub fn ceiling(&self) -> Duration {
        let factor = 1u32.checked_shl(self.failures.min(20)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// The next wait given a uniform random `unit` in [0, 1); records a failure.
    pub fn next_with(&mut self, unit: f64) -> Duration {
        let ceil = self.ceiling();
        self.failures = self.failures.saturating_add(1);
        ceil.mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
    }

    /// The next wait with random jitter; records a failure.
    pub fn next_delay(&mut self) -> Duration {
        self.next_with(rand::random::<f64>())
    }

    /// Failures since the last success.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Back to the base delay after a success.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// A server-given retry-after with up to 25 % random jitter added, capped at `cap`.
pub fn retry_after(secs: u32, cap: Duration) -> Duration {
    Duration::from_secs(u64::from(secs))
        .mul_f64(1.0 + 0.25 * rand::random::<f64>())
        .min(cap.max(Duration::from_millis(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1000));
        let waits: Vec<_> = (0..6).map(|_| b.next_with(1.0)).collect();
        let ms: Vec<u128> = waits.iter().map(|d| d.as_millis()).collect();
        assert_eq!(ms, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(b.next_with(0.0).as_millis(), 500);
        b.reset();
        assert_eq!(b.next_with(1.0).as_millis(), 100);
    }

    #[test]
    fn jitter_stays_in_range() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(60));
        for _ in 0..50 {
            let ceil = b.ceiling();
            let d = b.next_delay();
            assert!(d <= ceil && d >= ceil / 2);
        }
    }
}
