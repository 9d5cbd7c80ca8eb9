//! Jittered, capped exponential backoff for retries against a coordinator that is down, busy or
//! has no work, and the worker's own pace ([`Pace`]): how often it may ask at most, so that it
//! stays under the coordinator's rate limits instead of running into them; and how many workunits
//! to ask for at once ([`next_batch_size`]).

use std::time::{Duration, Instant};

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

/// A request rate: `per_sec` on average, `burst` at once after a quiet spell; `per_sec == 0`
/// is no limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PaceRate {
    /// Requests per second on average.
    pub per_sec: f64,
    /// Requests at once after a quiet spell.
    pub burst: f64,
}

impl PaceRate {
    /// No pacing (a coordinator without rate limits, such as `run`'s own).
    pub const UNLIMITED: PaceRate = PaceRate {
        per_sec: 0.0,
        burst: 0.0,
    };
}

/// The worker's own token bucket: before each request it asks [`Pace::delay`] how long to wait
/// so that its requests never exceed its [`PaceRate`]. A wait reserves the token, so the
/// requests that follow queue behind it.
#[derive(Clone, Debug)]
pub struct Pace {
    rate: PaceRate,
    tokens: f64,
    last: Instant,
}

impl Pace {
    /// A full bucket at `now`.
    pub fn new(rate: PaceRate, now: Instant) -> Pace {
        Pace {
            rate,
            tokens: rate.burst.max(1.0),
            last: now,
        }
    }

    /// Takes a token for a request about to be sent at `now`: how long to wait before sending
    /// it (zero while the burst lasts).
    pub fn delay(&mut self, now: Instant) -> Duration {
        if self.rate.per_sec <= 0.0 {
            return Duration::ZERO;
        }
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + dt * self.rate.per_sec).min(self.rate.burst.max(1.0)) - 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate.per_sec)
        }
    }
}

/// How long a batch of workunits should take to compute.
pub const BATCH_TARGET: Duration = Duration::from_secs(2);

/// The size of the next batch: as many workunits as fit in [`BATCH_TARGET`] at the last batch's
/// pace, between 1 and `max`.
pub fn next_batch_size(units: usize, elapsed: Duration, max: u32) -> u32 {
    let per_unit = elapsed.as_secs_f64() / units.max(1) as f64;
    let fits = if per_unit <= 0.0 {
        f64::from(max)
    } else {
        BATCH_TARGET.as_secs_f64() / per_unit
    };
    // At most double per step, so one fast batch does not overshoot for the next.
    let grown = (units.max(1) as f64 * 2.0).min(fits);
    (grown as u32).clamp(1, max.clamp(1, c960_common::wire::MAX_BATCH))
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

    #[test]
    fn pace_lets_a_burst_through_then_spaces_requests_at_the_rate() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut p = Pace::new(
            PaceRate {
                per_sec: 4.0,
                burst: 3.0,
            },
            t0,
        );
        let waits: Vec<Duration> = (0..6).map(|_| p.delay(t0)).collect();
        // Three at once, then each waits its turn: 250 ms apart, reserved in order.
        assert_eq!(waits, [ms(0), ms(0), ms(0), ms(250), ms(500), ms(750)]);
        // The sixth went at 750 ms; at 1 s the next token is there, the one after in 250 ms.
        assert_eq!(p.delay(t0 + ms(1000)), ms(0));
        assert_eq!(p.delay(t0 + ms(1000)), ms(250));
        // A quiet spell refills the burst, no more.
        let later = t0 + Duration::from_secs(60);
        let waits: Vec<Duration> = (0..4).map(|_| p.delay(later)).collect();
        assert_eq!(waits, [ms(0), ms(0), ms(0), ms(250)]);
        // Over any window the requests sent stay within burst + rate * window.
        let mut p = Pace::new(
            PaceRate {
                per_sec: 4.0,
                burst: 10.0,
            },
            t0,
        );
        let mut at = t0;
        for _ in 0..100 {
            at += p.delay(at);
        }
        let secs = at.duration_since(t0).as_secs_f64();
        assert!(100.0 <= 10.0 + 4.0 * secs + 1e-9, "{secs}");
        assert!(secs <= 22.5 + 1e-9, "{secs}");
    }

    #[test]
    fn unlimited_pace_never_waits() {
        let t0 = Instant::now();
        let mut p = Pace::new(PaceRate::UNLIMITED, t0);
        assert!((0..1000).all(|_| p.delay(t0).is_zero()));
    }

    #[test]
    fn batches_grow_for_tiny_workunits_and_shrink_for_long_ones() {
        let ms = Duration::from_millis;
        // 1 ms per workunit: doubles each time, up to the cap.
        assert_eq!(next_batch_size(1, ms(1), 64), 2);
        assert_eq!(next_batch_size(32, ms(32), 64), 64);
        assert_eq!(next_batch_size(64, ms(64), 64), 64);
        assert_eq!(next_batch_size(64, ms(64), 1000), 128);
        // 100 ms per workunit: 20 fit in the target.
        assert_eq!(next_batch_size(16, ms(1600), 64), 20);
        // A minute per workunit: one at a time.
        assert_eq!(next_batch_size(1, Duration::from_secs(60), 64), 1);
        assert_eq!(next_batch_size(8, Duration::from_secs(16), 64), 1);
        // Never zero, whatever comes in.
        assert_eq!(next_batch_size(0, Duration::ZERO, 0), 1);
    }
}
