//! The one error type of the API: HTTP status + machine-readable code + message, sent as a
//! JSON [`ErrorBody`] (`docs/protocol.md` lists the codes). Bottom layer of the API.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use c960_common::error_code::ErrorCode;
use c960_common::wire::ErrorBody;

use crate::model::StoreError;
use crate::work::judge::{Fault, Refusal};

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
        // A full disk is said once, at WARN, by the store (not once per refused request).
        if self.status.is_server_error() && self.code != ErrorCode::StorageFull {
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
            .insert(crate::net::metrics::RefusalCode(self.code.as_str()));
        if let Some(secs) = self.retry_after_secs {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

/// How long a worker waits before it sends again what a full disk refused: the operator frees
/// space in minutes, and a worker asks again at this pace meanwhile at little cost.
pub const STORAGE_FULL_RETRY_SECS: u32 = 30;

impl From<StoreError> for ApiError {
    /// The store's code ([`StoreError::code`]) with the status of its kind of refusal.
    fn from(e: StoreError) -> Self {
        let status = match e {
            StoreError::UnknownWorker(_) | StoreError::Enrolment(_) => StatusCode::UNAUTHORIZED,
            StoreError::UnknownWorkunit(_)
            | StoreError::UnknownLease(_)
            | StoreError::UnknownCampaign(_) => StatusCode::NOT_FOUND,
            StoreError::LeaseNotYours(_) | StoreError::NotInGoodStanding { .. } => {
                StatusCode::FORBIDDEN
            }
            StoreError::LeaseClosed(..)
            | StoreError::LeaseExpired(_)
            | StoreError::CampaignCancelled(..) => StatusCode::CONFLICT,
            StoreError::LeaseLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
            StoreError::Db(_) | StoreError::Backend { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            StoreError::StorageFull(_) => StatusCode::SERVICE_UNAVAILABLE,
            StoreError::Bad(_) => StatusCode::BAD_REQUEST,
        };
        let error = ApiError::new(status, e.code(), e.to_string());
        match e {
            StoreError::LeaseLimit { .. } => error.with_retry_after(60),
            StoreError::StorageFull(_) => error.with_retry_after(STORAGE_FULL_RETRY_SECS),
            _ => error,
        }
    }
}

impl From<Refusal> for ApiError {
    /// A submitted result's refusal: the store's as [`From<StoreError>`] maps it; a result
    /// refused on its merits is 422.
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::Store(e) => e.into(),
            Refusal::Fault(Fault { code, message }) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_gets_its_status_and_code() {
        let cases: [(ApiError, u16, ErrorCode); 17] = [
            (
                StoreError::UnknownWorker(1).into(),
                401,
                ErrorCode::UnknownWorker,
            ),
            (
                StoreError::UnknownWorkunit(1).into(),
                404,
                ErrorCode::UnknownWorkunit,
            ),
            (
                StoreError::UnknownLease(1).into(),
                404,
                ErrorCode::UnknownLease,
            ),
            (
                StoreError::LeaseNotYours(1).into(),
                403,
                ErrorCode::LeaseNotYours,
            ),
            (
                StoreError::LeaseClosed(1, "returned").into(),
                409,
                ErrorCode::LeaseClosed,
            ),
            (
                StoreError::LeaseExpired(1).into(),
                409,
                ErrorCode::LeaseExpired,
            ),
            (
                StoreError::LeaseLimit {
                    worker: 1,
                    open: 2,
                    cap: 2,
                }
                .into(),
                429,
                ErrorCode::LeaseLimit,
            ),
            (
                StoreError::NotInGoodStanding {
                    worker: 1,
                    banned: true,
                }
                .into(),
                403,
                ErrorCode::WorkerBanned,
            ),
            (
                StoreError::NotInGoodStanding {
                    worker: 1,
                    banned: false,
                }
                .into(),
                403,
                ErrorCode::WorkerQuarantined,
            ),
            (
                StoreError::UnknownCampaign(1).into(),
                404,
                ErrorCode::UnknownCampaign,
            ),
            (
                StoreError::CampaignCancelled(1, "cancelled").into(),
                409,
                ErrorCode::CampaignCancelled,
            ),
            (
                StoreError::Enrolment(ErrorCode::EnrolmentTokenRevoked).into(),
                401,
                ErrorCode::EnrolmentTokenRevoked,
            ),
            (StoreError::Db("x".into()).into(), 500, ErrorCode::Internal),
            (
                StoreError::StorageFull("x".into()).into(),
                503,
                ErrorCode::StorageFull,
            ),
            (StoreError::Bad("x".into()).into(), 400, ErrorCode::BadField),
            (
                Refusal::Store(StoreError::LeaseExpired(1)).into(),
                409,
                ErrorCode::LeaseExpired,
            ),
            (
                Refusal::Fault(Fault {
                    code: ErrorCode::DigestMismatch,
                    message: "the digest does not match the payload".into(),
                })
                .into(),
                422,
                ErrorCode::DigestMismatch,
            ),
        ];
        for (e, status, code) in cases {
            assert_eq!((e.status.as_u16(), e.code), (status, code), "{}", e.message);
            // Back-pressure and a full disk say when to come back.
            assert_eq!(
                e.retry_after_secs.is_some(),
                status == 429 || status == 503,
                "{}",
                e.message
            );
        }
    }
}
