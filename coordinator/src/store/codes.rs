//! The integers and encodings the schema stores, shared by every backend: workunit kinds,
//! replica states, trust levels, u64 counts bit-for-bit in signed 64-bit columns, digests as
//! 32-byte blobs.
//!
//! Every integer code lives here once, as a constant named `COLUMN_MEANING` (`REPLICA_RETURNED`
//! is `results.state` 1), and the store's SQL formats them in (`r.state = {REPLICA_RETURNED}`):
//! in the statement's text, so PostgreSQL still plans with the value (the partial indexes on
//! `state = 0` need it). A tidy test (`tests/tests/suite/tidy.rs`) refuses a literal code in
//! the store's SQL.

use c960_common::wire::{AnalysisEngine, Capabilities, PositionSpec, WorkUnitKind};

use crate::model::{
    CampaignKind, CampaignStatus, Digest, ReplicaState, ResultOutcome, RowStatus, TrustLevel,
};
use crate::work::campaign::{ANALYSIS_HASH_MIB, CampaignWork};

/// `workunits.kind` of a perft workunit.
pub const KIND_PERFT: i64 = 0;
/// `workunits.kind` of an analysis with the built-in engine.
pub const KIND_BUILTIN_ANALYSIS: i64 = 1;
/// `workunits.kind` of an analysis with a UCI engine.
pub const KIND_UCI_ANALYSIS: i64 = 2;
/// `workunits.kind` of self-play games with the built-in engine.
pub const KIND_BUILTIN_SELF_PLAY: i64 = 3;
/// `workunits.kind` of self-play games with a UCI engine.
pub const KIND_UCI_SELF_PLAY: i64 = 4;

/// The stored kind of a workunit of this campaign kind (`self_play`: games with the engine
/// `analysis` names).
pub fn kind_code(work: CampaignWork) -> i64 {
    match work {
        CampaignWork::Perft { .. } => KIND_PERFT,
        CampaignWork::Analysis {
            engine: AnalysisEngine::Builtin,
            ..
        } => KIND_BUILTIN_ANALYSIS,
        CampaignWork::Analysis {
            engine: AnalysisEngine::Uci,
            ..
        } => KIND_UCI_ANALYSIS,
        CampaignWork::SelfPlay {
            engine: AnalysisEngine::Builtin,
            ..
        } => KIND_BUILTIN_SELF_PLAY,
        CampaignWork::SelfPlay {
            engine: AnalysisEngine::Uci,
            ..
        } => KIND_UCI_SELF_PLAY,
    }
}

/// The stored kinds a worker with these capabilities accepts.
pub fn accepted_kinds(c: &Capabilities) -> Vec<i64> {
    let mut codes = Vec::new();
    if c.perft {
        codes.push(KIND_PERFT);
    }
    if c.builtin_analysis {
        codes.push(KIND_BUILTIN_ANALYSIS);
    }
    if c.uci_analysis {
        codes.push(KIND_UCI_ANALYSIS);
    }
    if c.self_play && c.builtin_analysis {
        codes.push(KIND_BUILTIN_SELF_PLAY);
    }
    if c.self_play && c.uci_analysis {
        codes.push(KIND_UCI_SELF_PLAY);
    }
    codes
}

/// The columns [`kind_of`] reads, in order, as every query that builds a workunit's kind
/// selects them from `workunits w`.
pub const KIND_COLUMNS: &str =
    "w.sp, w.fen, w.depth, w.kind, w.hash_mib, w.games, w.move_nodes, w.id";

/// The number of [`KIND_COLUMNS`].
pub const KIND_COLUMN_COUNT: usize = 8;

/// A stored workunit's columns, as [`KIND_COLUMNS`] lists them.
#[derive(Clone, Debug)]
pub struct KindColumns {
    /// `sp`.
    pub sp: Option<i64>,
    /// `fen`.
    pub fen: String,
    /// `depth`.
    pub depth: i64,
    /// `kind`.
    pub kind: i64,
    /// `hash_mib`.
    pub hash_mib: Option<i64>,
    /// `games` (self-play).
    pub games: Option<i64>,
    /// `move_nodes` (self-play).
    pub move_nodes: Option<i64>,
    /// `id`: the seed of a self-play workunit's openings.
    pub id: i64,
}

/// What a stored workunit asks. A self-play workunit's openings are seeded with its id, and
/// its opening plies and move cap are this build's ([`c960_common::game`]).
pub fn kind_of(c: KindColumns) -> WorkUnitKind {
    let position = match c.sp {
        Some(n) => PositionSpec::StartPosition(n as u16),
        None => PositionSpec::Fen(c.fen),
    };
    let hash_mib = c.hash_mib.unwrap_or(i64::from(ANALYSIS_HASH_MIB)) as u32;
    let (engine, self_play) = match c.kind {
        KIND_BUILTIN_ANALYSIS => (AnalysisEngine::Builtin, false),
        KIND_UCI_ANALYSIS => (AnalysisEngine::Uci, false),
        KIND_BUILTIN_SELF_PLAY => (AnalysisEngine::Builtin, true),
        KIND_UCI_SELF_PLAY => (AnalysisEngine::Uci, true),
        _ => {
            return WorkUnitKind::Perft {
                position,
                depth: c.depth as u32,
            };
        }
    };
    if self_play {
        return WorkUnitKind::SelfPlay {
            position,
            games: c.games.unwrap_or(0) as u32,
            nodes: c.move_nodes.unwrap_or(0) as u64,
            engine,
            hash_mib,
            opening_plies: c960_common::game::OPENING_PLIES,
            max_plies: c960_common::game::MAX_PLIES,
            seed: c.id as u64,
        };
    }
    WorkUnitKind::Analysis {
        position,
        depth: c.depth as u32,
        engine,
        hash_mib,
    }
}

/// A u64 stored bit-for-bit in a signed 64-bit column.
pub fn u64_to_db(v: u64) -> i64 {
    v as i64
}

/// The u64 a signed 64-bit column holds bit-for-bit.
pub fn db_to_u64(v: i64) -> u64 {
    v as u64
}

/// A stored digest (`None` unless it is exactly 32 bytes).
pub fn digest_from(blob: Option<Vec<u8>>) -> Option<Digest> {
    blob.and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
}

/// Lower-case hex of a digest, as the exports show it.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// `workunits.check_state`: nothing asked of the coordinator's checker.
pub const CHECK_NONE: i64 = 0;
/// `workunits.check_state`: a check wanted (contested, unanchored, secret, or an implausibly
/// fast result).
pub const CHECK_WANTED: i64 = 1;
/// `workunits.check_state`: computed by the coordinator: `verified_digest` is the truth (a
/// check or an audit).
pub const CHECK_VERIFIED: i64 = 2;
/// `workunits.check_state`: too large for the coordinator's budget.
pub const CHECK_OVER_BUDGET: i64 = 3;
/// `workunits.check_state`: a valid value drawn for the re-split cross-check.
pub const CHECK_RESPLIT_WANTED: i64 = 4;
/// `workunits.check_state`: the re-split cross-check done (or over budget).
pub const CHECK_RESPLIT_DONE: i64 = 5;
/// `workunits.check_state`: a valid value drawn for an audit ([`crate::integrity::audit`]).
pub const CHECK_AUDIT_WANTED: i64 = 6;
/// `workunits.check_state`: audited by one more hidden replica for another worker (the
/// coordinator could not).
pub const CHECK_AUDIT_REPLICA: i64 = 7;
/// `workunits.check_state`: drawn for an audit nobody did: the coordinator could not, and no
/// replica was drawn.
pub const CHECK_UNAUDITED: i64 = 8;

/// `disputes.state`: the referee's turn (new, or every challenge answered or missed).
pub const DISPUTE_DUE: i64 = 0;
/// `disputes.state`: challenges are out.
pub const DISPUTE_CHALLENGED: i64 = 1;
/// `disputes.state`: decided.
pub const DISPUTE_DECIDED: i64 = 2;
/// `challenges.state`: waiting for its answer.
pub const CHALLENGE_OPEN: i64 = 0;
/// `challenges.state`: answered.
pub const CHALLENGE_ANSWERED: i64 = 1;
/// `challenges.state`: its deadline passed, or its answer was refused.
pub const CHALLENGE_MISSED: i64 = 2;

/// Where a value in `check_state` stands with the coordinator's own computations.
pub fn check_standing(check_state: i64) -> crate::integrity::audit::CheckStanding {
    use crate::integrity::audit::CheckStanding;
    match check_state {
        CHECK_VERIFIED => CheckStanding::Proven,
        CHECK_WANTED | CHECK_RESPLIT_WANTED | CHECK_AUDIT_WANTED => CheckStanding::Pending,
        _ => CheckStanding::Unproven,
    }
}

/// `results.state` of [`ReplicaState::InProgress`]: leased, not answered.
pub const REPLICA_IN_PROGRESS: i64 = 0;
/// `results.state` of [`ReplicaState::Returned`]: a stored result.
pub const REPLICA_RETURNED: i64 = 1;
/// `results.state` of [`ReplicaState::Expired`].
pub const REPLICA_EXPIRED: i64 = 2;
/// `results.state` of [`ReplicaState::Abandoned`]: given back.
pub const REPLICA_ABANDONED: i64 = 3;
/// `results.state` of [`ReplicaState::Error`]: refused, failed or voided.
pub const REPLICA_ERROR: i64 = 4;

/// The integer stored in `results.state`.
pub fn replica_code(s: ReplicaState) -> i64 {
    match s {
        ReplicaState::InProgress => REPLICA_IN_PROGRESS,
        ReplicaState::Returned => REPLICA_RETURNED,
        ReplicaState::Expired => REPLICA_EXPIRED,
        ReplicaState::Abandoned => REPLICA_ABANDONED,
        ReplicaState::Error => REPLICA_ERROR,
    }
}

/// The replica state of a stored integer (unknown values read as `Error`, which never votes).
pub fn replica_state(v: i64) -> ReplicaState {
    match v {
        REPLICA_IN_PROGRESS => ReplicaState::InProgress,
        REPLICA_RETURNED => ReplicaState::Returned,
        REPLICA_EXPIRED => ReplicaState::Expired,
        REPLICA_ABANDONED => ReplicaState::Abandoned,
        _ => ReplicaState::Error,
    }
}

/// `workers.trusted` of [`TrustLevel::Untrusted`].
pub const TRUST_UNTRUSTED: i64 = TrustLevel::Untrusted as i64;
/// `workers.trusted` of [`TrustLevel::Earned`].
pub const TRUST_EARNED: i64 = TrustLevel::Earned as i64;
/// `workers.trusted` of [`TrustLevel::Operator`].
pub const TRUST_OPERATOR: i64 = TrustLevel::Operator as i64;

/// The integer stored in `workers.trusted`.
pub fn trust_code(level: TrustLevel) -> i64 {
    level as i64
}

/// The trust level of a stored integer (unknown values read as untrusted).
pub fn trust_level(v: i64) -> TrustLevel {
    match v {
        TRUST_EARNED => TrustLevel::Earned,
        TRUST_OPERATOR => TrustLevel::Operator,
        _ => TrustLevel::Untrusted,
    }
}

/// `results.outcome`: not graded yet.
pub const OUTCOME_PENDING: i64 = 0;
/// `results.outcome`: agrees with the canonical result (a vote won).
pub const OUTCOME_VALID: i64 = 1;
/// `results.outcome`: disagrees with it (a vote lost), or voided by a quarantine.
pub const OUTCOME_INVALID: i64 = 2;

/// The outcome of a stored `results.outcome`.
pub fn result_outcome(v: i64) -> ResultOutcome {
    match v {
        OUTCOME_VALID => ResultOutcome::Valid,
        OUTCOME_INVALID => ResultOutcome::Invalid,
        _ => ResultOutcome::Pending,
    }
}

/// `results.outcome` of a result that agrees with the truth (`true`) or not.
pub fn outcome_code(agrees: bool) -> i64 {
    if agrees {
        OUTCOME_VALID
    } else {
        OUTCOME_INVALID
    }
}

/// `results.checked`: not graded by a check of the coordinator's.
pub const CHECKED_NOT: i64 = 0;
/// `results.checked`: agreed with the coordinator's own digest (a check passed).
pub const CHECKED_PASSED: i64 = 1;
/// `results.checked`: disagreed with it (a check failed).
pub const CHECKED_FAILED: i64 = 2;

/// `results.checked` of a result graded against the coordinator's digest.
pub fn checked_code(passed: bool) -> i64 {
    if passed {
        CHECKED_PASSED
    } else {
        CHECKED_FAILED
    }
}

/// `workunits.state`: waiting for its quorum.
pub const WORKUNIT_OPEN: i64 = 0;
/// `workunits.state`: a canonical result.
pub const WORKUNIT_VALID: i64 = 1;
/// `workunits.state`: failed at the result cap.
pub const WORKUNIT_FAILED: i64 = 2;
/// `workunits.state` as the tables read it: reopened for re-verification (a validator was
/// caught lying), stored as open with `reverify` set.
pub const WORKUNIT_REVERIFYING: i64 = 3;

/// The table status of a stored `workunits.state`.
pub fn row_status(v: i64) -> RowStatus {
    match v {
        WORKUNIT_OPEN => RowStatus::Open,
        WORKUNIT_VALID => RowStatus::Valid,
        WORKUNIT_REVERIFYING => RowStatus::Reverifying,
        _ => RowStatus::Failed,
    }
}

/// The campaign kind of a stored `campaigns.kind`.
pub fn campaign_kind(text: &str) -> Result<CampaignKind, String> {
    CampaignKind::parse(text)
        .ok_or_else(|| format!("unknown campaign kind {text:?} in the database"))
}

/// `campaigns.status`: served.
pub const CAMPAIGN_ACTIVE: i64 = 0;
/// `campaigns.status`: paused by the operator.
pub const CAMPAIGN_PAUSED: i64 = 1;
/// `campaigns.status`: cancelled, never served again.
pub const CAMPAIGN_CANCELLED: i64 = 2;

/// `campaigns.status` of a campaign status.
pub fn status_code(s: CampaignStatus) -> i64 {
    match s {
        CampaignStatus::Active => CAMPAIGN_ACTIVE,
        CampaignStatus::Paused => CAMPAIGN_PAUSED,
        CampaignStatus::Cancelled => CAMPAIGN_CANCELLED,
    }
}

/// The campaign status of a stored `campaigns.status` (an unknown code reads as paused: it
/// is served by no one until the operator says otherwise).
pub fn campaign_status(v: i64) -> CampaignStatus {
    match v {
        CAMPAIGN_ACTIVE => CampaignStatus::Active,
        CAMPAIGN_CANCELLED => CampaignStatus::Cancelled,
        _ => CampaignStatus::Paused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_codes_round_trip() {
        for s in [
            ReplicaState::InProgress,
            ReplicaState::Returned,
            ReplicaState::Expired,
            ReplicaState::Abandoned,
            ReplicaState::Error,
        ] {
            assert_eq!(replica_state(replica_code(s)), s);
        }
        assert_eq!(replica_state(99), ReplicaState::Error);
        for l in [
            TrustLevel::Untrusted,
            TrustLevel::Earned,
            TrustLevel::Operator,
        ] {
            assert_eq!(trust_level(trust_code(l)), l);
        }
        assert!(!trust_level(0).is_trusted());
        assert!(trust_level(1).is_trusted() && trust_level(2).is_trusted());
        assert_eq!(db_to_u64(u64_to_db(u64::MAX)), u64::MAX);
        for s in [
            CampaignStatus::Active,
            CampaignStatus::Paused,
            CampaignStatus::Cancelled,
        ] {
            assert_eq!(campaign_status(status_code(s)), s);
        }
        assert_eq!(result_outcome(outcome_code(true)), ResultOutcome::Valid);
        assert_eq!(result_outcome(outcome_code(false)), ResultOutcome::Invalid);
        assert_eq!(result_outcome(OUTCOME_PENDING), ResultOutcome::Pending);
        assert_eq!(row_status(WORKUNIT_FAILED), RowStatus::Failed);
        assert_eq!(
            (checked_code(true), checked_code(false)),
            (CHECKED_PASSED, CHECKED_FAILED)
        );
    }
}
