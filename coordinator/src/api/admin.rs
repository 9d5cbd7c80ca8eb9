//! Admin endpoints (JSON, `Authorization: Bearer <admin token>`): add a campaign, ban or unban a
//! worker, read the raw results of a workunit, mint, list and revoke enrolment tokens. Disabled (403 `admin_disabled`) unless the
//! coordinator was given an admin token.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::extract::Admin;
use super::state::{AppState, blocking};
use crate::campaign::{NewCampaign, parse_positions};
use crate::clock::now_ms;
use crate::enrolment::EnrolmentToken;

/// The admin routes, under `/api/v1/admin/`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/admin/campaigns", post(add_campaign))
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
    let Json(req) = body.map_err(|e| ApiError::new(e.status(), "bad_body", e.body_text()))?;
    let secret = super::auth::new_secret();
    let hash = super::auth::sha256(&secret);
    let store = st.store.clone();
    let record = blocking(move || {
        Ok(store.mint_enrolment_token(&req.name, req.cap.unwrap_or(1), &hash, now_ms())?)
    })
    .await?;
    let token = super::auth::format_token(record.id, &secret);
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

/// Body of `POST /api/v1/admin/campaigns`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddCampaign {
    /// Perft depth.
    pub depth: u32,
    /// Quorum (default 2).
    pub quorum: Option<u32>,
    /// Result cap (default quorum + 2).
    pub max_results: Option<u32>,
    /// Start positions, e.g. `0-9,518` (default all 960).
    pub positions: Option<String>,
}

fn bad_field(e: impl ToString) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "bad_field", e.to_string())
}

fn id_of(text: &str) -> Result<u64, ApiError> {
    text.parse().map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_query",
            format!("{text:?} is not an id"),
        )
    })
}

async fn add_campaign(
    State(st): State<AppState>,
    _admin: Admin,
    body: Result<Json<AddCampaign>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(req) = body.map_err(|e| ApiError::new(e.status(), "bad_body", e.body_text()))?;
    let positions =
        parse_positions(req.positions.as_deref().unwrap_or("0-959")).map_err(bad_field)?;
    let spec = NewCampaign::new(
        req.depth,
        req.quorum.unwrap_or(2),
        req.max_results,
        positions,
    )
    .map_err(bad_field)?;
    let store = st.store.clone();
    let c = blocking(move || Ok(store.create_campaign(&spec, now_ms())?)).await?;
    Ok((StatusCode::CREATED, Json(c)).into_response())
}

async fn set_banned(st: AppState, id: &str, banned: bool) -> Result<Response, ApiError> {
    let id = id_of(id)?;
    let store = st.store.clone();
    let w = blocking(move || Ok(store.set_banned(id, banned, now_ms())?)).await?;
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
            return Err(crate::store::StoreError::UnknownWorkunit(id).into());
        }
        Ok(store.results(id)?)
    })
    .await?;
    Ok(Json(rs).into_response())
}
