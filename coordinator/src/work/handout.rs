//! Handing out replicas, the decisions of each step, pure (the store runs the steps between its
//! statements, in this order: `store/sql/assign.rs`):
//!
//! 1. **Standing** ([`Applicant::standing`]): a banned or quarantined worker gets nothing.
//! 2. **Room** ([`Quota::room`], [`capped_block`], [`block_room`]; [`lease_weight`]): how many new replicas the
//!    worker may take, the batch it asked for less the open leases it is handed again, within
//!    its lease cap (by trust and probation: [`crate::integrity::trust::lease_cap_in_probation`]) and its
//!    address block's.
//! 3. **Same party** ([`PartyKeys`]): the keys the assignment query filters replicas on, so
//!    that no two workers of one party ([`crate::integrity::trust::same_party`]) hold replicas of one
//!    workunit.
//! 4. **The draw**: campaigns in serving order, a batch drawn from a pool of each one's ready
//!    workunits ([`crate::work::transitioner::serving_order`], [`crate::work::transitioner::draw_pool`],
//!    [`crate::work::transitioner::draw_replicas`]; under probation
//!    [`crate::integrity::trust::probation_room`] per campaign).
//! 5. **The leases** ([`Deadlines`], [`issued`]): their deadlines, and the replica each one is
//!    to the transitioner once written.

use c960_common::wire::WorkUnitKind;

use crate::integrity::trust::{Integrity, Party};
use crate::model::{ReplicaState, TrustLevel};
use crate::work::transitioner::{self, ReplicaView};

/// The worker asking for work, as its row says (read and, on PostgreSQL, locked inside the
/// assignment's transaction, so a quarantine committed a moment ago is seen).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applicant {
    /// Banned by the operator.
    pub banned: bool,
    /// Quarantined (caught: a failed check or refused results).
    pub quarantined: bool,
    /// How far it is trusted.
    pub level: TrustLevel,
    /// Secret checks it passed.
    pub checks_passed: u64,
    /// Its address block at registration.
    pub reg_block: Option<String>,
    /// The enrolment token that enrolled it.
    pub token: Option<u64>,
    /// When it registered.
    pub registered_ms: i64,
}

/// Why a worker gets no replica at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Banned (else quarantined).
    NotInGoodStanding {
        /// Banned by the operator (else quarantined).
        banned: bool,
    },
    /// It holds `open` leases, its cap, and none to be handed again.
    LeaseLimit {
        /// Its open leases.
        open: u64,
        /// Its cap.
        cap: u64,
    },
}

impl Applicant {
    /// Step 1: whether it may have work at all.
    pub fn standing(&self) -> Result<(), Refusal> {
        if self.banned || self.quarantined {
            return Err(Refusal::NotInGoodStanding {
                banned: self.banned,
            });
        }
        Ok(())
    }

    /// What the same-party rule knows of it, fetching from `last_block`.
    pub fn party<'a>(&'a self, last_block: Option<&'a str>) -> Party<'a> {
        Party {
            reg_block: self.reg_block.as_deref(),
            last_block,
            token: self.token,
            registered_ms: self.registered_ms,
        }
    }

    /// Step 3: the keys of the same-party rule for a fetch from `last_block`.
    pub fn party_keys(&self, last_block: Option<&str>, integrity: &Integrity) -> PartyKeys {
        let separated = |b: Option<&str>| {
            b.filter(|b| integrity.address_separation.separates(b))
                .map(str::to_string)
        };
        let reg_block = self.reg_block.as_deref();
        PartyKeys {
            blocks: [
                separated(reg_block).or(separated(last_block)),
                separated(last_block).or(separated(reg_block)),
            ],
            token: self.token,
            burst_block: reg_block
                .filter(|_| integrity.registration_burst_ms > 0)
                .map(str::to_string),
        }
    }
}

/// What one lease weighs against a worker's lease cap, in [`LEASE_WEIGHT`]ths of a lease,
/// where the cap in force is the operator's own (`serve --max-open-leases`: a trusted worker,
/// or an untrusted one whose cap has grown to it, outside probation; a smaller cap of trust or
/// probation, and a block's, count leases). That cap counts leases of ordinary workunits
/// (seconds to hours of work); a perft of at most [`TINY_DEPTH`] plies (at most ~10⁵ nodes, a
/// millisecond or less) weighs 1/16 of one, a perft of [`SMALL_DEPTH`] plies 1/4.
///
/// Why: the cap bounds how much work one worker holds back from the others, and sixteen tiny
/// workunits hold back less than one ordinary one. Counted by number, a worker on tiny
/// workunits spent its time on round trips (issue 55: DFRC at depth 2 settled 145 workunits a
/// second with two default workers, under a second of computation).
pub const LEASE_WEIGHT: u64 = 16;

/// The deepest perft that weighs 1/[`LEASE_WEIGHT`] of a lease ([`lease_weight`]).
pub const TINY_DEPTH: u32 = 3;

/// The perft depth that weighs a quarter of a lease ([`lease_weight`]).
pub const SMALL_DEPTH: u32 = 4;

/// Whether leases weigh by size against a worker's cap ([`lease_weight`]): only where the cap
/// in force (`cap`) is the operator's own (`lease_cap`) outside probation; every other cap
/// counts leases, each weighing [`LEASE_WEIGHT`].
pub fn weighs_by_size(cap: u64, lease_cap: u64, probation: bool) -> bool {
    cap == lease_cap && !probation
}

/// The weight of a lease on a workunit of `kind` ([`LEASE_WEIGHT`]).
pub fn lease_weight(kind: &WorkUnitKind) -> u64 {
    match kind {
        WorkUnitKind::Perft { depth, .. } => weight_of_perft(*depth),
        _ => LEASE_WEIGHT,
    }
}

fn weight_of_perft(depth: u32) -> u64 {
    if depth <= TINY_DEPTH {
        1
    } else if depth == SMALL_DEPTH {
        LEASE_WEIGHT / 4
    } else {
        LEASE_WEIGHT
    }
}

/// [`lease_weight`] as an SQL expression over a `workunits` row aliased `w` (`perft`: its
/// stored kind code for perft).
pub fn lease_weight_sql(perft: i64) -> String {
    format!(
        "CASE WHEN w.kind = {perft} AND w.depth <= {TINY_DEPTH} THEN {} WHEN w.kind = {perft} AND w.depth = {SMALL_DEPTH} THEN {} ELSE {LEASE_WEIGHT} END",
        weight_of_perft(TINY_DEPTH),
        weight_of_perft(SMALL_DEPTH),
    )
}

/// How many of `weights` (drawn in order) fit in `room` ([`LEASE_WEIGHT`]ths of a lease; `None`:
/// no cap): the longest prefix whose weights sum to at most `room`.
pub fn fitting(weights: &[u64], room: Option<u64>) -> usize {
    let Some(room) = room else {
        return weights.len();
    };
    let mut sum = 0u64;
    weights
        .iter()
        .take_while(|&&w| {
            sum = sum.saturating_add(w);
            sum <= room
        })
        .count()
}

/// Step 2: what the worker holds and asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    /// The batch it asked for.
    pub asked: u64,
    /// Its own open leases handed to it again (it asks again, so it lost them: a crash).
    pub reissued: u64,
    /// Its lease cap in leases (0: none).
    pub cap: u64,
    /// What its open leases weigh ([`lease_weight`], in [`LEASE_WEIGHT`]ths of a lease).
    pub open: u64,
}

impl Quota {
    /// How many new replicas it may take within its own cap, at most (each weighs at least
    /// 1/[`LEASE_WEIGHT`]; [`Quota::weight_room`] trims the draw): refused at the cap only when
    /// no lease of its own is handed again (then it has work all the same).
    pub fn room(&self) -> Result<u64, Refusal> {
        let want = self.asked.saturating_sub(self.reissued);
        let Some(room) = self.weight_room() else {
            return Ok(want);
        };
        if room == 0 && self.reissued == 0 {
            return Err(self.limit());
        }
        Ok(want.min(room))
    }

    /// The refusal at its cap, in leases.
    pub fn limit(&self) -> Refusal {
        Refusal::LeaseLimit {
            open: self.open.div_ceil(LEASE_WEIGHT),
            cap: self.cap,
        }
    }

    /// The weight it may still take ([`LEASE_WEIGHT`]ths of a lease); `None`: no cap.
    pub fn weight_room(&self) -> Option<u64> {
        (self.cap > 0).then(|| {
            self.cap
                .saturating_mul(LEASE_WEIGHT)
                .saturating_sub(self.open)
        })
    }
}

/// The address block whose open leases are capped for a fetch from `block`
/// ([`Integrity::block_lease_cap`]): none when the cap is off or the block is exempt
/// ([`crate::integrity::trust::AddressSeparation::exempts`]).
pub fn capped_block<'a>(block: Option<&'a str>, integrity: &Integrity) -> Option<&'a str> {
    block.filter(|b| integrity.block_lease_cap > 0 && !integrity.address_separation.exempts(b))
}

/// `want` within the block's cap, its workers holding `in_block` open leases. A block's cap,
/// like the caps of untrusted and probationary workers, counts leases: it bounds how many
/// workunits identities that may be sybils can lock, whatever their size.
pub fn block_room(want: u64, integrity: &Integrity, in_block: u64) -> u64 {
    want.min(integrity.block_lease_cap.saturating_sub(in_block))
}

/// Step 3: the keys the assignment query keeps a workunit from the worker on, when a worker
/// of another identity that matches one holds or answered a replica of it
/// ([`crate::integrity::trust::same_party`], mirrored in SQL).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartyKeys {
    /// The worker's address blocks that separate (registration, last fetch), each standing in
    /// for the other when only one separates; both `None` when neither does.
    pub blocks: [Option<String>; 2],
    /// Its enrolment token.
    pub token: Option<u64>,
    /// Its registration block, when registration bursts pair workers (a burst window is set).
    pub burst_block: Option<String>,
}

impl PartyKeys {
    /// Whether any key is set: with none, the query leaves the same-party clause out (kept in
    /// with every key NULL it costs PostgreSQL a plan per execution).
    pub fn any(&self) -> bool {
        self.blocks.iter().any(Option::is_some)
            || self.token.is_some()
            || self.burst_block.is_some()
    }
}

/// Step 5: the deadlines of leases issued together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    /// By when each must be renewed or answered.
    pub renew_by: i64,
    /// Its whole life, which renewals never pass.
    pub hard: i64,
}

impl Deadlines {
    /// For leases issued at `now_ms` (`--lease-secs` as `lease_ms`, renewals every
    /// `renewal_ms`).
    pub fn at(now_ms: i64, lease_ms: i64, renewal_ms: u64) -> Deadlines {
        let hard = transitioner::lease_deadline(now_ms, lease_ms);
        Deadlines {
            renew_by: transitioner::renewal_deadline(now_ms, renewal_ms, hard),
            hard,
        }
    }
}

/// Step 5: the replica a lease just written is, for the transitioner that runs on its
/// workunit in the same transaction.
pub fn issued(lease_id: u64, worker_id: u64, level: TrustLevel) -> ReplicaView {
    ReplicaView {
        id: lease_id,
        worker_id,
        state: ReplicaState::InProgress,
        digest: None,
        trusted: level.is_trusted(),
        operator: level == TrustLevel::Operator,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::integrity::trust::{AddressSeparation, same_party};

    const PUBLIC: &str = "203.0.113.0/24";
    const OTHER: &str = "198.51.100.0/24";
    const LAN: &str = "192.168.1.0/24";

    fn applicant() -> Applicant {
        Applicant {
            banned: false,
            quarantined: false,
            level: TrustLevel::Untrusted,
            checks_passed: 0,
            reg_block: Some(PUBLIC.into()),
            token: None,
            registered_ms: 1_000,
        }
    }

    #[test]
    fn banned_or_quarantined_workers_get_nothing() {
        assert_eq!(applicant().standing(), Ok(()));
        let quarantined = Applicant {
            quarantined: true,
            ..applicant()
        };
        assert_eq!(
            quarantined.standing(),
            Err(Refusal::NotInGoodStanding { banned: false })
        );
        let banned = Applicant {
            banned: true,
            ..quarantined
        };
        assert_eq!(
            banned.standing(),
            Err(Refusal::NotInGoodStanding { banned: true })
        );
    }

    #[test]
    fn room_is_the_batch_less_what_is_handed_again_within_the_cap() {
        // Leases handed when every replica drawn weighs `w`.
        let q = |asked, reissued, cap, open_leases: u64, w: u64| {
            let quota = Quota {
                asked,
                reissued,
                cap,
                open: open_leases * LEASE_WEIGHT,
            };
            quota
                .room()
                .map(|n| fitting(&vec![w; n as usize], quota.weight_room()) as u64)
        };
        let ordinary = LEASE_WEIGHT;
        // No cap: the batch less the leases handed again.
        assert_eq!(q(8, 0, 0, 100, ordinary), Ok(8));
        assert_eq!(q(8, 3, 0, 3, ordinary), Ok(5));
        // Under the cap: up to it.
        assert_eq!(q(8, 0, 4, 1, ordinary), Ok(3));
        assert_eq!(q(2, 0, 4, 1, ordinary), Ok(2));
        // At the cap with nothing handed again: refused, with the figures.
        assert_eq!(
            q(8, 0, 4, 4, ordinary),
            Err(Refusal::LeaseLimit { open: 4, cap: 4 })
        );
        assert_eq!(
            q(8, 0, 4, 6, ordinary),
            Err(Refusal::LeaseLimit { open: 6, cap: 4 })
        );
        // At the cap with its own leases handed again: those, and nothing new.
        assert_eq!(q(8, 4, 4, 4, ordinary), Ok(0));
        // Tiny workunits: sixteen to a lease, so the default cap of 64 holds 1,024.
        assert_eq!(q(4096, 0, 64, 0, 1), Ok(1024));
        assert_eq!(q(4096, 0, 64, 63, 1), Ok(16));
        assert_eq!(q(4096, 0, 64, 0, 4), Ok(256));
    }

    #[test]
    fn a_lease_weighs_by_its_workunit_size_in_rust_and_in_sql_alike() {
        use c960_common::wire::PositionSpec;
        let perft = |depth| WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth,
        };
        let weights: Vec<u64> = (1..=7).map(|d| lease_weight(&perft(d))).collect();
        assert_eq!(weights, [1, 1, 1, 4, 16, 16, 16]);
        let sql = lease_weight_sql(0);
        assert!(sql.contains("w.depth <= 3 THEN 1 "), "{sql}");
        assert!(sql.contains("w.depth = 4 THEN 4 "), "{sql}");
        assert!(sql.ends_with("ELSE 16 END"), "{sql}");
        // A partial weight that does not fit is not handed.
        assert_eq!(fitting(&[1, 4, 16, 1], Some(20)), 2);
        assert_eq!(fitting(&[1, 4, 16, 1], None), 4);
    }

    #[test]
    fn the_block_cap_applies_to_blocks_that_are_blocks() {
        let integrity = Integrity {
            block_lease_cap: 10,
            ..Integrity::default()
        };
        assert_eq!(capped_block(Some(PUBLIC), &integrity), Some(PUBLIC));
        assert_eq!(capped_block(None, &integrity), None);
        // A LAN block is no block when only public blocks separate; it is when all do.
        assert_eq!(capped_block(Some(LAN), &integrity), None);
        let everywhere = Integrity {
            address_separation: AddressSeparation::Everywhere,
            ..integrity
        };
        assert_eq!(capped_block(Some(LAN), &everywhere), Some(LAN));
        let off = Integrity {
            block_lease_cap: 0,
            ..integrity
        };
        assert_eq!(capped_block(Some(PUBLIC), &off), None);
        assert_eq!(block_room(8, &integrity, 0), 8);
        assert_eq!(block_room(8, &integrity, 7), 3);
        assert_eq!(block_room(8, &integrity, 12), 0);
    }

    #[test]
    fn party_keys_are_the_blocks_that_separate_the_token_and_the_burst_block() {
        let integrity = Integrity::default();
        let a = applicant();
        // Both blocks separate: each its own key.
        let keys = a.party_keys(Some(OTHER), &integrity);
        assert_eq!(
            keys.blocks,
            [Some(PUBLIC.to_string()), Some(OTHER.to_string())]
        );
        assert!(keys.any());
        // One separates: it stands for both; neither: no block key.
        let keys = a.party_keys(Some(LAN), &integrity);
        assert_eq!(
            keys.blocks,
            [Some(PUBLIC.to_string()), Some(PUBLIC.to_string())]
        );
        let lan = Applicant {
            reg_block: Some(LAN.into()),
            ..applicant()
        };
        assert_eq!(
            lan.party_keys(Some(OTHER), &integrity).blocks,
            [Some(OTHER.to_string()), Some(OTHER.to_string())]
        );
        let keys = lan.party_keys(Some(LAN), &integrity);
        assert_eq!(keys, PartyKeys::default());
        assert!(!keys.any(), "no key: the clause is left out");
        // The token and the registration burst are keys of their own.
        let enrolled = Applicant {
            token: Some(5),
            ..lan.clone()
        };
        let keys = enrolled.party_keys(Some(LAN), &integrity);
        assert_eq!((keys.token, keys.any()), (Some(5), true));
        let bursts = Integrity {
            registration_burst_ms: 60_000,
            ..integrity
        };
        let keys = lan.party_keys(Some(LAN), &bursts);
        assert_eq!(keys.burst_block.as_deref(), Some(LAN));
        assert!(keys.any());
        // Separation off: blocks are no keys.
        let off = Integrity {
            address_separation: AddressSeparation::Off,
            ..integrity
        };
        assert!(!a.party_keys(Some(OTHER), &off).any());
    }

    #[test]
    fn the_keys_mirror_the_same_party_rule() {
        // The assignment query's clause over the keys (SQL: NULL matches nothing) pairs the
        // applicant with exactly the workers trust::same_party pairs it with.
        let integrity = Integrity {
            registration_burst_ms: 60_000,
            ..Integrity::default()
        };
        let clause = |keys: &PartyKeys, registered_ms: i64, o: &Party| {
            let keyed =
                |b: Option<&str>| b.is_some_and(|b| keys.blocks.iter().flatten().any(|k| k == b));
            keyed(o.reg_block)
                || keyed(o.last_block)
                || (o.token.is_some() && o.token == keys.token)
                || (keys.burst_block.is_some()
                    && keys.burst_block.as_deref() == o.reg_block
                    && o.registered_ms.abs_diff(registered_ms) <= integrity.registration_burst_ms)
        };
        let party = |reg_block, last_block, token, registered_ms| Party {
            reg_block,
            last_block,
            token,
            registered_ms,
        };
        let others = [
            party(Some(LAN), Some(OTHER), None, 999_999),
            party(Some(LAN), Some(LAN), Some(5), 999_999),
            party(Some(PUBLIC), Some(LAN), None, 2_000),
            party(Some(LAN), Some(LAN), Some(6), 2_000),
            party(Some(LAN), Some(LAN), None, 999_999),
            party(None, None, None, 1_000),
        ];
        let applicants = [
            Applicant {
                token: Some(5),
                ..applicant()
            },
            Applicant {
                reg_block: Some(LAN.into()),
                ..applicant()
            },
        ];
        let (mut paired, mut apart) = (0, 0);
        for a in &applicants {
            for last_block in [Some(OTHER), Some(LAN), None] {
                let keys = a.party_keys(last_block, &integrity);
                for o in &others {
                    let same = same_party(&a.party(last_block), o, &integrity);
                    assert_eq!(
                        clause(&keys, a.registered_ms, o),
                        same,
                        "{a:?} from {last_block:?} and {o:?}"
                    );
                    if same {
                        paired += 1;
                    } else {
                        apart += 1;
                    }
                }
            }
        }
        assert!(paired > 0 && apart > 0, "{paired} paired, {apart} apart");
    }

    #[test]
    fn leases_are_renewed_within_their_whole_life() {
        assert_eq!(
            Deadlines::at(1_000, 3_600_000, 90_000),
            Deadlines {
                renew_by: 91_000,
                hard: 3_601_000
            }
        );
        // No renewals: the whole life; a life shorter than a renewal: the life.
        assert_eq!(Deadlines::at(1_000, 3_600_000, 0).renew_by, 3_601_000);
        assert_eq!(Deadlines::at(1_000, 10_000, 90_000).renew_by, 11_000);
    }

    #[test]
    fn an_issued_lease_is_an_open_replica_of_its_worker() {
        let r = issued(9, 7, TrustLevel::Operator);
        assert_eq!(
            (r.id, r.worker_id, r.state),
            (9, 7, ReplicaState::InProgress)
        );
        assert!(r.trusted && r.operator && r.digest.is_none());
        let r = issued(9, 7, TrustLevel::Earned);
        assert!(r.trusted && !r.operator);
        assert!(!issued(9, 7, TrustLevel::Untrusted).trusted);
        assert!(
            !transitioner::may_receive(7, &[r]),
            "one replica per worker"
        );
    }
}
