//! The BOINC routes (`serve --boinc`): the master page `GET /boinc/`, the scheduler
//! `POST /boinc/cgi`, downloads `GET /boinc/download/{file}`, the upload handler
//! `POST /boinc/file_upload_handler`, and the Manager's wizard: `get_project_config.php`,
//! `lookup_account.php`, `create_account.php`. The protocol is read and written by
//! [`crate::net::boinc`]; here it meets the worker session ([`super::session`]: a new host
//! registers, work is handed out and uploads are judged as for a native worker) and the store.
//!
//! BOINC's client treats any HTTP status but 200 from the scheduler or the upload handler as a
//! failed request and backs off, so both answer 200 with the refusal inside the XML (a
//! `<message>` and a delay; an upload status), their rate limits included; the wizard's pages
//! answer 200 with BOINC's `<error>`. Downloads and unknown paths answer like every other
//! endpoint (404 with a JSON code), and the pages and downloads meet the per-address limit as
//! the worker routes do (429 `rate_limited` + `Retry-After`).
//!
//! The limits are the worker routes' own: a request takes a token of its address's bucket
//! ([`super::limits::Limiter::check_address`]) and, once its host is known, of the host's
//! (`check_worker`: a BOINC host is a worker); a new host is a registration
//! ([`session::register`]); an upload is judged at most once at a time per lease
//! ([`super::limits::Submissions`]) and not past the request's end.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use c960_common::error_code::ErrorCode;
use c960_common::wire::{BatchedResult, Capabilities, SubmitRequest};

use super::auth::Enrolment;
use super::error::ApiError;
use super::extract::Peer;
use super::layers;
use super::session::{self, Applicant, HandOut, Refusal, engine_label, settle_results};
use super::state::{AppState, blocking, blocking_until_dropped};
use crate::clock::now_ms;
use crate::model::{BoincIdentity, ReplicaState};
use crate::net::boinc::accounts::{self, AccountQuery, AccountReply, Lookup, WizardMode};
use crate::net::boinc::names::TaskName;
use crate::net::boinc::scheduler_rpc::{
    self, CreditFigures, Priority, Reply, SchedulerRequest, Task,
};
use crate::net::boinc::upload::{self, UploadRequest, UploadStatus};
use crate::net::boinc::{Project, input_file, md5_hex};

/// The BOINC routes; empty unless `serve --boinc` configured the project.
pub fn routes(state: &AppState) -> Router<AppState> {
    if state.config.boinc.is_none() {
        return Router::new();
    }
    // Pages and downloads: the per-address limit as on the worker routes (429 + Retry-After;
    // the client retries a download later, the Manager's wizard says it could not connect).
    let pages = Router::new()
        .route("/boinc/", get(master))
        .route("/boinc", get(master))
        .route("/boinc/download/{file}", get(download))
        .route("/boinc/get_project_config.php", get(project_config))
        .route("/boinc/lookup_account.php", get(lookup_account))
        .route("/boinc/create_account.php", get(create_account))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            layers::per_address,
        ));
    // The scheduler and the upload handler: the same limits, before the body is read, the
    // refusal inside a 200 (the per-host limit, once the host is known: `answer`, `receive`).
    Router::new()
        .route(
            "/boinc/cgi",
            post(schedule).route_layer(axum::middleware::from_fn_with_state(
                state.clone(),
                scheduler_per_address,
            )),
        )
        .route(
            "/boinc/file_upload_handler",
            post(upload_file)
                .layer(DefaultBodyLimit::max(
                    upload::MAX_OUTPUT_BYTES as usize + upload::MAX_HEADER_BYTES,
                ))
                .route_layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    upload_per_address,
                )),
        )
        .merge(pages)
}

/// The per-address limit's refusal of this request, if its address is past its rate (the bucket
/// of [`layers::per_address`]); the two middlewares below answer it each in its protocol's way.
fn over_address_rate(st: &AppState, peer: &Peer) -> Option<ApiError> {
    st.limiter.check_address(peer.0?).err()
}

/// Middleware of the scheduler: the per-address limit ([`layers::per_address`]'s bucket),
/// refused as a scheduler reply ([`rate_limited`]).
async fn scheduler_per_address(
    State(st): State<AppState>,
    peer: Peer,
    req: Request,
    next: Next,
) -> Response {
    if let Some(e) = over_address_rate(&st, &peer) {
        return xml_response(rate_limited(&e).to_xml());
    }
    next.run(req).await
}

/// Middleware of the upload handler: the per-address limit, refused as a transient upload
/// status (the client uploads again later).
async fn upload_per_address(
    State(st): State<AppState>,
    peer: Peer,
    req: Request,
    next: Next,
) -> Response {
    if let Some(e) = over_address_rate(&st, &peer) {
        return xml_response(upload::reply(UploadStatus::Transient, Some(&e.message)));
    }
    next.run(req).await
}

fn project(st: &AppState) -> Result<Arc<Project>, ApiError> {
    st.config
        .boinc
        .clone()
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "BOINC is off"))
}

fn host_of(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::HOST)?.to_str().ok()
}

fn xml_response(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/xml; charset=utf-8")], body).into_response()
}

async fn master(State(st): State<AppState>, headers: HeaderMap) -> Result<Response, ApiError> {
    let p = project(&st)?;
    let base = p.base(host_of(&headers));
    Ok((
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        scheduler_rpc::master_page(&format!("{base}/boinc/cgi")),
    )
        .into_response())
}

async fn project_config(
    State(st): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let p = project(&st)?;
    let base = p.base(host_of(&headers));
    Ok(xml_response(accounts::project_config(
        &format!("{base}/boinc/"),
        wizard_mode(&st.config.enrolment),
    )))
}

/// The enrolment mode as the Manager's wizard sees it.
fn wizard_mode(enrolment: &Enrolment) -> WizardMode {
    match enrolment {
        Enrolment::Closed => WizardMode::Closed,
        Enrolment::Open => WizardMode::Open,
        Enrolment::Secret(_) | Enrolment::Tokens => WizardMode::GivenKey,
    }
}

/// The wizard's query; one it cannot read is an empty one (refused inside the XML).
fn account_query(q: Result<Query<AccountQuery>, QueryRejection>) -> AccountQuery {
    q.map(|Query(q)| q).unwrap_or_default()
}

/// `lookup_account.php`: always 200, `<account_out>` or `<error>`.
async fn lookup_account(
    State(st): State<AppState>,
    q: Result<Query<AccountQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let p = project(&st)?;
    let q = account_query(q);
    let reply = match accounts::lookup(wizard_mode(&st.config.enrolment), &q, &p.accounts) {
        Lookup::Answer(reply) => reply,
        Lookup::Check(key) => {
            let st2 = st.clone();
            blocking(move || Ok(given_key_admits(&st2, key)?))
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!("BOINC account lookup failed: {}", e.message);
                    accounts::project_down()
                })
        }
    };
    Ok(xml_response(reply.to_xml()))
}

/// The key typed into the wizard if it admits a new host now, by the rule the scheduler
/// applies when that host first asks (a token's secret, revocation and cap; the secret),
/// spending nothing.
fn given_key_admits(st: &AppState, key: String) -> crate::model::StoreResult<AccountReply> {
    let why = match &st.config.enrolment {
        Enrolment::Tokens => match crate::integrity::secrets::parse_token(&key) {
            None => Some("it is not an enrolment token, ID.SECRET"),
            Some((id, secret)) => st
                .store
                .enrolment_token_refusal(id, &crate::integrity::secrets::sha256(secret))?
                .map(|code| code.as_str()),
        },
        other => other.admit(Some(&key)).err().map(|e| e.code.as_str()),
    };
    Ok(match why {
        None => AccountReply::Key(key),
        Some(why) => accounts::refused_key(why),
    })
}

/// `create_account.php`: always 200, `<account_out>` (open enrolment) or `<error>`.
async fn create_account(
    State(st): State<AppState>,
    q: Result<Query<AccountQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let p = project(&st)?;
    let reply = accounts::create(
        wizard_mode(&st.config.enrolment),
        &account_query(q),
        &p.accounts,
    );
    Ok(xml_response(reply.to_xml()))
}

async fn download(
    State(st): State<AppState>,
    Path(file): Path<String>,
) -> Result<Response, ApiError> {
    let p = project(&st)?;
    let not_found = || ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such file");
    if file == p.app.name {
        let path = p.app.path.clone();
        let bytes = blocking(move || {
            std::fs::read(&path).map_err(|e| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::Internal,
                    format!("cannot read the app: {e}"),
                )
            })
        })
        .await?;
        return Ok(([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response());
    }
    let name = TaskName::from_input_file(&file).ok_or_else(not_found)?;
    let store = st.store.clone();
    let lease = blocking(move || Ok(store.lease(name.lease_id)?)).await?;
    match lease {
        Some(l) if l.workunit_id == name.workunit_id => {
            Ok(([(header::CONTENT_TYPE, "application/json")], input_file(&l)).into_response())
        }
        _ => Err(not_found()),
    }
}

/// The scheduler RPC: always 200 with a `<scheduler_reply>`.
async fn schedule(
    State(st): State<AppState>,
    peer: Peer,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let p = project(&st)?;
    let base = p.base(host_of(&headers));
    let reply = match SchedulerRequest::parse(&body) {
        Err(e) => Reply::message(
            Priority::Notice,
            format!("c960 could not read the scheduler request: {e}"),
            600,
        ),
        Ok(req) => {
            let st2 = st.clone();
            let block = peer.block();
            let r = blocking(move || Ok(answer(&st2, &p, &req, block, &base))).await?;
            r.unwrap_or_else(|e| {
                tracing::warn!("BOINC scheduler request failed: {}", e.message);
                Reply::message(Priority::Low, format!("c960: {}", e.message), 60)
            })
        }
    };
    Ok(xml_response(reply.to_xml()))
}

/// A rate limit's refusal ([`ApiError`] 429 with its wait) as a scheduler reply: BOINC's client
/// backs off after any status but 200, so the reply is 200 and says how long to wait in its
/// `<request_delay>`, which the client honours before its next request to the project.
fn rate_limited(e: &ApiError) -> Reply {
    Reply::message(
        Priority::Low,
        format!("c960: {}", e.message),
        e.retry_after_secs.unwrap_or(1).max(1),
    )
}

/// What a refusal of the account key looks like: a notice and BOINC's hour of delay.
fn bad_key(text: &str) -> Reply {
    Reply::message(Priority::Notice, text, scheduler_rpc::DELAY_BAD_KEY_SECS)
}

/// A refused enrolment token (wrong secret, unknown, revoked, exhausted) as a scheduler reply.
fn refused_token(code: ErrorCode) -> Reply {
    bad_key(&format!(
        "c960 refuses this account key ({}): ask the operator for a new enrolment token.",
        code.as_str()
    ))
}

/// The account a key is, or the reply that refuses it: a key of a sane length and, with
/// per-volunteer tokens, one that reads as a token.
fn account_of(st: &AppState, key: &str) -> Result<[u8; 32], Box<Reply>> {
    if key.is_empty() || key.len() > 256 {
        return Err(Box::new(bad_key(
            "Missing or invalid account key: attach with the enrolment token the operator gave you.",
        )));
    }
    if st.config.enrolment == Enrolment::Tokens
        && crate::integrity::secrets::parse_token(key).is_none()
    {
        return Err(Box::new(bad_key(
            "Invalid account key: it is not a c960 enrolment token (ID.SECRET).",
        )));
    }
    Ok(crate::integrity::secrets::sha256(key)
        .try_into()
        .expect("SHA-256 is 32 bytes"))
}

/// The whole scheduler exchange for one request (blocking: store calls): the host found or
/// registered by the worker session, its reports recorded, its held tasks renewed, work handed
/// out, its credit told.
fn answer(
    st: &AppState,
    p: &Project,
    req: &SchedulerRequest,
    block: Option<String>,
    base: &str,
) -> Result<Reply, ApiError> {
    let account = match account_of(st, &req.authenticator) {
        Ok(a) => a,
        Err(reply) => return Ok(*reply),
    };
    let worker_id = match host_of_account(st, req, account, block.clone())? {
        Ok(id) => id,
        Err(refused) => return Ok(refused),
    };
    if let Err(e) = st.limiter.check_worker(worker_id) {
        // The host id still goes back: a new host learns it even when refused.
        let mut refused = rate_limited(&e);
        refused.hostid = (req.hostid != worker_id).then_some(worker_id);
        return Ok(refused);
    }
    let worker = st
        .store
        .worker(worker_id)?
        .ok_or(crate::model::StoreError::UnknownWorker(worker_id))?;
    let mut reply = Reply {
        // Trusted on first use: sent until the client holds it (it echoes it back).
        code_sign_key: (!req.has_code_sign_key).then(|| p.public_key.clone()),
        hostid: (req.hostid != worker_id).then_some(worker_id),
        user_name: worker.name,
        ..Reply::default()
    };
    record_failures(st, worker_id, req, &mut reply);
    let in_progress = renew_held(st, worker_id, req, &mut reply)?;
    let wanted = req.tasks_wanted(in_progress);
    if wanted > 0 && !req.runs_our_platform() {
        reply.messages.push((
            Priority::Notice,
            format!("c960 has an app for {} only.", scheduler_rpc::PLATFORM),
        ));
    } else if wanted > 0 {
        hand_out_tasks(st, p, worker_id, wanted, block, base, &mut reply)?;
    }
    if in_progress + reply.tasks.len() > 0 {
        // BOINC's client has no heartbeat: it must ask again within a third of the renewal
        // window (of the whole lease without renewals), so two requests may fail before a
        // held lease expires, as for a native worker's heartbeats.
        let renewal_ms = match st.config.integrity.lease_renewal_ms {
            0 => st.config.lease.as_millis() as u64,
            ms => ms,
        };
        reply.next_rpc_delay = Some((renewal_ms / 3000).clamp(10, 86_400) as u32);
    }
    let c = st.store.boinc_credit(worker_id, &account)?;
    reply.credit = Some(CreditFigures {
        user_total: scheduler_rpc::credit(c.account_nodes),
        host_total: scheduler_rpc::credit(c.host_nodes),
        user_create_time: c.account_created_ms / 1000,
        host_create_time: c.host_created_ms / 1000,
    });
    Ok(reply)
}

/// The worker this host of `account` is, registered through the worker session when new; or
/// the reply that refuses it (the session's refusals in BOINC's terms: a notice and a delay).
fn host_of_account(
    st: &AppState,
    req: &SchedulerRequest,
    account: [u8; 32],
    block: Option<String>,
) -> Result<Result<u64, Reply>, ApiError> {
    if let Some(id) = st.store.boinc_host(&account, req.hostid, &req.host_cpid)? {
        return Ok(Ok(id));
    }
    let applicant = Applicant {
        name: host_name(&req.domain_name),
        engine: "c960-worker boinc-app".into(),
        build: Some(format!("BOINC {}", req.client_version)),
        block,
        presented: Some(req.authenticator.clone()),
        boinc: Some(BoincIdentity {
            account_hash: account,
            host_cpid: req.host_cpid.chars().take(64).collect(),
        }),
    };
    let name = applicant.name.clone();
    match session::register(st, applicant) {
        Ok(r) => {
            tracing::info!(worker = r.worker_id, name = %name.escape_debug(), "BOINC host registered");
            Ok(Ok(r.worker_id))
        }
        Err(Refusal::Enrolment(e)) => Ok(Err(bad_key(&format!(
            "c960 refuses this account key: {}",
            e.message
        )))),
        Err(Refusal::Token(code)) => Ok(Err(refused_token(code))),
        Err(Refusal::RateLimited(e)) => Ok(Err(rate_limited(&e))),
        Err(Refusal::Failed(e)) => Err(e),
    }
}

/// Records the reported tasks that failed (successes arrived through the upload handler) and
/// acknowledges every report.
fn record_failures(st: &AppState, worker_id: u64, req: &SchedulerRequest, reply: &mut Reply) {
    for r in &req.reported {
        if let Some(t) = TaskName::from_result(&r.name)
            && !r.succeeded()
        {
            let reason = format!(
                "BOINC task ended with state {} exit status {}: {}",
                r.state,
                r.exit_status,
                r.stderr
                    .lines()
                    .last()
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect::<String>()
            );
            if let Err(e) = st.store.fail(worker_id, t.lease_id, &reason, now_ms()) {
                tracing::debug!(lease = t.lease_id, "BOINC failure not recorded: {e}");
            }
        }
        reply.acks.push(r.name.clone());
    }
}

/// Renews the leases of the tasks the client still holds (BOINC's client has no heartbeat:
/// `next_rpc_delay` makes it ask often enough) and aborts those no longer its own; returns how
/// many it goes on with.
fn renew_held(
    st: &AppState,
    worker_id: u64,
    req: &SchedulerRequest,
    reply: &mut Reply,
) -> Result<usize, ApiError> {
    let held: Vec<(String, TaskName)> = req
        .other_results
        .iter()
        .filter_map(|n| TaskName::from_result(n).map(|t| (n.clone(), t)))
        .collect();
    if !held.is_empty() {
        let ids: Vec<u64> = held.iter().map(|(_, t)| t.lease_id).collect();
        let renewed = st.store.renew_leases(worker_id, &ids, now_ms())?;
        for (n, t) in &held {
            if !renewed.contains(&t.lease_id) {
                reply.aborts.push(n.clone());
            }
        }
    }
    Ok(held.len() - reply.aborts.len())
}

/// Up to `wanted` tasks from the worker session's hand-out, each a signed BOINC task; with
/// none, why work waits and when to ask again.
fn hand_out_tasks(
    st: &AppState,
    p: &Project,
    worker_id: u64,
    wanted: u32,
    block: Option<String>,
    base: &str,
    reply: &mut Reply,
) -> Result<(), ApiError> {
    let now = now_ms();
    let caps = Capabilities::builtin();
    let HandOut { leases, waiting } =
        session::hand_out(st, worker_id, &caps, wanted, block.as_deref())?;
    if leases.is_empty() {
        let why = waiting
            .first()
            .map(|w| w.describe())
            .unwrap_or_else(|| "no campaign has work for this host right now".into());
        reply
            .messages
            .push((Priority::Low, format!("c960: no work: {why}")));
        reply.request_delay = Some(st.config.retry_after_secs.max(60));
    }
    let lease_ms = st.config.lease.as_millis() as i64;
    for l in leases {
        let name = TaskName {
            workunit_id: l.workunit_id,
            lease_id: l.lease_id,
        };
        let info = crate::model::LeaseInfo {
            id: l.lease_id,
            workunit_id: l.workunit_id,
            worker_id,
            state: ReplicaState::InProgress,
            deadline_ms: l.deadline_ms,
            issued_ms: now,
            kind: l.kind.clone(),
            known_nodes: None,
        };
        let input = input_file(&info);
        let max_nbytes = upload::MAX_OUTPUT_BYTES;
        reply.tasks.push(Task {
            name,
            input: (
                format!("{base}/boinc/download/{}", name.input_file()),
                input.len() as u64,
                md5_hex(&input),
            ),
            upload_url: format!("{base}/boinc/file_upload_handler"),
            max_nbytes,
            upload_signature: p.upload.sign(&name.output_file(), max_nbytes),
            fpops_est: scheduler_rpc::estimated_nodes(&l.kind) * scheduler_rpc::FPOPS_PER_NODE,
            memory_bound: 2e9,
            report_deadline_secs: (now + lease_ms.max(86_400_000)) / 1000,
        });
    }
    if !reply.tasks.is_empty() {
        reply.app = Some(p.app_file(base));
    }
    Ok(())
}

/// A worker name from the host's domain name: the characters a label allows, or `boinc-host`.
fn host_name(domain: &str) -> String {
    let name: String = domain
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(64)
        .collect();
    if name.is_empty() || crate::integrity::label::check_label(&name).is_err() {
        "boinc-host".into()
    } else {
        name
    }
}

/// The upload handler: always 200 with a `<data_server_reply>`.
async fn upload_file(State(st): State<AppState>, body: Bytes) -> Result<Response, ApiError> {
    let p = project(&st)?;
    let reply = match upload::parse(&body) {
        Err(e) => upload::reply(UploadStatus::Permanent, Some(&e.to_string())),
        // Nothing partial is kept: a file is whole once judged, or absent.
        Ok(UploadRequest::FileSize { .. }) => upload::size_reply(0),
        Ok(UploadRequest::Upload(u)) => {
            let (status, message) = receive(&st, &p, u).await;
            upload::reply(status, message.as_deref())
        }
    };
    Ok(xml_response(reply))
}

/// An uploaded output file read as a result: its task (the signature says the project asked
/// for it), the submission it holds and its engine label; or the upload status that refuses it
/// (transient where sending the file again may succeed).
fn read_upload(
    p: &Project,
    u: &upload::Upload<'_>,
) -> Result<(TaskName, SubmitRequest, String), (UploadStatus, Option<String>)> {
    let permanent = |m: String| (UploadStatus::Permanent, Some(m));
    if !p.upload.verify(&u.name, u.max_nbytes, &u.signature) {
        return Err(permanent(format!(
            "{}: not a file this project asked for",
            u.name
        )));
    }
    let Some(name) = TaskName::from_output_file(&u.name) else {
        return Err(permanent(format!("{}: not a c960 output file", u.name)));
    };
    if u.offset != 0 {
        // We never report holding part of a file, so a client never resumes one.
        return Err((
            UploadStatus::Transient,
            Some("upload the whole file".into()),
        ));
    }
    if !u.md5.is_empty() && md5_hex(u.data) != u.md5 {
        return Err((
            UploadStatus::Transient,
            Some("the bytes do not match their MD5".into()),
        ));
    }
    let sub: SubmitRequest = serde_json::from_slice(u.data)
        .map_err(|e| permanent(format!("the output is not a c960 result: {e}")))?;
    if sub.lease_id != name.lease_id || sub.workunit_id != name.workunit_id {
        return Err(permanent("the output answers another task".into()));
    }
    let engine = engine_label(&sub.engine).map_err(|e| permanent(e.message))?;
    Ok((name, sub, engine))
}

/// Judges one uploaded output as the result of its lease.
async fn receive(
    st: &AppState,
    p: &Project,
    u: upload::Upload<'_>,
) -> (UploadStatus, Option<String>) {
    let permanent = |m: String| (UploadStatus::Permanent, Some(m));
    let (name, sub, engine) = match read_upload(p, &u) {
        Ok(read) => read,
        Err(refused) => return refused,
    };
    let store = st.store.clone();
    let lease = match blocking(move || Ok(store.lease(name.lease_id)?)).await {
        Ok(Some(l)) => l,
        Ok(None) => return permanent(format!("no lease {}", name.lease_id)),
        Err(e) => return (UploadStatus::Transient, Some(e.message)),
    };
    // A second upload of an answered lease (the reply to the first was lost) is done.
    if lease.state == ReplicaState::Returned {
        return (UploadStatus::Done, None);
    }
    // The host is known now (the signature names its lease): its own rate, as a worker's.
    if let Err(e) = st.limiter.check_worker(lease.worker_id) {
        return (UploadStatus::Transient, Some(e.message));
    }
    let claim = match st.submissions.claim(lease.worker_id, &[lease.id]) {
        Ok(c) => c,
        Err(e) => return (UploadStatus::Transient, Some(e.message)),
    };
    let store = st.store.clone();
    let nps = st.config.integrity.max_nodes_per_sec;
    // Judging stops, nothing written, once the request is answered without it (the timeout)
    // or the client is gone, as for a native submission.
    let outcome = blocking_until_dropped(move |dropped| {
        let _claim = claim;
        let result = BatchedResult {
            lease_id: sub.lease_id,
            workunit_id: sub.workunit_id,
            result: sub.result,
            elapsed_ms: sub.elapsed_ms,
            digest: sub.digest,
        };
        let outcome = settle_results(
            &*store,
            lease.worker_id,
            vec![result],
            &engine,
            nps,
            dropped,
        )?
        .pop()
        .unwrap_or(Ok(()));
        Ok(outcome.map_err(|e| format!("{}: {}", e.code.as_str(), e.message)))
    })
    .await;
    match outcome {
        Ok(Ok(())) => (UploadStatus::Done, None),
        Ok(Err(refusal)) => permanent(refusal),
        Err(e) => (UploadStatus::Transient, Some(e.message)),
    }
}
