//! The state every handler shares ([`AppState`]), the coordinator's tunables ([`Config`],
//! [`Limits`]) and [`blocking`], the one way handlers run store work. Bottom layer of the API:
//! it imports no route file.

use c960_common::error_code::ErrorCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use std::net::IpAddr;

use axum::http::{HeaderMap, StatusCode};

use super::auth::{self, Enrolment};
use super::error::ApiError;
use super::limits::{self, Keyed, Limiter, Rate, Submissions};
use crate::integrity::checker::CheckBudget;
use crate::integrity::trust::Integrity;
use crate::net::proxies::TrustedProxies;
use crate::store::Store;
use crate::work::stall::StallWatch;

/// What one client may make the coordinator do.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Requests per client address on the worker API (the TCP peer, or behind a trusted proxy
    /// the address it forwards: [`crate::net::proxies`]).
    pub per_address: Rate,
    /// Requests per worker on the authenticated worker API ([`DEFAULT_PER_WORKER`]).
    pub per_worker: Rate,
    /// Leases one worker may hold open at once (0: no cap).
    pub max_open_leases: u64,
    /// Longest time a request may take before it is answered with 503 `timeout`.
    pub request_timeout: Duration,
    /// Registrations per address block ([`crate::integrity::trust::address_block`]): a sybil farm behind
    /// one address cannot mint identities at will.
    pub registrations_per_block: Rate,
    /// Registrations from all addresses together: hundreds of identities from as many blocks
    /// (a botnet, an IPv6 /64 split into /48s) are throttled as a whole
    /// ([`DEFAULT_REGISTRATIONS_TOTAL_PER_HOUR`]).
    pub registrations_total: Rate,
    /// Failed admin authentications per client address (429 `rate_limited` beyond).
    pub admin_failures: Rate,
    /// Table exports (`/campaigns/{id}/table`, `/balance`) per client address.
    pub export_per_address: Rate,
}

/// Registrations per hour from all addresses together by default (`serve
/// --registrations-per-hour-total`), in bursts of [`REGISTRATIONS_TOTAL_BURST`]. Why these
/// numbers: a project's volunteers join over days, a class or a lab of 200 machines at once
/// (the burst); a script minting identities from hundreds of blocks gets 200 and then one every
/// three seconds, while the lease rules (probation) bound what those can hold.
pub const DEFAULT_REGISTRATIONS_TOTAL_PER_HOUR: f64 = 1200.0;

/// The burst of [`DEFAULT_REGISTRATIONS_TOTAL_PER_HOUR`].
pub const REGISTRATIONS_TOTAL_BURST: f64 = 200.0;

/// Requests per worker by default: 10 a second, bursts of 40 (`--rate-per-worker`, burst 4x).
///
/// Why these numbers: a worker paces itself to 4 requests a second, bursts of 10
/// (`c960_worker::runner::DEFAULT_PACE`: two fetch–submit rounds a second at most, for when
/// its batches are capped and its workunits take milliseconds), so a default worker never
/// meets this limit: it leaves 2.5 times the rate and 30 requests of burst for what is not
/// paced (giving leases back, failure reports) and for requests that arrive bunched. Against a
/// flood it still means something: a client that ignores the pace (hundreds of requests a
/// second in a loop) gets 10, and the per-address limit (50 a second, bursts of 200) bounds
/// all workers of one address together (a dozen default workers asking at their fastest).
/// Before, 5 a second with bursts of 20 refused one default worker on a depth-5 campaign
/// (4 leases of a few milliseconds each) about once a second.
pub const DEFAULT_PER_WORKER: Rate = Rate {
    per_sec: 10.0,
    burst: 40.0,
};

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_address: Rate::new(50.0, 200.0),
            per_worker: DEFAULT_PER_WORKER,
            max_open_leases: 64,
            request_timeout: Duration::from_secs(30),
            registrations_per_block: Rate::new(1.0 / 60.0, 10.0),
            registrations_total: Rate::new(
                DEFAULT_REGISTRATIONS_TOTAL_PER_HOUR / 3600.0,
                REGISTRATIONS_TOTAL_BURST,
            ),
            admin_failures: limits::ADMIN_FAILURES,
            export_per_address: Rate::new(0.5, 2.0),
        }
    }
}

/// Tunables of a running coordinator.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long a lease lasts before its replica is reissued.
    pub lease: Duration,
    /// Refused (malformed) results after which a worker gets no more work (0: never); a failed
    /// check excludes it at once.
    pub max_strikes: u64,
    /// The retry-after sent with "no work right now".
    pub retry_after_secs: u32,
    /// Who may register.
    pub enrolment: Enrolment,
    /// SHA-256 of the admin token; `None` disables the admin endpoints.
    pub admin_token_hash: Option<Vec<u8>>,
    /// Rate limits, lease cap, timeout.
    pub limits: Limits,
    /// The integrity rules' settings (trust, check rates, sybil friction, plausibility).
    pub integrity: Integrity,
    /// What the coordinator may spend on its own checks.
    pub checks: CheckBudget,
    /// The UCI engine the coordinator audits UCI analyses and games with (`serve --uci`): only
    /// the values of the very same build compare.
    pub uci: Option<c960_compute::uci_engine::UciCommand>,
    /// Workers that register with the enrolment secret are the operator's own and trusted at
    /// once (`run`'s local workers); off for `serve`, where the secret may be shared.
    pub trust_enrolled: bool,
    /// Reverse proxies whose `X-Forwarded-For` names the client ([`crate::net::proxies`]).
    pub trusted_proxies: TrustedProxies,
    /// The BOINC project side (`serve --boinc`); `None`: off.
    pub boinc: Option<Arc<crate::net::boinc::Project>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            lease: Duration::from_secs(3600),
            max_strikes: 3,
            retry_after_secs: 10,
            enrolment: Enrolment::Closed,
            admin_token_hash: None,
            limits: Limits::default(),
            integrity: Integrity::default(),
            checks: CheckBudget::default(),
            uci: None,
            trust_enrolled: false,
            trusted_proxies: TrustedProxies::default(),
            boinc: None,
        }
    }
}

/// Shared state of the handlers.
#[derive(Clone)]
pub struct AppState {
    /// The store.
    pub store: Arc<dyn Store>,
    /// The tunables.
    pub config: Config,
    /// The rate limiters (in memory: a restart forgives everyone, which is harmless).
    pub limiter: Arc<Limiter>,
    /// Registrations per address block.
    pub registrations: Arc<Keyed<String>>,
    /// Registrations from all addresses together (one bucket).
    pub registrations_total: Arc<Keyed<()>>,
    /// Who got no work at its last fetch, to notice campaigns no connected worker may take.
    pub stall: Arc<StallWatch>,
    /// Submissions being judged, per worker and lease.
    pub submissions: Arc<Submissions>,
    /// The per-campaign tallies (status and pages).
    pub tallies: Arc<super::tallies::Tallies>,
}

impl AppState {
    /// State over this store with this configuration. Hands the quarantine threshold to the
    /// store, which applies it inside the transactions that count lost votes.
    pub fn new(store: Arc<dyn Store>, config: Config) -> AppState {
        if let Err(e) = store.set_max_strikes(config.max_strikes) {
            tracing::error!("cannot set the quarantine threshold: {e}");
        }
        if let Err(e) = store.set_integrity(&config.integrity) {
            tracing::error!("cannot set the integrity settings: {e}");
        }
        // The stall watch starts empty: stalls recorded before are found again from the
        // workers' next fetches, or are over.
        if let Err(e) = store.clear_stalls() {
            tracing::error!("cannot clear the recorded stalls: {e}");
        }
        let registrations = Arc::new(Keyed::new(config.limits.registrations_per_block, 100_000));
        let registrations_total = Arc::new(Keyed::new(config.limits.registrations_total, 1));
        let limiter = Arc::new(
            Limiter::new(config.limits.per_address, config.limits.per_worker)
                .with_admin_failures(config.limits.admin_failures)
                .with_exports(config.limits.export_per_address),
        );
        AppState {
            store,
            config,
            limiter,
            registrations,
            registrations_total,
            stall: Arc::default(),
            submissions: Arc::default(),
            tallies: Arc::default(),
        }
    }
}

impl AppState {
    /// The one check of the admin token, for the admin endpoints ([`super::extract::Admin`])
    /// and for the exports (an operator's exports are not limited): the bearer of `headers`
    /// against the configured hash, compared in constant time. Guessing is limited per
    /// address: every attempt from `peer` costs a token of its failure budget, a success
    /// refunds it.
    pub fn check_admin(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> Result<(), ApiError> {
        let Some(hash) = &self.config.admin_token_hash else {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::AdminDisabled,
                "no admin token is configured on this coordinator",
            ));
        };
        let token = auth::bearer_of(headers)?;
        if let Some(ip) = peer {
            self.limiter.check_admin_attempt(ip)?;
        }
        if crate::integrity::secrets::same_hash(hash, &crate::integrity::secrets::sha256(token)) {
            if let Some(ip) = peer {
                self.limiter.admin_succeeded(ip);
            }
            Ok(())
        } else {
            Err(auth::bad_token())
        }
    }
}

/// [`blocking`] for work that can stop early: `f` is given a test that turns true once the
/// request is dropped (answered by the timeout with 503, or its client gone), and checks it
/// between steps, so that work does not go on past the answer.
pub(crate) async fn blocking_until_dropped<T: Send + 'static>(
    f: impl FnOnce(&dyn Fn() -> bool) -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    /// Sets the flag when the request's future is dropped, finished or not.
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let dropped = Arc::new(AtomicBool::new(false));
    let _set = SetOnDrop(dropped.clone());
    blocking(move || f(&|| dropped.load(Ordering::Relaxed))).await
}

/// Runs blocking store work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            e.to_string(),
        )
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A default worker's own pace stays under a default coordinator's limits with margin.
    #[test]
    fn a_default_worker_paces_itself_under_the_default_limits() {
        let pace = c960_worker::runner::DEFAULT_PACE;
        let limits = Limits::default();
        for limit in [limits.per_worker, limits.per_address] {
            assert!(pace.per_sec * 2.0 <= limit.per_sec, "{pace:?} {limit:?}");
            assert!(pace.burst * 2.0 <= limit.burst, "{pace:?} {limit:?}");
        }
        // The command line's default is the same limit.
        assert_eq!(
            Rate::new(DEFAULT_PER_WORKER.per_sec, DEFAULT_PER_WORKER.per_sec * 4.0),
            DEFAULT_PER_WORKER
        );
    }
}
