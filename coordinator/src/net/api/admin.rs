//! Admin endpoints (JSON, `Authorization: Bearer <admin token>`): campaign management (add any
//! kind, list, show, name, priority, pause, resume, cancel), ban or unban a worker, read the raw
//! results of a workunit, mint, list and revoke enrolment tokens. Disabled (403 `admin_disabled`) unless the coordinator was given an
//! admin token. An unknown campaign or worker is 404 `unknown_campaign` / `unknown_worker`.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use c960_common::error_code::ErrorCode;
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::extract::Admin;
use super::state::{AppState, blocking};
use crate::clock::now_ms;
use crate::integrity::enrolment::EnrolmentToken;
use crate::model::{Campaign, CampaignAction, CampaignChange, CampaignProgress, StoreError};
use crate::work::campaign::{CampaignRequest, CampaignWarning, Unplanned};
use crate::work::sizing::Estimate;

/// The admin routes, under `/api/v1/admin/`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/admin/campaigns",
            post(add_campaign).get(list_campaigns),
        )
        .route("/api/v1/admin/campaigns/{id}", get(show_campaign))
        .route("/api/v1/admin/campaigns/{id}/name", post(name_campaign))
        .route(
            "/api/v1/admin/campaigns/{id}/priority",
            post(prioritise_campaign),
        )
        .route(
            "/api/v1/admin/campaigns/{id}/pause",
            status_route(CampaignAction::Pause),
        )
        .route(
            "/api/v1/admin/campaigns/{id}/resume",
            status_route(CampaignAction::Resume),
        )
        .route(
            "/api/v1/admin/campaigns/{id}/cancel",
            status_route(CampaignAction::Cancel),
        )
        .route("/api/v1/admin/workers/{id}/ban", post(ban))
        .route("/api/v1/admin/workers/{id}/unban", post(unban))
        .route("/api/v1/admin/workunits/{id}/results", get(results))
        .route(
            "/api/v1/admin/enrolment-tokens",
            post(mint_token).get(list_tokens),
        )
        .route(
            "/api/v1/admin/enrolment-tokens/{id}/revoke",
            post(revoke_token),
        )
}

/// Body of `POST /api/v1/admin/enrolment-tokens`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MintToken {
    /// Whom it is for (the operator's note, at most 100 bytes).
    pub name: String,
    /// Workers it may register (default 1; 0: no cap).
    pub cap: Option<u64>,
}

/// Answer to `POST /api/v1/admin/enrolment-tokens`: the token (shown this once) and its record.
#[derive(Serialize)]
pub struct MintedToken {
    /// `<id>.<secret>`, what the volunteer passes as `--enrol-secret`.
    pub token: String,
    /// The stored record.
    pub record: EnrolmentToken,
}

async fn mint_token(
    State(st): State<AppState>,
    _admin: Admin,
    body: Result<Json<MintToken>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) =
        body.map_err(|e| ApiError::new(e.status(), ErrorCode::BadBody, e.body_text()))?;
    let secret = crate::integrity::secrets::new_secret();
    let hash = crate::integrity::secrets::sha256(&secret);
    let store = st.store.clone();
    let record = blocking(move || {
        Ok(store.mint_enrolment_token(&req.name, req.cap.unwrap_or(1), &hash, now_ms())?)
    })
    .await?;
    let token = crate::integrity::secrets::format_token(record.id, &secret);
    Ok((StatusCode::CREATED, Json(MintedToken { token, record })).into_response())
}

async fn list_tokens(State(st): State<AppState>, _admin: Admin) -> Result<Response, ApiError> {
    let store = st.store.clone();
    let tokens = blocking(move || Ok(store.enrolment_tokens()?)).await?;
    Ok(Json(tokens).into_response())
}

async fn revoke_token(
    State(st): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = id_of(&id)?;
    let store = st.store.clone();
    let t = blocking(move || Ok(store.revoke_enrolment_token(id, now_ms())?)).await?;
    Ok(Json(t).into_response())
}

/// The answer to `POST /api/v1/admin/campaigns`: the campaign, and warnings (an identical
/// campaign exists) that did not stop it.
#[derive(Serialize)]
pub struct CreatedCampaign {
    /// The new campaign.
    #[serde(flatten)]
    pub campaign: Campaign,
    /// What the operator should know.
    pub warnings: Vec<CampaignWarning>,
    /// The workunits made.
    pub workunits: u64,
    /// The estimate it was admitted by: split ply, nodes, CPU time.
    pub estimate: Estimate,
}

fn bad_field(e: impl ToString) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadField, e.to_string())
}

fn id_of(text: &str) -> Result<u64, ApiError> {
    text.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadQuery,
            format!("{text:?} is not an id"),
        )
    })
}

/// A JSON body, or 400 `bad_body` with serde's reason.
fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    body.map(|Json(t)| t)
        .map_err(|e| ApiError::new(e.status(), ErrorCode::BadBody, e.body_text()))
}

async fn add_campaign(
    State(st): State<AppState>,
    _admin: Admin,
    body: Result<Json<CampaignRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let (spec, estimate) = json_body(body)?.plan().map_err(|e| match e {
        Unplanned::Invalid(why) => bad_field(why),
        Unplanned::TooLarge(r) => ApiError::new(
            StatusCode::BAD_REQUEST,
            r.code(),
            format!("{r}; send \"force\": true to create it anyway"),
        ),
    })?;
    let store = st.store.clone();
    let created = blocking(move || {
        let identical = store.find_campaign(&spec)?;
        let campaign = store.create_campaign(&spec, now_ms())?;
        let workunits = store.campaign_progress(campaign.id)?.total;
        Ok(CreatedCampaign {
            campaign,
            warnings: identical
                .map(|c| CampaignWarning::identical(c.id))
                .into_iter()
                .collect(),
            workunits,
            estimate,
        })
    })
    .await?;
    for w in &created.warnings {
        tracing::warn!(campaign = created.campaign.id, "{}", w.message);
    }
    tracing::info!(campaign = created.campaign.id, "campaign added");
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

async fn list_campaigns(
    State(st): State<AppState>,
    _admin: Admin,
) -> Result<Json<Vec<CampaignProgress>>, ApiError> {
    let store = st.store.clone();
    Ok(Json(blocking(move || Ok(store.progress()?)).await?))
}

async fn show_campaign(
    State(st): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Json<CampaignProgress>, ApiError> {
    let id = id_of(&id)?;
    let store = st.store.clone();
    let p = blocking(move || Ok(store.campaign_progress(id)?)).await?;
    Ok(Json(p))
}

/// Applies one change to a campaign and answers with the campaign as changed.
async fn change_campaign(
    st: AppState,
    id: &str,
    change: CampaignChange,
) -> Result<Json<Campaign>, ApiError> {
    let id = id_of(id)?;
    let store = st.store.clone();
    let logged = format!("{change:?}");
    let c = blocking(move || Ok(store.update_campaign(id, &change)?)).await?;
    tracing::info!(campaign = id, change = %logged, "campaign changed");
    Ok(Json(c))
}

/// Body of `POST /api/v1/admin/campaigns/{id}/name` (`null` clears the name).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameBody {
    /// The new name.
    pub name: Option<String>,
}

/// Body of `POST /api/v1/admin/campaigns/{id}/priority`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriorityBody {
    /// Higher is served first.
    pub priority: i64,
}

async fn name_campaign(
    State(st): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    body: Result<Json<NameBody>, JsonRejection>,
) -> Result<Json<Campaign>, ApiError> {
    let name = json_body(body)?
        .name
        .map(|n| crate::work::campaign::check_name(&n))
        .transpose()
        .map_err(bad_field)?;
    change_campaign(st, &id, CampaignChange::Name(name)).await
}

async fn prioritise_campaign(
    State(st): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
    body: Result<Json<PriorityBody>, JsonRejection>,
) -> Result<Json<Campaign>, ApiError> {
    let priority = json_body(body)?.priority;
    change_campaign(st, &id, CampaignChange::Priority(priority)).await
}

/// `POST …/campaigns/{id}/pause`, `…/resume` or `…/cancel`: this status action.
fn status_route(action: CampaignAction) -> axum::routing::MethodRouter<AppState> {
    post(
        move |State(st): State<AppState>, _admin: Admin, Path(id): Path<String>| async move {
            change_campaign(st, &id, CampaignChange::Status(action)).await
        },
    )
}

/// Store errors of the admin calls: an unknown worker is 404 here (on the worker API it is 401,
/// a token that names no worker).
fn admin_error(e: StoreError) -> ApiError {
    match e {
        StoreError::UnknownWorker(_) => ApiError::new(
            StatusCode::NOT_FOUND,
            ErrorCode::UnknownWorker,
            e.to_string(),
        ),
        e => e.into(),
    }
}

async fn set_banned(st: AppState, id: &str, banned: bool) -> Result<Response, ApiError> {
    let id = id_of(id)?;
    let store = st.store.clone();
    let w = blocking(move || store.set_banned(id, banned, now_ms()).map_err(admin_error)).await?;
    Ok(Json(w).into_response())
}

async fn ban(
    State(st): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    set_banned(st, &id, true).await
}

async fn unban(
    State(st): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    set_banned(st, &id, false).await
}

async fn results(
    State(st): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let id = id_of(&id)?;
    let store = st.store.clone();
    let rs = blocking(move || {
        if !store.workunit_exists(id)? {
            return Err(StoreError::UnknownWorkunit(id).into());
        }
        Ok(store.results(id)?)
    })
    .await?;
    Ok(Json(rs).into_response())
}
