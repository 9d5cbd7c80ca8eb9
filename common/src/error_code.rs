//! The machine-readable codes of the coordinator's refusals (`{"error": {"code": …}}` and
//! `ApiError`), one vocabulary for the coordinator that answers them, the worker that acts on
//! them and docs/protocol.md, which lists each (a test checks the list against [`ErrorCode::ALL`]).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

macro_rules! error_codes {
    ($($(#[doc = $doc:expr])* $variant:ident = $text:literal,)*) => {
        /// A refusal's code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $variant,)*
        }

        impl ErrorCode {
            /// Every code, in the order of docs/protocol.md's table.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)*];

            /// The code as it travels: snake_case.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $text,)*
                }
            }

            /// The code of this text, if it is one (a newer coordinator may send codes an older
            /// worker does not know).
            ///
            /// # Examples
            ///
            /// ```
            /// use c960_common::error_code::ErrorCode;
            ///
            /// assert_eq!(ErrorCode::parse("worker_banned"), Some(ErrorCode::WorkerBanned));
            /// assert_eq!(ErrorCode::WorkerBanned.as_str(), "worker_banned");
            /// assert_eq!(ErrorCode::parse("no_such_code"), None);
            /// ```
            pub fn parse(text: &str) -> Option<ErrorCode> {
                match text {
                    $($text => Some(ErrorCode::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    /// The body is not a valid message (or admin JSON that does not fit the endpoint).
    BadBody = "bad_body",
    /// The request's protocol version is not this coordinator's.
    UnsupportedProtocol = "unsupported_protocol",
    /// A field is out of range.
    BadField = "bad_field",
    /// A name or engine id holds a control, line-break, bidirectional or invisible character.
    BadLabel = "bad_label",
    /// Admin: a new campaign's workunits would take too long each.
    WorkunitTooLong = "workunit_too_long",
    /// Admin: a new campaign would have too many workunits.
    TooManyWorkunits = "too_many_workunits",
    /// A bad query string or path parameter.
    BadQuery = "bad_query",
    /// No `Authorization: Bearer` header.
    MissingToken = "missing_token",
    /// A malformed token, or a secret that does not match.
    BadToken = "bad_token",
    /// No worker with the token's id (or, on admin endpoints, that id).
    UnknownWorker = "unknown_worker",
    /// Registration without the enrolment secret.
    EnrolmentSecretRequired = "enrolment_secret_required",
    /// A wrong enrolment secret.
    BadEnrolmentSecret = "bad_enrolment_secret",
    /// Registration without a token where tokens are required.
    EnrolmentTokenRequired = "enrolment_token_required",
    /// Not a token, an unknown id, or a wrong secret.
    BadEnrolmentToken = "bad_enrolment_token",
    /// The operator revoked the token.
    EnrolmentTokenRevoked = "enrolment_token_revoked",
    /// The token registered as many workers as its cap.
    EnrolmentTokenExhausted = "enrolment_token_exhausted",
    /// Neither an enrolment secret nor open enrolment is configured.
    EnrolmentClosed = "enrolment_closed",
    /// The operator banned this worker.
    WorkerBanned = "worker_banned",
    /// The worker failed a check or had too many results refused.
    WorkerQuarantined = "worker_quarantined",
    /// An admin endpoint, but no admin token is configured.
    AdminDisabled = "admin_disabled",
    /// The lease belongs to another worker.
    LeaseNotYours = "lease_not_yours",
    /// No such workunit.
    UnknownWorkunit = "unknown_workunit",
    /// No such lease.
    UnknownLease = "unknown_lease",
    /// No such campaign.
    UnknownCampaign = "unknown_campaign",
    /// No such endpoint.
    NotFound = "not_found",
    /// The endpoint exists, but not with this method.
    MethodNotAllowed = "method_not_allowed",
    /// The lease passed its deadline.
    LeaseExpired = "lease_expired",
    /// The lease was already answered, abandoned or refused.
    LeaseClosed = "lease_closed",
    /// Pausing or resuming a cancelled campaign.
    CampaignCancelled = "campaign_cancelled",
    /// The body is over the limit.
    BodyTooLarge = "body_too_large",
    /// A worker endpoint without `application/octet-stream`.
    WrongContentType = "wrong_content_type",
    /// A rate was exceeded.
    RateLimited = "rate_limited",
    /// The worker holds its lease cap.
    LeaseLimit = "lease_limit",
    /// A submission of the same lease is being judged.
    SubmissionInProgress = "submission_in_progress",
    /// The digest does not match the payload.
    DigestMismatch = "digest_mismatch",
    /// The total contradicts the public known answer.
    CheckFailed = "check_failed",
    /// An impossible result.
    InvalidResult = "invalid_result",
    /// A result of the wrong kind for the workunit.
    WrongResultKind = "wrong_result_kind",
    /// A database failure; nothing was changed.
    Internal = "internal",
    /// The coordinator's disk is full: nothing was changed; retry after the `Retry-After`.
    StorageFull = "storage_full",
    /// The request took longer than the request timeout.
    Timeout = "timeout",
}

impl ErrorCode {
    /// Refusals after which a worker registers again: its identity is not known here.
    pub fn asks_to_register_again(self) -> bool {
        matches!(self, ErrorCode::UnknownWorker | ErrorCode::BadToken)
    }

    /// Refusals that end a worker's work with this coordinator: the operator excluded it.
    pub fn excludes_the_worker(self) -> bool {
        matches!(self, ErrorCode::WorkerQuarantined | ErrorCode::WorkerBanned)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ErrorCode, D::Error> {
        let text = String::deserialize(d)?;
        ErrorCode::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown error code {text:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back() {
        for &c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
        assert_eq!(ErrorCode::ALL.len(), 41);
    }
}
