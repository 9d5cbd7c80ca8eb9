//! Identity: enrolment policy, worker API tokens, the admin token. The axum extractors that
//! check them are in [`super::extract`].
//!
//! A worker token is `<worker_id>.<secret>`, the secret 128 random bits in hex. The id lets the
//! coordinator find the worker's row; only SHA-256 of the secret is stored, and hashes are
//! compared without an early exit. Tokens travel only in `Authorization: Bearer …`, never in a
//! body, so they do not end up in request dumps or bincode logs. The parsing and comparison are
//! pure functions.

use axum::http::{HeaderMap, StatusCode, header};
use c960_common::error_code::ErrorCode;

use super::error::ApiError;
use crate::integrity::secrets::{parse_token, same_hash, sha256};
use crate::model::{StoreError, WorkerRecord};
use crate::store::Store;

/// Who may register a worker.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Enrolment {
    /// Nobody: the operator has not chosen (the safe default of `serve`).
    #[default]
    Closed,
    /// Anyone (`--open-enrolment`).
    Open,
    /// Whoever presents the secret whose SHA-256 this is (`--enrol-secret`).
    Secret(Vec<u8>),
    /// Whoever presents a per-volunteer enrolment token the operator minted (`--enrolment
    /// tokens`, [`crate::integrity::enrolment`]); the store checks it and spends one of its registrations.
    Tokens,
}

impl Enrolment {
    /// Whether a worker that just registered is the operator's own, and so trusted at once:
    /// only where the configuration says the enrolment secret's holders are the operator's
    /// (`trust_enrolled`: `run`'s in-process workers) and the worker presented that secret.
    /// Tokens and open enrolment never trust anyone at registration: trust is earned by checks.
    pub fn trusts_at_registration(&self, trust_enrolled: bool, secret_presented: bool) -> bool {
        trust_enrolled && matches!(self, Enrolment::Secret(_)) && secret_presented
    }

    /// A policy requiring this secret.
    pub fn secret(secret: &str) -> Enrolment {
        Enrolment::Secret(sha256(secret))
    }

    /// Whether a registration presenting `presented` may proceed.
    pub fn admit(&self, presented: Option<&str>) -> Result<(), ApiError> {
        match (self, presented) {
            (Enrolment::Open, _) => Ok(()),
            (Enrolment::Closed, _) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::EnrolmentClosed,
                "this coordinator does not enrol new workers",
            )),
            (Enrolment::Secret(_), None) => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                ErrorCode::EnrolmentSecretRequired,
                "registration needs the enrolment secret",
            )),
            (Enrolment::Secret(h), Some(s)) if same_hash(h, &sha256(s)) => Ok(()),
            (Enrolment::Secret(_), Some(_)) => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                ErrorCode::BadEnrolmentSecret,
                "the enrolment secret does not match",
            )),
            (Enrolment::Tokens, None) => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                ErrorCode::EnrolmentTokenRequired,
                "registration needs an enrolment token from the operator (--enrol-secret)",
            )),
            (Enrolment::Tokens, Some(_)) => Ok(()),
        }
    }
}

/// The bearer token of an `Authorization` header value, if it is one.
pub fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn missing_token() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        ErrorCode::MissingToken,
        "send the API token as Authorization: Bearer <token>",
    )
}

pub(super) fn bad_token() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        ErrorCode::BadToken,
        "the API token does not match",
    )
}

pub(super) fn bearer_of(headers: &HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer)
        .ok_or_else(missing_token)
}

/// Checks a worker token against the store; returns the worker if the token is its own.
/// Refuses banned and quarantined workers: they get nothing from the worker API.
pub fn authenticate(store: &dyn Store, token: &str) -> Result<WorkerRecord, ApiError> {
    let (id, secret) = parse_token(token).ok_or_else(bad_token)?;
    let w = store.worker(id)?.ok_or(StoreError::UnknownWorker(id))?;
    if !same_hash(&w.key_hash, &sha256(secret)) {
        return Err(bad_token());
    }
    standing(&w)?;
    Ok(w)
}

/// Refuses a banned or quarantined worker.
pub fn standing(w: &WorkerRecord) -> Result<(), ApiError> {
    if w.banned {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::WorkerBanned,
            format!("worker {} is banned by the operator", w.id),
        ));
    }
    if w.quarantined {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::WorkerQuarantined,
            format!(
                "worker {} is quarantined: {} lost votes and {} refused results; its results are being re-verified",
                w.id, w.lost_votes, w.refused
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer  abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("Bearerabc"), None);
    }

    #[test]
    fn only_the_operators_own_secret_holders_are_trusted_at_registration() {
        let secret = Enrolment::secret("s3cret-s3cret-s3cret");
        assert!(secret.trusts_at_registration(true, true));
        assert!(
            !secret.trusts_at_registration(false, true),
            "serve: earned by checks"
        );
        assert!(!secret.trusts_at_registration(true, false));
        for other in [Enrolment::Open, Enrolment::Tokens, Enrolment::Closed] {
            assert!(!other.trusts_at_registration(true, true), "{other:?}");
        }
    }

    #[test]
    fn enrolment_policies() {
        assert!(Enrolment::Open.admit(None).is_ok());
        assert_eq!(
            Enrolment::Closed.admit(Some("x")).unwrap_err().code,
            ErrorCode::EnrolmentClosed
        );
        let p = Enrolment::secret("s3cret");
        assert!(p.admit(Some("s3cret")).is_ok());
        assert_eq!(
            p.admit(Some("s3cre")).unwrap_err().code,
            ErrorCode::BadEnrolmentSecret
        );
        assert_eq!(
            p.admit(None).unwrap_err().code,
            ErrorCode::EnrolmentSecretRequired
        );
        assert_eq!(
            Enrolment::Tokens.admit(None).unwrap_err().code,
            ErrorCode::EnrolmentTokenRequired
        );
    }
}
