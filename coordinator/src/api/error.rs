//! The one error type of the API: HTTP status + machine-readable code + message, sent as a
//! JSON [`ErrorBody`] (`docs/protocol.md` lists the codes). Bottom layer of the API.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use c960_common::error_code::ErrorCode;
use c960_common::wire::ErrorBody;

use crate::store::StoreError;

/// The one error type of the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Machine-readable code.
    pub code: ErrorCode,
    /// Human-readable message.
    pub message: String,
    /// Seconds to wait before retrying, sent as `Retry-After` (429, 503).
    pub retry_after_secs: Option<u32>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ApiError {
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
            code: self.code.as_str().to_string(),
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
            tracing::error!(code = self.code.as_str(), "{}", self.message);
        } else {
            tracing::debug!(code = self.code.as_str(), status = %self.status, "{}", self.message);
        }
        // A 500 says what failed in the log only, never to the client.
        let body = if self.status == StatusCode::INTERNAL_SERVER_ERROR {
            ErrorBody {
                code: self.code.as_str().to_string(),
                message: "internal error; the coordinator's log has the details".into(),
            }
        } else {
            self.body()
        };
        let mut resp = (self.status, axum::Json(body)).into_response();
        resp.extensions_mut()
            .insert(crate::metrics::RefusalCode(self.code.as_str()));
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
                ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::UnknownWorker, msg)
            }
            StoreError::UnknownWorkunit(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::UnknownWorkunit, msg)
            }
            StoreError::UnknownLease(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::UnknownLease, msg)
            }
            StoreError::LeaseNotYours(_) => {
                ApiError::new(StatusCode::FORBIDDEN, ErrorCode::LeaseNotYours, msg)
            }
            StoreError::LeaseClosed(..) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::LeaseClosed, msg)
            }
            StoreError::LeaseExpired(_) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::LeaseExpired, msg)
            }
            StoreError::LeaseLimit { .. } => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, ErrorCode::LeaseLimit, msg)
                    .with_retry_after(60)
            }
            StoreError::NotInGoodStanding { banned: true, .. } => {
                ApiError::new(StatusCode::FORBIDDEN, ErrorCode::WorkerBanned, msg)
            }
            StoreError::NotInGoodStanding { banned: false, .. } => {
                ApiError::new(StatusCode::FORBIDDEN, ErrorCode::WorkerQuarantined, msg)
            }
            StoreError::UnknownCampaign(_) => {
                ApiError::new(StatusCode::NOT_FOUND, ErrorCode::UnknownCampaign, msg)
            }
            StoreError::CampaignCancelled(..) => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::CampaignCancelled, msg)
            }
            StoreError::Enrolment(code) => ApiError::new(StatusCode::UNAUTHORIZED, code, msg),
            StoreError::Db(_) | StoreError::Backend { .. } => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, msg)
            }
            StoreError::Bad(_) => ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadField, msg),
        }
    }
}
