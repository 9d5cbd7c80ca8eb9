//! Extractors and the bincode response of the worker protocol: [`Wire`] (a checked bincode
//! body), [`Peer`] (the client address), [`AuthedWorker`] and [`Admin`] (the bearer tokens,
//! checked by the pure functions of [`super::auth`]), [`wire_response`]. Below the routes.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use c960_common::codec;
use c960_common::error_code::ErrorCode;
use c960_common::wire::{CONTENT_TYPE, MAX_BODY_BYTES, PROTOCOL_VERSION, WorkerBuild};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::auth::{authenticate, bearer_of};
use super::error::ApiError;
use super::state::{AppState, blocking};
use crate::integrity::trust;
use crate::model::WorkerRecord;
use crate::net::proxies::ClientAddr;

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
                ErrorCode::WrongContentType,
                format!("content type must be {CONTENT_TYPE}, got {ct:?}"),
            ));
        }
        let too_large = || {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                ErrorCode::BodyTooLarge,
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
                ErrorCode::BadBody,
                format!("no protocol version: {e}"),
            )
        })?;
        if version != PROTOCOL_VERSION {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::UnsupportedProtocol,
                format!(
                    "protocol {version} is not supported; this coordinator speaks {PROTOCOL_VERSION}"
                ),
            ));
        }
        let value = codec::decode(&bytes).map_err(|e| {
            ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadBody, e.to_string())
        })?;
        Ok(Wire(value))
    }
}

/// The client's address ([`ClientAddr`]: the TCP peer, or behind a trusted proxy the address it
/// forwards), where the server was started with connect info (else `None`).
pub struct Peer(pub Option<std::net::IpAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Peer(ClientAddr::of(&parts.extensions)))
    }
}

impl Peer {
    /// The address block ([`trust::address_block`]).
    pub fn block(&self) -> Option<String> {
        self.0.map(trust::address_block)
    }
}

/// The build a worker names in its User-Agent ([`WorkerBuild::from_user_agent`]); `None` for
/// a worker from before 0.2, which names none, and for any other client.
pub struct NamedBuild(pub Option<WorkerBuild>);

impl<S: Send + Sync> FromRequestParts<S> for NamedBuild {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(NamedBuild(
            parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .and_then(WorkerBuild::from_user_agent),
        ))
    }
}

impl NamedBuild {
    /// As the store keeps it ([`crate::model::WorkerRecord::build`]).
    pub fn label(&self) -> Option<String> {
        self.0.as_ref().map(WorkerBuild::label)
    }
}

/// A bincode response body.
pub fn wire_response<T: Serialize>(value: &T) -> Result<Response, ApiError> {
    let bytes = codec::encode(value).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            e.to_string(),
        )
    })?;
    Ok(([(header::CONTENT_TYPE, CONTENT_TYPE)], bytes).into_response())
}

/// An authenticated worker in good standing, within its rate limit.
pub struct AuthedWorker(pub WorkerRecord);

impl FromRequestParts<AppState> for AuthedWorker {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, ApiError> {
        let token = bearer_of(&parts.headers)?.to_string();
        let store = st.store.clone();
        let w = blocking(move || authenticate(&*store, &token)).await?;
        // Per worker, after authentication: a forged token cannot spend someone else's budget.
        st.limiter.check_worker(w.id)?;
        Ok(AuthedWorker(w))
    }
}

/// The operator, proven by the admin token ([`AppState::check_admin`]).
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, st: &AppState) -> Result<Self, ApiError> {
        st.check_admin(&parts.headers, ClientAddr::of(&parts.extensions))?;
        Ok(Admin)
    }
}
