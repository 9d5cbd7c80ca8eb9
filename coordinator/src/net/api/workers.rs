//! The worker protocol (`POST /api/v1/{register,fetch,fetch-batch,submit,submit-batch,
//! heartbeat,standing,abandon,fail}`): bincode bodies ([`c960_common::codec`]), a bearer token after registration, rate
//! limited per address and per worker. The handlers read and write the store; what to accept is
//! decided in [`crate::work::judge`] and [`crate::work::transitioner`], and its refusals answered as
//! [`ApiError`]s (`net/api/error.rs` maps them).

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use c960_common::error_code::ErrorCode;
use c960_common::wire::{
    AbandonRequest, AbandonResponse, Assignment, BatchedOutcome, BatchedResult, FailRequest,
    FailResponse, FetchBatchRequest, FetchBatchResponse, FetchRequest, FetchResponse,
    HeartbeatRequest, HeartbeatResponse, MAX_BATCH, RegisterRequest, RegisterResponse,
    StandingRequest, SubmitBatchRequest, SubmitBatchResponse, SubmitRequest, SubmitResponse,
    WorkerAuth,
};
use serde::Serialize;

use super::error::ApiError;
use super::extract::{AuthedWorker, NamedBuild, Peer, Wire, wire_response};
use super::layers;
use super::session::{
    self, Applicant, HandOut, Registered, check_label, engine_label, settle_results,
};
use super::state::{AppState, blocking, blocking_until_dropped};
use crate::clock::now_ms;
use crate::model::{Lease, Stall, StoreError, WorkerRecord};
use crate::work::stall::{self, FetchOutcome};
use c960_common::wait::Waiting;

/// The worker routes, rate limited per address.
pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/api/v1/register", post(register))
        .route("/api/v1/fetch", post(fetch))
        .route("/api/v1/submit", post(submit))
        .route("/api/v1/fetch-batch", post(fetch_batch))
        .route("/api/v1/submit-batch", post(submit_batch))
        .route("/api/v1/abandon", post(abandon))
        .route("/api/v1/heartbeat", post(heartbeat))
        .route("/api/v1/standing", post(standing))
        .route("/api/v1/fail", post(fail))
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            layers::per_address,
        ))
        .route_layer(axum::middleware::from_fn(says_max_batch))
}

/// Every answer of the worker API says the largest batch this coordinator takes
/// ([`c960_common::wire::MAX_BATCH_HEADER`]): a worker sizes its batches to it, and to
/// [`c960_common::wire::LEGACY_MAX_BATCH`] where a coordinator does not say.
async fn says_max_batch(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let mut resp = next.run(req).await;
    resp.headers_mut().insert(
        c960_common::wire::MAX_BATCH_HEADER,
        axum::http::HeaderValue::from(MAX_BATCH),
    );
    resp
}

async fn register(
    State(st): State<AppState>,
    peer: Peer,
    build: NamedBuild,
    Wire(req): Wire<RegisterRequest>,
) -> Result<Response, ApiError> {
    check_label("name", &req.name)?;
    let engine = engine_label(&req.engine)?;
    let applicant = Applicant {
        name: req.name,
        engine,
        build: build.label(),
        block: peer.block(),
        presented: req.enrol_secret,
        boinc: None,
    };
    let (name, engine_log) = (applicant.name.clone(), applicant.engine.clone());
    let st2 = st.clone();
    let Registered {
        worker_id: id,
        secret,
    } = blocking(move || Ok(session::register(&st2, applicant)?)).await?;
    tracing::info!(
        worker = id,
        name = %name.escape_debug(),
        engine = %engine_log.escape_debug(),
        address = peer.0.map(tracing::field::display),
        "worker registered"
    );
    wire_response(&RegisterResponse {
        auth: WorkerAuth {
            worker_id: id,
            token: crate::integrity::secrets::format_token(id, &secret),
        },
    })
}

/// Leases up to `max_units` replicas for `w`, the open-lease cap checked in the same
/// transaction; when there are none, why ([`crate::store::Store::waiting_for`]: the first of what it names is
/// the worker's, as [`stall::told`] words it; all of it goes to the stall watch).
async fn lease_for(
    st: &AppState,
    worker_id: u64,
    req_capabilities: c960_common::wire::Capabilities,
    max_units: u32,
    peer: &Peer,
) -> Result<(Vec<Lease>, Option<Waiting>), ApiError> {
    let (st2, block) = (st.clone(), peer.block());
    let HandOut { leases, waiting } = blocking(move || {
        session::hand_out(
            &st2,
            worker_id,
            &req_capabilities,
            max_units,
            block.as_deref(),
        )
    })
    .await?;
    let others_busy = st.stall.others_busy(worker_id, std::time::Instant::now());
    let told = stall::told(&waiting, others_busy);
    let outcome = if leases.is_empty() {
        FetchOutcome::Nothing(waiting)
    } else {
        FetchOutcome::Work
    };
    note_fetch(st, worker_id, outcome).await;
    Ok((leases, told))
}

fn assignment(l: Lease) -> Assignment {
    Assignment {
        lease_id: l.lease_id,
        workunit_id: l.workunit_id,
        kind: l.kind,
        deadline_unix_ms: l.deadline_ms,
    }
}

/// Records a fetch's outcome; when every connected worker is getting nothing, records on each
/// campaign that none of them may take why (and logs it once), and clears the record when that
/// ends (see [`crate::work::stall`]).
async fn note_fetch(st: &AppState, worker: u64, outcome: FetchOutcome) {
    let now = std::time::Instant::now();
    st.stall.record(worker, outcome, now);
    let reports = st.stall.idle_reports(now);
    if reports.is_none() && !st.stall.has_recorded() {
        return;
    }
    let store = st.store.clone();
    let Ok(Ok(progress)) = tokio::task::spawn_blocking(move || store.progress()).await else {
        return;
    };
    let stalled = match &reports {
        Some(r) => stall::stalled(&progress, &r.iter().map(Vec::as_slice).collect::<Vec<_>>()),
        None => Default::default(),
    };
    for (campaign, waiting) in st.stall.changes(&stalled) {
        // Stalls come and go in seconds (an expired replica waits for the next fetch): logged
        // at INFO, and at WARN once one has lasted a minute (below).
        match &waiting {
            Some(w) => tracing::info!(
                campaign,
                cause = w.cause.name(),
                "campaign stalled: {}",
                w.describe()
            ),
            None => tracing::info!(campaign, "campaign no longer stalled"),
        }
        let store = st.store.clone();
        let stall = waiting.map(|w| Stall {
            cause: w.cause,
            replicas: w.replicas,
            since_ms: now_ms(),
        });
        if let Ok(Err(e)) =
            tokio::task::spawn_blocking(move || store.set_stall(campaign, stall)).await
        {
            tracing::warn!(campaign, "could not record the stall: {e}");
        }
    }
    for campaign in st.stall.newly_lasting(now) {
        if let Some(w) = stalled.get(&campaign) {
            tracing::warn!(
                campaign,
                cause = w.cause.name(),
                "campaign stalled for a minute: {}",
                w.describe()
            );
        }
    }
}

/// Records the build `w` names now where it differs from the one stored (an upgrade, or a
/// worker from before 0.2 that names none): one write per change, none per fetch otherwise.
async fn note_build(st: &AppState, w: &WorkerRecord, build: NamedBuild) -> Result<(), ApiError> {
    let build = build.label();
    if build == w.build {
        return Ok(());
    }
    let (store, id) = (st.store.clone(), w.id);
    blocking(move || Ok(store.set_worker_build(id, build.as_deref())?)).await
}

/// "No work": the body (built by `body`) with a `Retry-After` header.
fn no_work<T: Serialize>(st: &AppState, body: impl FnOnce(u32) -> T) -> Result<Response, ApiError> {
    let secs = st.config.retry_after_secs;
    let mut resp = wire_response(&body(secs))?;
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    Ok(resp)
}

async fn fetch(
    State(st): State<AppState>,
    peer: Peer,
    build: NamedBuild,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<FetchRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    note_build(&st, &w, build).await?;
    let (leases, waiting) = lease_for(&st, w.id, req.capabilities, 1, &peer).await?;
    match leases.into_iter().next() {
        Some(l) => wire_response(&FetchResponse::Assigned(assignment(l))),
        None => no_work(&st, |retry_after_secs| FetchResponse::NoWork {
            retry_after_secs,
            waiting,
        }),
    }
}

async fn fetch_batch(
    State(st): State<AppState>,
    peer: Peer,
    build: NamedBuild,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<FetchBatchRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    note_build(&st, &w, build).await?;
    if req.max_units == 0 || req.max_units > MAX_BATCH {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadField,
            format!("max_units must be 1..={MAX_BATCH}, got {}", req.max_units),
        ));
    }
    let (leases, waiting) = lease_for(&st, w.id, req.capabilities, req.max_units, &peer).await?;
    if leases.is_empty() {
        return no_work(&st, |retry_after_secs| FetchBatchResponse::NoWork {
            retry_after_secs,
            waiting,
        });
    }
    wire_response(&FetchBatchResponse::Assigned(
        leases.into_iter().map(assignment).collect(),
    ))
}

/// The one result of `POST /api/v1/submit`: bounded in bytes by the body limit before it is
/// decoded; judged only while no other submission of its lease (and at most one other of its
/// worker) is ([`super::limits::Submissions`]), and not past the request's end.
async fn submit(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<SubmitRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    let engine = engine_label(&req.engine)?;
    let claim = st.submissions.claim(w.id, &[req.lease_id])?;
    let store = st.store.clone();
    let nps = st.config.integrity.max_nodes_per_sec;
    blocking_until_dropped(move |dropped| {
        let _claim = claim;
        if !store.workunit_exists(req.workunit_id)? {
            return Err(StoreError::UnknownWorkunit(req.workunit_id).into());
        }
        let result = BatchedResult {
            lease_id: req.lease_id,
            workunit_id: req.workunit_id,
            result: req.result,
            elapsed_ms: req.elapsed_ms,
            digest: req.digest,
        };
        settle_results(&*store, w.id, vec![result], &engine, nps, dropped)?
            .pop()
            .unwrap_or(Ok(()))
    })
    .await?;
    wire_response(&SubmitResponse::Accepted)
}

/// `POST /api/v1/submit-batch`: as [`submit`], for up to [`MAX_BATCH`] results.
async fn submit_batch(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<SubmitBatchRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    if req.results.is_empty() || req.results.len() > MAX_BATCH as usize {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadField,
            format!(
                "a batch holds 1..={MAX_BATCH} results, got {}",
                req.results.len()
            ),
        ));
    }
    let engine = engine_label(&req.engine)?;
    let leases: Vec<u64> = req.results.iter().map(|r| r.lease_id).collect();
    let claim = st.submissions.claim(w.id, &leases)?;
    let store = st.store.clone();
    let nps = st.config.integrity.max_nodes_per_sec;
    let outcomes = blocking_until_dropped(move |dropped| {
        let _claim = claim;
        settle_results(&*store, w.id, req.results, &engine, nps, dropped)
    })
    .await?;
    wire_response(&SubmitBatchResponse {
        outcomes: outcomes
            .into_iter()
            .map(|o| match o {
                Ok(()) => BatchedOutcome::Accepted,
                Err(e) => BatchedOutcome::Refused(e.body()),
            })
            .collect(),
    })
}

async fn fail(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<FailRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    let store = st.store.clone();
    blocking(move || Ok(store.fail(w.id, req.lease_id, &req.reason, now_ms())?)).await?;
    wire_response(&FailResponse::Recorded)
}

async fn heartbeat(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<HeartbeatRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    if req.lease_ids.len() > MAX_BATCH as usize {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadField,
            format!(
                "a heartbeat names at most {MAX_BATCH} leases, got {}",
                req.lease_ids.len()
            ),
        ));
    }
    let store = st.store.clone();
    let renewed = blocking(move || Ok(store.renew_leases(w.id, &req.lease_ids, now_ms())?)).await?;
    wire_response(&HeartbeatResponse { renewed })
}

async fn standing(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(_): Wire<StandingRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    let store = st.store.clone();
    wire_response(&blocking(move || Ok(store.worker_tally(w.id)?)).await?)
}

async fn abandon(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<AbandonRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    let store = st.store.clone();
    blocking(move || Ok(store.abandon(w.id, req.lease_id, now_ms())?)).await?;
    wire_response(&AbandonResponse::Released)
}

#[cfg(test)]
mod tests {
    use c960_common::error_code::ErrorCode;

    use crate::integrity::label::MAX_LABEL_BYTES;
    use crate::net::api::session::{check_label, engine_label};

    #[test]
    fn labels_are_bounded() {
        let e = |name: &str| c960_common::wire::EngineInfo {
            name: name.into(),
            version: "1".into(),
        };
        assert_eq!(engine_label(&e("c960")).unwrap(), "c960 1");
        let long = "x".repeat(MAX_LABEL_BYTES + 1);
        assert_eq!(
            engine_label(&e(&long)).unwrap_err().code,
            ErrorCode::BadField
        );
        let turned = engine_label(&e("sf\u{202E}")).unwrap_err();
        assert_eq!(
            (turned.status.as_u16(), turned.code),
            (400, ErrorCode::BadLabel)
        );
        assert!(
            turned
                .message
                .starts_with("engine name holds the bidirectional control U+202E")
        );
        assert_eq!(
            check_label("name", "w\u{7}").unwrap_err().code,
            ErrorCode::BadLabel
        );
    }
}
