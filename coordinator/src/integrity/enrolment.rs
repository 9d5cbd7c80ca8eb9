//! Per-volunteer enrolment tokens (`serve --enrolment tokens`): the operator mints one token per
//! volunteer (`c960-coordinator token mint`, or `POST /api/v1/admin/enrolment-tokens`), each with
//! a cap on how many workers it may register, and may revoke it. A worker registers by presenting
//! its token as the enrolment secret; the worker remembers which token enrolled it, and replicas
//! of one workunit never go to two workers of one token ([`crate::integrity::trust::same_party`]). So one
//! volunteer's identities cannot form a quorum among themselves, however many addresses they
//! come from, and a volunteer cannot register more identities than the operator allowed.
//!
//! A token is `<id>.<secret>` like a worker token; only SHA-256 of the secret is stored. An
//! unknown id and a wrong secret are refused alike. The rule is [`refusal`]; the store applies it
//! inside its transaction (`store/sql/enrolment_tokens.rs`), so a registration checks and spends the
//! token's cap atomically.

use c960_common::error_code::ErrorCode;
use serde::Serialize;

/// An enrolment token as the operator sees it (never its secret).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnrolmentToken {
    /// Id (the part before the dot of the token).
    pub id: u64,
    /// Whom it was minted for (the operator's note).
    pub name: String,
    /// Workers it may register (0: no cap).
    pub cap: u64,
    /// Workers it registered.
    pub used: u64,
    /// Revoked: it registers nobody any more (workers it registered keep working).
    pub revoked: bool,
    /// When it was minted.
    pub created_ms: i64,
}

/// Why a token registers nobody: the machine-readable code of the refusal.
pub fn refusal(token: Option<&EnrolmentToken>, secret_matches: bool) -> Option<ErrorCode> {
    match token {
        None => Some(ErrorCode::BadEnrolmentToken),
        Some(_) if !secret_matches => Some(ErrorCode::BadEnrolmentToken),
        Some(t) if t.revoked => Some(ErrorCode::EnrolmentTokenRevoked),
        Some(t) if t.cap > 0 && t.used >= t.cap => Some(ErrorCode::EnrolmentTokenExhausted),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_admits_up_to_its_cap_until_revoked() {
        let t = |cap, used, revoked| EnrolmentToken {
            id: 1,
            name: "v".into(),
            cap,
            used,
            revoked,
            created_ms: 0,
        };
        assert_eq!(refusal(Some(&t(2, 1, false)), true), None);
        assert_eq!(
            refusal(Some(&t(2, 2, false)), true),
            Some(ErrorCode::EnrolmentTokenExhausted)
        );
        assert_eq!(refusal(Some(&t(0, 99, false)), true), None, "0: no cap");
        assert_eq!(
            refusal(Some(&t(2, 0, true)), true),
            Some(ErrorCode::EnrolmentTokenRevoked)
        );
        // A wrong secret and an unknown id read alike.
        assert_eq!(
            refusal(Some(&t(2, 0, false)), false),
            Some(ErrorCode::BadEnrolmentToken)
        );
        assert_eq!(refusal(None, true), Some(ErrorCode::BadEnrolmentToken));
    }
}
