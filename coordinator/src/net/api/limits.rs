//! Limits on what one client can make the coordinator do: token-bucket rate limits per client
//! address and per worker (429 + `Retry-After`), and submissions judged at once per worker and
//! lease ([`Submissions`]). The middleware that applies the rates, and the timeout on every
//! request, is in [`super::layers`].
//!
//! The bucket arithmetic is a pure function of the bucket, the rate and the time ([`take`]);
//! the keyed limiter only stores buckets, and bounds how many it stores so that a flood of
//! addresses cannot grow memory without bound.

use c960_common::error_code::ErrorCode;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;

use super::error::ApiError;

/// A token-bucket rate: `per_sec` requests per second on average, bursts of up to `burst`.
/// `per_sec == 0` disables the limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Sustained requests per second.
    pub per_sec: f64,
    /// Requests allowed at once after a quiet period.
    pub burst: f64,
}

impl Rate {
    /// No limit.
    pub const UNLIMITED: Rate = Rate {
        per_sec: 0.0,
        burst: 0.0,
    };

    /// `per_sec` with a burst of `burst`.
    pub fn new(per_sec: f64, burst: f64) -> Rate {
        Rate {
            per_sec: per_sec.max(0.0),
            burst: burst.max(1.0),
        }
    }

    fn unlimited(&self) -> bool {
        self.per_sec <= 0.0
    }
}

/// One client's bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bucket {
    tokens: f64,
    last_ms: u64,
}

impl Bucket {
    /// A full bucket at `now_ms`.
    pub fn full(rate: Rate, now_ms: u64) -> Bucket {
        Bucket {
            tokens: rate.burst,
            last_ms: now_ms,
        }
    }

    fn refilled(&self, rate: Rate, now_ms: u64) -> f64 {
        let dt = now_ms.saturating_sub(self.last_ms) as f64 / 1000.0;
        (self.tokens + dt * rate.per_sec).min(rate.burst)
    }
}

/// Takes one token. `Err(wait)` is how long until one is available: the `Retry-After`.
pub fn take(b: &mut Bucket, rate: Rate, now_ms: u64) -> Result<(), Duration> {
    if rate.unlimited() {
        return Ok(());
    }
    let tokens = b.refilled(rate, now_ms);
    b.last_ms = b.last_ms.max(now_ms);
    if tokens >= 1.0 {
        b.tokens = tokens - 1.0;
        Ok(())
    } else {
        b.tokens = tokens;
        Err(Duration::from_secs_f64((1.0 - tokens) / rate.per_sec))
    }
}

/// Buckets per key, at most `max_keys` of them.
pub struct Keyed<K> {
    rate: Rate,
    max_keys: usize,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K: Eq + Hash> Keyed<K> {
    /// A limiter at `rate` remembering at most `max_keys` clients.
    pub fn new(rate: Rate, max_keys: usize) -> Keyed<K> {
        Keyed {
            rate,
            max_keys: max_keys.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Gives back one token taken from `key`'s bucket (never above the burst).
    pub fn refund(&self, key: &K, now_ms: u64) {
        let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = map.get_mut(key) {
            b.tokens = (b.refilled(self.rate, now_ms) + 1.0).min(self.rate.burst);
            b.last_ms = b.last_ms.max(now_ms);
        }
    }

    /// Takes one token from `key`'s bucket.
    pub fn check(&self, key: K, now_ms: u64) -> Result<(), Duration> {
        if self.rate.unlimited() {
            return Ok(());
        }
        let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= self.max_keys && !map.contains_key(&key) {
            // Forget clients whose buckets have refilled: they are indistinguishable from new
            // ones. If that frees nothing, the table is full of active clients; forget them
            // all rather than refuse a newcomer forever (the limit is soft under such a flood,
            // memory stays bounded).
            let rate = self.rate;
            map.retain(|_, b| b.refilled(rate, now_ms) < rate.burst);
            if map.len() >= self.max_keys {
                map.clear();
            }
        }
        let b = map
            .entry(key)
            .or_insert_with(|| Bucket::full(self.rate, now_ms));
        take(b, self.rate, now_ms)
    }
}

/// Per-address and per-worker limits of one coordinator.
pub struct Limiter {
    epoch: Instant,
    address: Keyed<IpAddr>,
    worker: Keyed<u64>,
    /// Admin authentications per address: every attempt takes a token, a success gives it back,
    /// so only failures (guesses) run the bucket dry.
    admin: Keyed<IpAddr>,
    /// Table exports per address: each reads a whole campaign.
    export: Keyed<IpAddr>,
}

/// Failed admin authentications allowed per address: 5 at once, then one per 10 s.
pub const ADMIN_FAILURES: Rate = Rate {
    per_sec: 0.1,
    burst: 5.0,
};

/// Most clients remembered per limiter.
const MAX_KEYS: usize = 100_000;

impl Limiter {
    /// Limiters at these rates.
    pub fn new(per_address: Rate, per_worker: Rate) -> Limiter {
        Limiter {
            epoch: Instant::now(),
            address: Keyed::new(per_address, MAX_KEYS),
            worker: Keyed::new(per_worker, MAX_KEYS),
            admin: Keyed::new(ADMIN_FAILURES, MAX_KEYS),
            export: Keyed::new(Rate::UNLIMITED, MAX_KEYS),
        }
    }

    /// The same limiter with this rate of table exports per address.
    pub fn with_exports(mut self, rate: Rate) -> Limiter {
        self.export = Keyed::new(rate, MAX_KEYS);
        self
    }

    /// The same limiter with this budget of failed admin authentications per address.
    pub fn with_admin_failures(mut self, rate: Rate) -> Limiter {
        self.admin = Keyed::new(rate, MAX_KEYS);
        self
    }

    /// Takes a token for an admin authentication attempt from this address: 429 once its
    /// failures have spent the budget.
    pub fn check_admin_attempt(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.admin.check(ip, self.now_ms()).map_err(|wait| {
            let secs = retry_after_secs(wait);
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                format!("too many failed admin authentications; retry after {secs} s"),
            )
            .with_retry_after(secs)
        })
    }

    /// The attempt from this address succeeded: it does not count.
    pub fn admin_succeeded(&self, ip: IpAddr) {
        self.admin.refund(&ip, self.now_ms());
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Takes a token for this client address.
    pub fn check_address(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.address.check(ip, self.now_ms()).map_err(too_many)
    }

    /// Takes a token for a table export from this address.
    pub fn check_export(&self, ip: IpAddr) -> Result<(), ApiError> {
        self.export.check(ip, self.now_ms()).map_err(too_many)
    }

    /// Takes a token for this worker.
    pub fn check_worker(&self, worker_id: u64) -> Result<(), ApiError> {
        self.worker
            .check(worker_id, self.now_ms())
            .map_err(too_many)
    }
}

/// Whole seconds to wait, at least 1 (`Retry-After` has one-second resolution).
pub fn retry_after_secs(wait: Duration) -> u32 {
    wait.as_secs_f64().ceil().clamp(1.0, u32::MAX as f64) as u32
}

fn too_many(wait: Duration) -> ApiError {
    let secs = retry_after_secs(wait);
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::RateLimited,
        format!("too many requests; retry after {secs} s"),
    )
    .with_retry_after(secs)
}

/// Submission requests of one worker judged at once, at most: a worker submits one batch at a
/// time, and a second covers a retry that overtakes its timed-out first.
pub const SUBMISSIONS_PER_WORKER: usize = 2;

/// Whether a worker with `in_flight` submission requests being judged may start another, and
/// `lease_busy`: whether one of its leases is among those being judged.
pub fn may_submit(in_flight: usize, lease_busy: bool) -> bool {
    in_flight < SUBMISSIONS_PER_WORKER && !lease_busy
}

/// The submission requests being judged, per worker and per (worker, lease). Why: judging a
/// result can cost real work (reading and replaying a self-play result's games), and a worker
/// that sends the same result eight times at once would otherwise have it judged eight times
/// side by side before the first closed the lease. Keyed by worker and lease, so that nobody
/// can hold up another worker's submission by naming its lease.
#[derive(Default)]
pub struct Submissions {
    judged: Mutex<Judged>,
}

#[derive(Default)]
struct Judged {
    by_worker: HashMap<u64, usize>,
    leases: HashSet<(u64, u64)>,
}

impl Submissions {
    fn lock(&self) -> std::sync::MutexGuard<'_, Judged> {
        self.judged.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Claims the judging of `leases` for `worker` until the claim is dropped, or 429
    /// `submission_in_progress` ([`may_submit`]).
    pub fn claim(self: &Arc<Self>, worker: u64, leases: &[u64]) -> Result<Claim, ApiError> {
        let mut j = self.lock();
        let in_flight = j.by_worker.get(&worker).copied().unwrap_or(0);
        let busy = leases.iter().find(|&&l| j.leases.contains(&(worker, l)));
        if !may_submit(in_flight, busy.is_some()) {
            let message = match busy {
                Some(l) => format!("a submission of lease {l} is being judged; retry in 1 s"),
                None => format!(
                    "{SUBMISSIONS_PER_WORKER} submissions of this worker are being judged; retry in 1 s"
                ),
            };
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::SubmissionInProgress,
                message,
            )
            .with_retry_after(1));
        }
        *j.by_worker.entry(worker).or_insert(0) += 1;
        // A lease named twice in one batch is claimed once (the judge answers the second).
        let mut claimed = Vec::with_capacity(leases.len());
        for &l in leases {
            if j.leases.insert((worker, l)) {
                claimed.push(l);
            }
        }
        Ok(Claim {
            owner: self.clone(),
            worker,
            leases: claimed,
        })
    }
}

/// Leases of one submission request being judged; given back when dropped (after the judging
/// work, which holds it, ends).
pub struct Claim {
    owner: Arc<Submissions>,
    worker: u64,
    leases: Vec<u64>,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut j = self.owner.lock();
        for l in &self.leases {
            j.leases.remove(&(self.worker, *l));
        }
        if let Some(n) = j.by_worker.get_mut(&self.worker) {
            *n -= 1;
            if *n == 0 {
                j.by_worker.remove(&self.worker);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_burst_then_refills_at_rate() {
        let rate = Rate::new(2.0, 3.0);
        let mut b = Bucket::full(rate, 0);
        for _ in 0..3 {
            assert_eq!(take(&mut b, rate, 0), Ok(()));
        }
        let wait = take(&mut b, rate, 0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert!(take(&mut b, rate, 499).is_err());
        assert_eq!(take(&mut b, rate, 500), Ok(()));
        // A long pause refills to the burst, no more.
        for _ in 0..3 {
            assert_eq!(take(&mut b, rate, 100_000), Ok(()));
        }
        assert!(take(&mut b, rate, 100_000).is_err());
        // Time going backwards (it cannot with Instant, but) never adds tokens.
        assert!(take(&mut b, rate, 50).is_err());
    }

    #[test]
    fn unlimited_and_retry_after() {
        let mut b = Bucket::full(Rate::UNLIMITED, 0);
        for _ in 0..1000 {
            assert_eq!(take(&mut b, Rate::UNLIMITED, 0), Ok(()));
        }
        assert_eq!(retry_after_secs(Duration::from_millis(10)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1500)), 2);
    }

    #[test]
    fn a_refund_gives_one_token_back_up_to_the_burst() {
        let k: Keyed<u32> = Keyed::new(Rate::new(0.001, 2.0), 4);
        assert!(k.check(1, 0).is_ok());
        k.refund(&1, 0);
        k.refund(&1, 0);
        assert!(k.check(1, 0).is_ok());
        assert!(k.check(1, 0).is_ok());
        assert!(k.check(1, 0).is_err(), "refunds never exceed the burst");
        k.refund(&7, 0);
        assert_eq!(
            k.buckets.lock().unwrap().len(),
            1,
            "no bucket for a refund alone"
        );
    }

    #[test]
    fn keyed_limits_each_key_and_stays_bounded() {
        let k: Keyed<u32> = Keyed::new(Rate::new(1.0, 1.0), 4);
        assert!(k.check(1, 0).is_ok());
        assert!(k.check(1, 0).is_err());
        assert!(k.check(2, 0).is_ok(), "another key has its own bucket");
        for key in 3..100 {
            let _ = k.check(key, 0);
            assert!(k.buckets.lock().unwrap().len() <= 4);
        }
    }

    #[test]
    fn one_submission_per_lease_and_two_per_worker_are_judged_at_once() {
        assert!(may_submit(0, false) && may_submit(1, false));
        assert!(!may_submit(1, true) && !may_submit(2, false));
        let s = Arc::new(Submissions::default());
        let first = s.claim(7, &[1, 2]).unwrap();
        let e = s.claim(7, &[2]).err().unwrap();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (429, ErrorCode::SubmissionInProgress)
        );
        // Another worker naming the same lease is not held up (its claim is refused later,
        // when the lease is read).
        let other = s.claim(8, &[2]).unwrap();
        let second = s.claim(7, &[3, 3]).unwrap();
        assert!(s.claim(7, &[4]).is_err(), "two at once per worker");
        drop(first);
        let again = s.claim(7, &[2]).unwrap();
        drop((other, second, again));
        let j = s.lock();
        assert!(j.by_worker.is_empty() && j.leases.is_empty());
    }
}
