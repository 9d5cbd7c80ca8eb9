//! One worker session under both front doors, protocol-neutral: registration (who may become
//! a worker, how far it is trusted), hand-out (leases, or why work waits) and settlement (each
//! result judged against its lease, [`crate::work::judge`], every settlement written in one
//! transaction), and the checks on the labels a client sends. The native protocol
//! (`workers.rs`: bincode over HTTP) and BOINC's scheduler and upload handler (`boinc.rs`: XML)
//! map their requests to these and their answers back, so a worker is admitted, trusted, given
//! work and judged the same way whichever client it runs. Blocking (store calls): the front
//! doors call them off the async threads.

use std::time::Duration;

use axum::http::StatusCode;
use c960_common::error_code::ErrorCode;
use c960_common::wait::Waiting;
use c960_common::wire::{BatchedResult, Capabilities};

use super::auth::Enrolment;
use super::error::ApiError;
use super::state::AppState;
use crate::clock::now_ms;
use crate::integrity::secrets::{new_secret, parse_token, sha256};
use crate::model::{BoincIdentity, Lease, NewWorker, StoreError, TrustLevel};
use crate::store::Store;
use crate::work::judge::{Plan, judge};

/// Someone asking to become a worker, as either front door describes them.
#[derive(Clone, Debug)]
pub struct Applicant {
    /// The worker's name (checked by the front door: a label).
    pub name: String,
    /// The engine label.
    pub engine: String,
    /// The build label, when the client says it.
    pub build: Option<String>,
    /// The address block it comes from.
    pub block: Option<String>,
    /// The enrolment secret or token it presents (a BOINC account key is one), if any.
    pub presented: Option<String>,
    /// A BOINC host's account and client installation.
    pub boinc: Option<BoincIdentity>,
}

/// Why an applicant is not registered; each front door answers it in its own protocol.
#[derive(Debug)]
pub enum Refusal {
    /// The enrolment policy refuses what was presented, or its absence (401 or 403).
    Enrolment(ApiError),
    /// The enrolment token is malformed, unknown, revoked or used up.
    Token(ErrorCode),
    /// Too many registrations from its address block or from all addresses (429, with how
    /// long to wait).
    RateLimited(ApiError),
    /// The store failed.
    Failed(ApiError),
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> ApiError {
        match r {
            Refusal::Enrolment(e) | Refusal::RateLimited(e) | Refusal::Failed(e) => e,
            Refusal::Token(code) => StoreError::Enrolment(code).into(),
        }
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Refusal {
        match e {
            StoreError::Enrolment(code) => Refusal::Token(code),
            e => Refusal::Failed(e.into()),
        }
    }
}

/// A registered worker: its id, and the secret of its API token (a native worker is told it;
/// a BOINC host authenticates by its account and is told nothing).
#[derive(Debug)]
pub struct Registered {
    /// The worker's id (a BOINC host's id).
    pub worker_id: u64,
    /// The secret of its token (`<worker_id>.<secret>`).
    pub secret: String,
}

/// Registers an applicant, the one rule on new identities: the enrolment policy admits what it
/// presents ([`Enrolment::admit`]); an enrolment token that would register nobody is refused
/// next, spending nothing, so that wrong or spent tokens cannot spend the budgets of honest
/// newcomers; then a registration takes one of its address block's budget
/// ([`super::state::Limits::registrations_per_block`]) and one of all addresses together
/// ([`super::state::Limits::registrations_total`]). Its trust is decided here
/// ([`Enrolment::trusts_at_registration`]) and written in the transaction that creates it,
/// which also spends its token.
pub fn register(st: &AppState, a: Applicant) -> Result<Registered, Refusal> {
    let enrolment = &st.config.enrolment;
    enrolment
        .admit(a.presented.as_deref())
        .map_err(Refusal::Enrolment)?;
    // With per-volunteer tokens what is presented is a token, checked and spent by the store.
    let token = match (enrolment, a.presented.as_deref()) {
        (Enrolment::Tokens, Some(t)) => {
            let (id, secret) =
                parse_token(t).ok_or(Refusal::Token(ErrorCode::BadEnrolmentToken))?;
            Some((id, sha256(secret)))
        }
        _ => None,
    };
    if let Some((id, secret_hash)) = &token
        && let Some(code) = st.store.enrolment_token_refusal(*id, secret_hash)?
    {
        return Err(Refusal::Token(code));
    }
    within_registration_budgets(st, a.block.as_deref())?;
    let trust = if enrolment.trusts_at_registration(st.config.trust_enrolled, a.presented.is_some())
    {
        TrustLevel::Operator
    } else {
        TrustLevel::Untrusted
    };
    let secret = new_secret();
    let worker = NewWorker {
        name: a.name,
        key_hash: sha256(&secret),
        engine: a.engine,
        build: a.build,
        block: a.block,
        token,
        trust,
        boinc: a.boinc,
    };
    let worker_id = st.store.register(&worker, now_ms())?;
    Ok(Registered { worker_id, secret })
}

/// Takes one registration of `block`'s budget and one of all addresses', or refuses with 429
/// `rate_limited` and how long to wait (BOINC's scheduler passes the wait on as its
/// `<request_delay>`).
fn within_registration_budgets(st: &AppState, block: Option<&str>) -> Result<(), Refusal> {
    let now = now_ms().max(0) as u64;
    let refused = |wait: Duration, from: &str| {
        let secs = wait.as_secs().max(1) as u32;
        Refusal::RateLimited(
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                format!("too many registrations from {from}; retry in {secs} s"),
            )
            .with_retry_after(secs),
        )
    };
    if let Some(b) = block
        && let Err(wait) = st.registrations.check(b.to_string(), now)
    {
        return Err(refused(wait, b));
    }
    st.registrations_total
        .check((), now)
        .map_err(|wait| refused(wait, "all addresses right now"))
}

/// What a worker that asks for work gets: leases, or, when there are none, why work waits for
/// it ([`Store::waiting_for`]: the first of what it names is the worker's own reason).
#[derive(Debug)]
pub struct HandOut {
    /// The replicas leased to it.
    pub leases: Vec<Lease>,
    /// With no lease: what keeps each remaining replica from it.
    pub waiting: Vec<Waiting>,
}

/// Leases up to `max_units` replicas to `worker_id` with the engines of `caps`, the open-lease
/// cap checked in the same transaction; with none, why.
pub fn hand_out(
    st: &AppState,
    worker_id: u64,
    caps: &Capabilities,
    max_units: u32,
    block: Option<&str>,
) -> Result<HandOut, ApiError> {
    let lease_ms = st.config.lease.as_millis() as i64;
    let cap = st.config.limits.max_open_leases;
    // A dispute's challenges first, over every cap: a side that never gets its challenge
    // cannot answer it (crate::integrity::referee).
    let mut leases = if caps.perft {
        st.store.challenge_leases(worker_id, now_ms())?
    } else {
        Vec::new()
    };
    match st
        .store
        .assign_from(worker_id, caps, now_ms(), lease_ms, max_units, cap, block)
    {
        Ok(more) => leases.extend(more),
        Err(StoreError::LeaseLimit { .. }) if !leases.is_empty() => {}
        Err(e) => return Err(e.into()),
    }
    let waiting = if leases.is_empty() {
        st.store
            .waiting_for(worker_id, caps, block, cap, now_ms())?
    } else {
        Vec::new()
    };
    Ok(HandOut { leases, waiting })
}

/// A label a worker sent (`what`: `name`, `engine name`, …) checked by
/// [`crate::integrity::label::check_label`], or 400 `bad_field` (too long) / `bad_label` (a control,
/// line-break or bidirectional character).
pub(crate) fn check_label(what: &str, text: &str) -> Result<(), ApiError> {
    crate::integrity::label::check_label(text).map_err(|fault| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            fault.code(),
            format!("{what} {fault}"),
        )
    })
}

/// The engine as stored (`name version`), or the refusal of [`check_label`] for either part.
pub(crate) fn engine_label(e: &c960_common::wire::EngineInfo) -> Result<String, ApiError> {
    check_label("engine name", &e.name)?;
    check_label("engine version", &e.version)?;
    Ok(format!("{} {}", e.name, e.version))
}

/// Judges results ([`judge`]) and writes every settlement in one transaction; one outcome per
/// result. Stops, writing nothing, once `dropped` says the request was answered without it (the
/// timeout's 503) or its client is gone: judging a result may cost real work (a self-play
/// result's games are read and replayed), which must not go on for nobody.
pub(crate) fn settle_results(
    store: &dyn Store,
    worker_id: u64,
    results: Vec<BatchedResult>,
    engine: &str,
    max_nodes_per_sec: u64,
    dropped: &dyn Fn() -> bool,
) -> Result<Vec<Result<(), ApiError>>, ApiError> {
    let stopped = || {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            ErrorCode::Timeout,
            "the request ended before its results were judged",
        )
    };
    let ids: Vec<u64> = results.iter().map(|r| r.lease_id).collect();
    let leases = store.leases(&ids)?;
    let now = now_ms();
    let mut verdicts = Vec::with_capacity(results.len());
    for (r, lease) in results.into_iter().zip(leases) {
        if dropped() {
            return Err(stopped());
        }
        verdicts.push(judge(worker_id, lease, r, engine, now, max_nodes_per_sec));
    }
    if dropped() {
        return Err(stopped());
    }
    let plan = Plan::of(verdicts);
    let written = if plan.settlements.is_empty() {
        Vec::new()
    } else {
        store.settle(worker_id, &plan.settlements, now)?
    };
    let outcomes: Vec<Result<(), ApiError>> = plan
        .finish(written)
        .into_iter()
        .map(|o| o.map_err(ApiError::from))
        .collect();
    crate::net::metrics::results_settled(
        worker_id,
        outcomes
            .iter()
            .map(|o| o.as_ref().err().map(|e| e.code.as_str())),
    );
    Ok(outcomes)
}
