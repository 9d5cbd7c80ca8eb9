//! The integers and encodings the schema stores, shared by every backend: workunit kinds,
//! replica states, trust levels, u64 counts bit-for-bit in signed 64-bit columns, digests as
//! 32-byte blobs.

use c960_common::wire::{AnalysisEngine, Capabilities, PositionSpec, WorkUnitKind};

use crate::campaign::ANALYSIS_HASH_MIB;
use crate::scheduler::{CampaignStatus, ReplicaState};
use crate::trust::TrustLevel;
use crate::validator::Digest;

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
pub fn kind_code(analysis: Option<AnalysisEngine>, self_play: bool) -> i64 {
    match (analysis, self_play) {
        (None, _) => KIND_PERFT,
        (Some(AnalysisEngine::Builtin), false) => KIND_BUILTIN_ANALYSIS,
        (Some(AnalysisEngine::Uci), false) => KIND_UCI_ANALYSIS,
        (Some(AnalysisEngine::Builtin), true) => KIND_BUILTIN_SELF_PLAY,
        (Some(AnalysisEngine::Uci), true) => KIND_UCI_SELF_PLAY,
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

/// `workunits.check_state`: what the coordinator's checker has to do with a workunit, or did.
pub mod check {
    /// Nothing asked.
    pub const NONE: i64 = 0;
    /// A check wanted (contested, unanchored, secret, or an implausibly fast result).
    pub const WANTED: i64 = 1;
    /// Computed by the coordinator: `verified_digest` is the truth (a check or an audit).
    pub const VERIFIED: i64 = 2;
    /// Too large for the coordinator's budget.
    pub const OVER_BUDGET: i64 = 3;
    /// A valid value drawn for the re-split cross-check.
    pub const RESPLIT_WANTED: i64 = 4;
    /// The re-split cross-check done (or over budget).
    pub const RESPLIT_DONE: i64 = 5;
    /// A valid value drawn for an audit ([`crate::audit`]).
    pub const AUDIT_WANTED: i64 = 6;
    /// Audited by one more hidden replica for another worker (the coordinator could not).
    pub const AUDIT_REPLICA: i64 = 7;
    /// Drawn for an audit nobody did: the coordinator could not, and no replica was drawn.
    pub const UNAUDITED: i64 = 8;
}

/// The integer stored in `results.state`.
pub fn replica_code(s: ReplicaState) -> i64 {
    match s {
        ReplicaState::InProgress => 0,
        ReplicaState::Returned => 1,
        ReplicaState::Expired => 2,
        ReplicaState::Abandoned => 3,
        ReplicaState::Error => 4,
    }
}

/// The replica state of a stored integer (unknown values read as `Error`, which never votes).
pub fn replica_state(v: i64) -> ReplicaState {
    match v {
        0 => ReplicaState::InProgress,
        1 => ReplicaState::Returned,
        2 => ReplicaState::Expired,
        3 => ReplicaState::Abandoned,
        _ => ReplicaState::Error,
    }
}

/// The integer stored in `workers.trusted`.
pub fn trust_code(level: TrustLevel) -> i64 {
    level as i64
}

/// The trust level of a stored integer (unknown values read as untrusted).
pub fn trust_level(v: i64) -> TrustLevel {
    match v {
        1 => TrustLevel::Earned,
        2 => TrustLevel::Operator,
        _ => TrustLevel::Untrusted,
    }
}

/// The name of a stored `results.outcome`.
pub fn outcome_name(v: i64) -> &'static str {
    match v {
        1 => "valid",
        2 => "invalid",
        _ => "pending",
    }
}

/// `campaigns.status` of a campaign status.
pub fn status_code(s: CampaignStatus) -> i64 {
    match s {
        CampaignStatus::Active => 0,
        CampaignStatus::Paused => 1,
        CampaignStatus::Cancelled => 2,
    }
}

/// The campaign status of a stored `campaigns.status` (an unknown code reads as paused: it
/// is served by no one until the operator says otherwise).
pub fn campaign_status(v: i64) -> CampaignStatus {
    match v {
        0 => CampaignStatus::Active,
        2 => CampaignStatus::Cancelled,
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
    }
}
