//! The HTTP API: thin axum handlers over the [`Store`] and the pure decision modules.
//!
//! Worker endpoints (`POST /api/v1/{register,fetch,submit,abandon}`) take and return bincode
//! bodies ([`c960_common::codec`]) and, after registration, a bearer token ([`crate::auth`]);
//! they are rate limited ([`crate::limits`]). Human endpoints (`GET /api/v1/status`, the table
//! export) are public and return JSON or CSV; admin endpoints ([`crate::admin`]) need the admin
//! token. Every refusal is an [`ApiError`]: HTTP status + machine-readable code +
//! message, as a JSON [`ErrorBody`] on every endpoint. `docs/protocol.md` lists the codes.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use c960_common::codec;
use c960_common::digest::result_digest;
use c960_common::wire::{
    AbandonRequest, AbandonResponse, Assignment, BatchedOutcome, BatchedResult, CONTENT_TYPE,
    ErrorBody, FailRequest, FailResponse, FetchBatchRequest, FetchBatchResponse, FetchRequest,
    FetchResponse, MAX_BATCH, MAX_BODY_BYTES, PROTOCOL_VERSION, RegisterRequest, RegisterResponse,
    SubmitBatchRequest, SubmitBatchResponse, SubmitRequest, SubmitResponse, WorkUnitKind,
    WorkerAuth,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::auth::{self, AuthedWorker, Enrolment};
use crate::checker::CheckBudget;
use crate::export;
use crate::limits::{self, Keyed, Limiter, Rate};
use crate::scheduler::ReplicaState;
use crate::stall::{self, StallWatch, StalledCampaign};
use crate::store::{
    CampaignProgress, CheckCost, Lease, LeaseInfo, Settlement, Store, StoreError, Submission,
    WorkerSummary,
};
use crate::trust::{self, Integrity};
use crate::{admin, validator};

/// What one client may make the coordinator do.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Requests per client address on the worker API (TCP peer address).
    pub per_address: Rate,
    /// Requests per worker on the authenticated worker API.
    pub per_worker: Rate,
    /// Leases one worker may hold open at once (0: no cap).
    pub max_open_leases: u64,
    /// Longest time a request may take before it is answered with 503 `timeout`.
    pub request_timeout: Duration,
    /// Registrations per address block ([`crate::trust::address_block`]): a sybil farm behind
    /// one address cannot mint identities at will.
    pub registrations_per_block: Rate,
    /// Failed admin authentications per client address (429 `rate_limited` beyond).
    pub admin_failures: Rate,
    /// Table exports (`/campaigns/{id}/table`, `/balance`) per client address.
    pub export_per_address: Rate,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_address: Rate::new(50.0, 200.0),
            per_worker: Rate::new(5.0, 20.0),
            max_open_leases: 64,
            request_timeout: Duration::from_secs(30),
            registrations_per_block: Rate::new(1.0 / 60.0, 10.0),
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
    /// Lost votes + refused results after which a worker gets no more work (0: never).
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
    /// Workers that register with the enrolment secret are the operator's own and trusted at
    /// once (`run`'s local workers); off for `serve`, where the secret may be shared.
    pub trust_enrolled: bool,
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
            trust_enrolled: false,
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
    /// Who got no work at its last fetch, to notice campaigns no connected worker may take.
    pub stall: Arc<StallWatch>,
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
        let registrations = Arc::new(Keyed::new(config.limits.registrations_per_block, 100_000));
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
            stall: Arc::default(),
        }
    }
}

/// The one error type of the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable code.
    pub code: &'static str,
    /// Human-readable message.
    pub message: String,
    /// Seconds to wait before retrying, sent as `Retry-After` (429, 503).
    pub retry_after_secs: Option<u32>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    /// The JSON body sent for this error (also one refused result of a batch).
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            code: self.code.to_string(),
            message: self.message.clone(),
        }
    }

    /// The same error with a `Retry-After`.
    pub fn with_retry_after(mut self, secs: u32) -> ApiError {
        self.retry_after_secs = Some(secs);
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, "{}", self.message);
        } else {
            tracing::debug!(code = self.code, status = %self.status, "{}", self.message);
        }
        // A 500 says what failed in the log only, never to the client.
        let body = if self.status == StatusCode::INTERNAL_SERVER_ERROR {
            ErrorBody {
                code: self.code.to_string(),
                message: "internal error; the coordinator's log has the details".into(),
            }
        } else {
            self.body()
        };
        let mut resp = (self.status, axum::Json(body)).into_response();
        resp.extensions_mut()
            .insert(crate::metrics::RefusalCode(self.code));
        if let Some(secs) = self.retry_after_secs {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let msg = e.to_string();
        match e {
            StoreError::UnknownWorker(_) => {
                ApiError::new(StatusCode::UNAUTHORIZED, "unknown_worker", msg)
            }
            StoreError::UnknownWorkunit(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_workunit", msg)
            }
            StoreError::UnknownLease(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_lease", msg)
            }
            StoreError::LeaseNotYours(_) => {
                ApiError::new(StatusCode::FORBIDDEN, "lease_not_yours", msg)
            }
            StoreError::LeaseClosed(..) => ApiError::new(StatusCode::CONFLICT, "lease_closed", msg),
            StoreError::LeaseExpired(_) => {
                ApiError::new(StatusCode::CONFLICT, "lease_expired", msg)
            }
            StoreError::LeaseLimit { .. } => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "lease_limit", msg)
                    .with_retry_after(60)
            }
            StoreError::NotInGoodStanding { banned: true, .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "worker_banned", msg)
            }
            StoreError::NotInGoodStanding { banned: false, .. } => {
                ApiError::new(StatusCode::FORBIDDEN, "worker_quarantined", msg)
            }
            StoreError::UnknownCampaign(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_campaign", msg)
            }
            StoreError::Enrolment(code) => ApiError::new(StatusCode::UNAUTHORIZED, code, msg),
            StoreError::Db(_) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", msg),
            StoreError::Bad(_) => ApiError::new(StatusCode::BAD_REQUEST, "bad_field", msg),
        }
    }
}

/// A bincode request body: content type checked, size limited, protocol version checked from
/// the prefix before the rest is decoded (so an old or new client gets `unsupported_protocol`,
/// not `bad_body`), and the whole body consumed.
pub struct Wire<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Wire<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, Self::Rejection> {
        let ct = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !ct.starts_with(CONTENT_TYPE) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "wrong_content_type",
                format!("content type must be {CONTENT_TYPE}, got {ct:?}"),
            ));
        }
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("body exceeds {MAX_BODY_BYTES} bytes"),
            )
        };
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
            return Err(too_large());
        }
        let bytes = axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
            .await
            .map_err(|_| too_large())?;
        let version = codec::peek_protocol(&bytes).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_body",
                format!("no protocol version: {e}"),
            )
        })?;
        if version != PROTOCOL_VERSION {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "unsupported_protocol",
                format!(
                    "protocol {version} is not supported; this coordinator speaks {PROTOCOL_VERSION}"
                ),
            ));
        }
        let value = codec::decode(&bytes)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_body", e.to_string()))?;
        Ok(Wire(value))
    }
}

/// The client's address, where the server was started with connect info (else `None`).
pub struct Peer(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Peer(
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip()),
        ))
    }
}

impl Peer {
    /// The address block ([`trust::address_block`]).
    pub fn block(&self) -> Option<String> {
        self.0.map(trust::address_block)
    }
}

/// A bincode response body.
fn wire_response<T: Serialize>(value: &T) -> Result<Response, ApiError> {
    let bytes = codec::encode(value)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], bytes).into_response())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Runs blocking store work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
}

/// The router of the whole API, without a socket (tests call it directly or serve it).
///
/// Worker handlers report a bad body or protocol version before a missing or bad token, so a
/// protocol-1 worker (credentials in the body, no header) is told `unsupported_protocol`.
///
/// The per-address rate limit needs the peer address: serve it with
/// `into_make_service_with_connect_info::<SocketAddr>()` (without it, that limit is off).
pub fn app(state: AppState) -> Router {
    let worker_api = Router::new()
        .route("/api/v1/register", post(register))
        .route("/api/v1/fetch", post(fetch))
        .route("/api/v1/submit", post(submit))
        .route("/api/v1/fetch-batch", post(fetch_batch))
        .route("/api/v1/submit-batch", post(submit_batch))
        .route("/api/v1/abandon", post(abandon))
        .route("/api/v1/fail", post(fail))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::per_address,
        ));
    // Exports read a whole campaign (from the store's read-only connection): rate-limited.
    let exports = Router::new()
        .route("/api/v1/campaigns/{id}/table", get(table))
        .route("/api/v1/campaigns/{id}/balance", get(balance))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::exports,
        ));
    // Public read-only endpoints and pages: gzip, any origin may read them.
    let public = Router::new()
        .route("/api/v1/status", get(status))
        .merge(exports)
        .merge(crate::pages::routes(state.store.clone()))
        .layer(crate::hygiene::public_cors())
        .layer(crate::hygiene::gzip());
    Router::new()
        .merge(worker_api)
        .merge(admin::routes())
        .merge(public)
        .merge(crate::metrics::routes(state.store.clone()))
        .fallback(|| async {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
        })
        // Bodies other than the bincode ones (admin JSON) are bounded too.
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            limits::timeout,
        ))
        .layer(axum::middleware::from_fn(crate::hygiene::json_405))
        .layer(axum::middleware::from_fn(crate::metrics::track))
        .with_state(state)
}

async fn register(
    State(st): State<AppState>,
    peer: Peer,
    Wire(req): Wire<RegisterRequest>,
) -> Result<Response, ApiError> {
    if req.name.len() > MAX_LABEL_BYTES {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_field",
            format!("name longer than {MAX_LABEL_BYTES} bytes"),
        ));
    }
    let engine = engine_label(&req.engine)?;
    st.config.enrolment.admit(req.enrol_secret.as_deref())?;
    // With per-volunteer tokens the secret is a token, checked and spent by the store.
    let token = match (&st.config.enrolment, req.enrol_secret.as_deref()) {
        (Enrolment::Tokens, Some(t)) => {
            let (id, secret) =
                auth::parse_token(t).ok_or(StoreError::Enrolment("bad_enrolment_token"))?;
            Some((id, auth::sha256(secret)))
        }
        _ => None,
    };
    let block = peer.block();
    if let Some(b) = &block
        && let Err(wait) = st.registrations.check(b.clone(), now_ms().max(0) as u64)
    {
        let secs = wait.as_secs().max(1) as u32;
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("too many registrations from {b}; retry in {secs} s"),
        )
        .with_retry_after(secs));
    }
    let secret = auth::new_secret();
    let hash = auth::sha256(&secret);
    let operator_own = st.config.trust_enrolled
        && matches!(st.config.enrolment, Enrolment::Secret(_))
        && req.enrol_secret.is_some();
    let store = st.store.clone();
    let (name, engine_log) = (req.name.clone(), engine.clone());
    let id = blocking(move || {
        let id = match token {
            Some((token_id, token_hash)) => store.register_worker_with_token(
                &req.name,
                &hash,
                &engine,
                block.as_deref(),
                token_id,
                &token_hash,
                now_ms(),
            )?,
            None => {
                store.register_worker_from(&req.name, &hash, &engine, block.as_deref(), now_ms())?
            }
        };
        if operator_own {
            store.set_trust(id, true)?;
        }
        Ok(id)
    })
    .await?;
    tracing::info!(worker = id, name = %name.escape_debug(), engine = %engine_log.escape_debug(), "worker registered");
    wire_response(&RegisterResponse {
        auth: WorkerAuth {
            worker_id: id,
            token: auth::format_token(id, &secret),
        },
    })
}

/// Longest worker name, engine name and engine version accepted, in bytes: they are stored with
/// the worker and with every result.
pub const MAX_LABEL_BYTES: usize = 100;

/// The engine as stored (`name version`), or 400 `bad_field` if either part is too long.
fn engine_label(e: &c960_common::wire::EngineInfo) -> Result<String, ApiError> {
    if e.name.len() > MAX_LABEL_BYTES || e.version.len() > MAX_LABEL_BYTES {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_field",
            format!("engine name or version longer than {MAX_LABEL_BYTES} bytes"),
        ));
    }
    Ok(format!("{} {}", e.name, e.version))
}

/// Leases up to `max_units` replicas for `w`, the open-lease cap checked in the same transaction.
async fn lease_for(
    st: &AppState,
    worker_id: u64,
    req_capabilities: c960_common::wire::Capabilities,
    max_units: u32,
    peer: &Peer,
) -> Result<Vec<Lease>, ApiError> {
    let lease_ms = st.config.lease.as_millis() as i64;
    let cap = st.config.limits.max_open_leases;
    let store = st.store.clone();
    let block = peer.block();
    blocking(move || {
        Ok(store.assign_from(
            worker_id,
            &req_capabilities,
            now_ms(),
            lease_ms,
            max_units,
            cap,
            block.as_deref(),
        )?)
    })
    .await
}

fn assignment(l: Lease) -> Assignment {
    Assignment {
        lease_id: l.lease_id,
        workunit_id: l.workunit_id,
        kind: l.kind,
        deadline_unix_ms: l.deadline_ms,
    }
}

/// Records a fetch's outcome; when every connected worker is getting nothing, logs each
/// campaign that no connected worker may take, once (see [`crate::stall`]).
async fn note_fetch(st: &AppState, worker: u64, got_work: bool) {
    let now = std::time::Instant::now();
    st.stall.record(worker, got_work, now);
    if got_work || !st.stall.every_connected_worker_idle(now) {
        return;
    }
    let store = st.store.clone();
    let Ok(Ok(progress)) = tokio::task::spawn_blocking(move || store.progress()).await else {
        return;
    };
    for id in st.stall.newly_stalled(&stall::stalled(&progress, true)) {
        tracing::warn!(campaign = id, "campaign stalled: {}", stall::STALLED_REASON);
    }
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
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<FetchRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    let leases = lease_for(&st, w.id, req.capabilities, 1, &peer).await?;
    note_fetch(&st, w.id, !leases.is_empty()).await;
    match leases.into_iter().next() {
        Some(l) => wire_response(&FetchResponse::Assigned(assignment(l))),
        None => no_work(&st, |retry_after_secs| FetchResponse::NoWork {
            retry_after_secs,
        }),
    }
}

async fn fetch_batch(
    State(st): State<AppState>,
    peer: Peer,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<FetchBatchRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    if req.max_units == 0 || req.max_units > MAX_BATCH {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_field",
            format!("max_units must be 1..={MAX_BATCH}, got {}", req.max_units),
        ));
    }
    let leases = lease_for(&st, w.id, req.capabilities, req.max_units, &peer).await?;
    note_fetch(&st, w.id, !leases.is_empty()).await;
    if leases.is_empty() {
        return no_work(&st, |retry_after_secs| FetchBatchResponse::NoWork {
            retry_after_secs,
        });
    }
    wire_response(&FetchBatchResponse::Assigned(
        leases.into_iter().map(assignment).collect(),
    ))
}

/// What becomes of one submitted result once checked against its lease.
enum Verdict {
    /// Verified: store it.
    Store(Settlement),
    /// Broken or lying: close the lease as an error (a strike), and tell the worker why.
    Refuse(Settlement, ApiError),
    /// Not this worker's open lease: nothing to write.
    Reject(ApiError),
}

/// Checks one result against its lease: holder, state, kind, digest (recomputed from the
/// payload) and shape; then, as checks whose failure is evidence against the worker, the public
/// known answer and the plausibility of its speed (nodes per second from lease issue at
/// `now_ms`, at most `max_nodes_per_sec`). Pure: the store is written afterwards, in one
/// transaction per request.
fn judge(
    worker_id: u64,
    lease: Option<LeaseInfo>,
    r: BatchedResult,
    engine: &str,
    now_ms: i64,
    max_nodes_per_sec: u64,
) -> Verdict {
    let Some(lease) = lease.filter(|l| l.workunit_id == r.workunit_id) else {
        return Verdict::Reject(StoreError::UnknownLease(r.lease_id).into());
    };
    if lease.worker_id != worker_id {
        return Verdict::Reject(StoreError::LeaseNotYours(r.lease_id).into());
    }
    if lease.state != ReplicaState::InProgress {
        return Verdict::Reject(
            match lease.state {
                ReplicaState::Expired => StoreError::LeaseExpired(lease.id),
                s => StoreError::LeaseClosed(lease.id, s.name()),
            }
            .into(),
        );
    }
    // The replica is closed as an error (a strike, or for a failed check the evidence that
    // quarantines the worker), so that it is reissued to someone else.
    let refusal = |code: &'static str, reason: String, message: String, failed_check: bool| {
        Verdict::Refuse(
            Settlement::Refuse {
                lease_id: lease.id,
                reason,
                failed_check,
            },
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message),
        )
    };
    let refuse =
        |code: &'static str, reason: String, message: String| refusal(code, reason, message, false);
    let shape = validator::check_result_shape(&lease.kind, &r.result);
    // A result of the wrong kind cannot match any digest: say so first.
    if let Err(e @ validator::ShapeError::WrongKind { .. }) = &shape {
        return refuse("wrong_result_kind", e.to_string(), e.to_string());
    }
    // The digest is recomputed from the payload: a mismatch means a broken or lying client.
    let digest = result_digest(r.workunit_id, &lease.kind, &r.result);
    if digest != r.digest {
        return refuse(
            "digest_mismatch",
            "digest mismatch".into(),
            "the digest does not match the payload".into(),
        );
    }
    if let Err(e) = shape {
        return refuse("invalid_result", e.to_string(), e.to_string());
    }
    let nodes = r.result.nodes();
    if let Some(known) = lease.known_nodes
        && known != nodes
    {
        let m = format!("{nodes} nodes contradicts the known answer of this workunit");
        return refusal("check_failed", m.clone(), m, true);
    }
    let elapsed = now_ms.saturating_sub(lease.issued_ms);
    if matches!(lease.kind, WorkUnitKind::Perft { .. })
        && !trust::plausible(nodes, elapsed, max_nodes_per_sec)
    {
        let m = format!(
            "{nodes} nodes in {elapsed} ms since the lease was issued is faster than {max_nodes_per_sec} nodes/s"
        );
        return refusal("implausible_speed", m.clone(), m, true);
    }
    Verdict::Store(Settlement::Store {
        lease_id: lease.id,
        submission: Submission {
            result: r.result,
            digest,
            elapsed_ms: r.elapsed_ms,
            engine: engine.to_string(),
        },
    })
}

/// Judges results and writes every settlement in one transaction; one outcome per result.
fn settle_results(
    store: &dyn Store,
    worker_id: u64,
    results: Vec<BatchedResult>,
    engine: &str,
    max_nodes_per_sec: u64,
) -> Result<Vec<Result<(), ApiError>>, ApiError> {
    let ids: Vec<u64> = results.iter().map(|r| r.lease_id).collect();
    let leases = store.leases(&ids)?;
    let mut outcomes: Vec<Result<(), ApiError>> = Vec::with_capacity(results.len());
    let mut settlements = Vec::new();
    // For each settlement, the outcome slot it answers and the error to report if it is stored.
    let mut slots = Vec::new();
    let now = now_ms();
    for (r, lease) in results.into_iter().zip(leases) {
        match judge(worker_id, lease, r, engine, now, max_nodes_per_sec) {
            Verdict::Store(s) => {
                slots.push((outcomes.len(), None));
                settlements.push(s);
                outcomes.push(Ok(()));
            }
            Verdict::Refuse(s, e) => {
                slots.push((outcomes.len(), Some(e)));
                settlements.push(s);
                outcomes.push(Ok(()));
            }
            Verdict::Reject(e) => outcomes.push(Err(e)),
        }
    }
    if !settlements.is_empty() {
        let written = store.settle(worker_id, &settlements, now)?;
        for ((slot, refusal), w) in slots.into_iter().zip(written) {
            outcomes[slot] = match (w, refusal) {
                (Err(e), _) => Err(e.into()),
                (Ok(()), Some(e)) => Err(e),
                (Ok(()), None) => Ok(()),
            };
        }
    }
    crate::metrics::results_settled(
        worker_id,
        outcomes.iter().map(|o| o.as_ref().err().map(|e| e.code)),
    );
    Ok(outcomes)
}

async fn submit(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<SubmitRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    let engine = engine_label(&req.engine)?;
    let store = st.store.clone();
    let nps = st.config.integrity.max_nodes_per_sec;
    blocking(move || {
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
        settle_results(&*store, w.id, vec![result], &engine, nps)?
            .pop()
            .unwrap_or(Ok(()))
    })
    .await?;
    wire_response(&SubmitResponse::Accepted)
}

async fn submit_batch(
    State(st): State<AppState>,
    auth: Result<AuthedWorker, ApiError>,
    Wire(req): Wire<SubmitBatchRequest>,
) -> Result<Response, ApiError> {
    let AuthedWorker(w) = auth?;
    if req.results.is_empty() || req.results.len() > MAX_BATCH as usize {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_field",
            format!(
                "a batch holds 1..={MAX_BATCH} results, got {}",
                req.results.len()
            ),
        ));
    }
    let engine = engine_label(&req.engine)?;
    let store = st.store.clone();
    let nps = st.config.integrity.max_nodes_per_sec;
    let outcomes =
        blocking(move || settle_results(&*store, w.id, req.results, &engine, nps)).await?;
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

/// The JSON of `GET /api/v1/status`.
#[derive(Serialize)]
pub struct StatusBody {
    /// Protocol version spoken.
    pub protocol: u32,
    /// Replicas waiting to be leased, over all campaigns.
    pub queue_depth: u64,
    /// Leases in progress, over all campaigns.
    pub in_flight: u64,
    /// Workers, with their trust and checks.
    pub workers: WorkerSummary,
    /// What the integrity checks cost: coordinator check nodes, replicas per valid workunit.
    pub integrity: CheckCost,
    /// Per campaign.
    pub campaigns: Vec<CampaignProgress>,
    /// Campaigns that no connected worker may take (see [`crate::stall`]).
    pub stalled: Vec<StalledCampaign>,
}

async fn status(State(st): State<AppState>) -> Result<Response, ApiError> {
    let store = st.store.clone();
    let idle = st
        .stall
        .every_connected_worker_idle(std::time::Instant::now());
    let body = blocking(move || {
        let now = now_ms();
        store.expire_leases(now)?;
        let campaigns = store.progress()?;
        Ok(StatusBody {
            protocol: PROTOCOL_VERSION,
            queue_depth: campaigns.iter().map(|c| c.queued_replicas).sum(),
            in_flight: campaigns.iter().map(|c| c.in_flight).sum(),
            workers: store.worker_summary(now)?,
            integrity: store.check_cost()?,
            stalled: stall::stalled(&campaigns, idle)
                .into_iter()
                .map(|campaign| StalledCampaign {
                    campaign,
                    reason: stall::STALLED_REASON,
                })
                .collect(),
            campaigns,
        })
    })
    .await?;
    Ok(axum::Json(body).into_response())
}

/// Query of the table export.
#[derive(serde::Deserialize)]
struct TableQuery {
    format: Option<String>,
}

async fn table(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<TableQuery>,
) -> Result<Response, ApiError> {
    let id: u64 = id.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_query",
            format!("campaign id {id:?} is not a number"),
        )
    })?;
    let format = export::Format::parse(q.format.as_deref().unwrap_or("json"))
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_query", e))?;
    let store = st.store.clone();
    let text = blocking(move || Ok(export::render(&*store, id, format)?))
        .await?
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "bad_query", e))?;
    Ok((
        [(header::CONTENT_TYPE, format.content_type())],
        Body::from(text),
    )
        .into_response())
}

/// `GET /api/v1/campaigns/{id}/balance`: the balance report of an analysis campaign (JSON, or
/// `?format=svg` for the chart).
async fn balance(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<TableQuery>,
) -> Result<Response, ApiError> {
    let format = match q.format.as_deref().unwrap_or("json") {
        "json" => "balance",
        "svg" => "svg",
        other => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_query",
                format!("unknown format {other:?}; use json or svg"),
            ));
        }
    };
    table(
        State(st),
        Path(id),
        Query(TableQuery {
            format: Some(format.into()),
        }),
    )
    .await
}
