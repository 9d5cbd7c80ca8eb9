//! Scheduling decisions in BOINC's model, as pure functions over a workunit's replicas:
//! how many replicas to send out, when a workunit is valid or failed (the transitioner),
//! who may receive a replica, lease deadlines, and when a worker is excluded.

use crate::validator::{self, Digest, Vote};

/// The life of one replica (a lease and, once returned, its result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaState {
    /// Leased to a worker, deadline not passed.
    InProgress,
    /// A result came back and passed the digest and shape checks.
    Returned,
    /// The deadline passed without a result; the replica is reissued.
    Expired,
    /// The worker gave the lease back.
    Abandoned,
    /// The worker sent something refused (digest mismatch, impossible divide).
    Error,
}

impl ReplicaState {
    /// The integer stored in the database.
    pub fn to_db(self) -> i64 {
        match self {
            ReplicaState::InProgress => 0,
            ReplicaState::Returned => 1,
            ReplicaState::Expired => 2,
            ReplicaState::Abandoned => 3,
            ReplicaState::Error => 4,
        }
    }

    /// The state for a stored integer (unknown values read as `Error`, which never votes).
    pub fn from_db(v: i64) -> ReplicaState {
        match v {
            0 => ReplicaState::InProgress,
            1 => ReplicaState::Returned,
            2 => ReplicaState::Expired,
            3 => ReplicaState::Abandoned,
            _ => ReplicaState::Error,
        }
    }

    /// Name for JSON and logs.
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::InProgress => "in_progress",
            ReplicaState::Returned => "returned",
            ReplicaState::Expired => "expired",
            ReplicaState::Abandoned => "abandoned",
            ReplicaState::Error => "error",
        }
    }
}

/// One replica as the transitioner sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplicaView {
    /// Result/lease id.
    pub id: u64,
    /// The worker holding or having returned it.
    pub worker_id: u64,
    /// Where it stands.
    pub state: ReplicaState,
    /// Digest when returned.
    pub digest: Option<Digest>,
}

/// How a workunit is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuorumPolicy {
    /// Agreeing results from distinct workers needed.
    pub quorum: u32,
    /// Most results that may come back before the workunit is declared failed.
    pub max_results: u32,
}

/// The transitioner's verdict on a workunit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Not decided; `needed` more replicas should be leased now.
    Pending {
        /// Replicas to issue now (beyond those in progress).
        needed: u32,
    },
    /// A quorum agrees on this digest.
    Valid {
        /// The canonical digest.
        canonical: Digest,
    },
    /// The result cap is reached without a quorum.
    Failed,
}

/// The transitioner: decides a workunit's state from its replicas.
///
/// Enough replicas are kept in flight that, if they all agree with the current best group, the
/// quorum is reached; on disagreement this sends one more replica at a time, up to
/// `max_results` returned results, after which the workunit fails rather than burn work forever.
pub fn transition(policy: QuorumPolicy, replicas: &[ReplicaView]) -> Transition {
    let votes: Vec<Vote> = replicas
        .iter()
        .filter(|r| r.state == ReplicaState::Returned)
        .filter_map(|r| {
            r.digest.map(|digest| Vote {
                worker_id: r.worker_id,
                digest,
            })
        })
        .collect();
    let quorum = policy.quorum.max(1);
    if let Some(canonical) = validator::find_quorum(quorum, &votes) {
        return Transition::Valid { canonical };
    }
    let returned = votes.len() as u32;
    let in_progress = replicas
        .iter()
        .filter(|r| r.state == ReplicaState::InProgress)
        .count() as u32;
    let cap = policy.max_results.max(quorum);
    if returned >= cap {
        return Transition::Failed;
    }
    let missing = quorum - validator::best_agreement(&votes);
    let room = cap - returned - in_progress.min(cap - returned);
    let needed = missing.saturating_sub(in_progress).min(room);
    if needed == 0 && in_progress == 0 {
        // Cannot happen with cap ≥ quorum, but never leave a workunit stuck open.
        return Transition::Failed;
    }
    Transition::Pending { needed }
}

/// BOINC's one-result-per-user rule: a worker may not receive a replica of a workunit for
/// which it holds a lease or has already returned (or botched) a result. Expired and abandoned
/// replicas do not count, so a worker that crashed may pick the workunit up again.
pub fn may_receive(worker_id: u64, replicas: &[ReplicaView]) -> bool {
    !replicas.iter().any(|r| {
        r.worker_id == worker_id
            && matches!(
                r.state,
                ReplicaState::InProgress | ReplicaState::Returned | ReplicaState::Error
            )
    })
}

/// The deadline of a lease issued at `now_ms`.
pub fn lease_deadline(now_ms: i64, lease_ms: i64) -> i64 {
    now_ms.saturating_add(lease_ms.max(1))
}

/// Whether a lease with this deadline has expired at `now_ms`.
pub fn is_expired(deadline_ms: i64, now_ms: i64) -> bool {
    now_ms > deadline_ms
}

/// Whether a worker with this record gets no more work: lost votes plus refused results
/// reached the limit (0 disables the rule).
pub fn is_excluded(lost_votes: u64, refused: u64, max_strikes: u64) -> bool {
    max_strikes > 0 && lost_votes + refused >= max_strikes
}

/// The verdict on one returned result once the canonical digest is known.
pub fn agrees(canonical: &Digest, digest: &Digest) -> bool {
    canonical == digest
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: QuorumPolicy = QuorumPolicy {
        quorum: 2,
        max_results: 4,
    };

    fn r(id: u64, worker_id: u64, state: ReplicaState, d: Option<u8>) -> ReplicaView {
        ReplicaView {
            id,
            worker_id,
            state,
            digest: d.map(|d| [d; 32]),
        }
    }
    use ReplicaState::*;

    #[test]
    fn fresh_workunit_wants_quorum_replicas() {
        assert_eq!(transition(P, &[]), Transition::Pending { needed: 2 });
        assert_eq!(
            transition(P, &[r(1, 1, InProgress, None)]),
            Transition::Pending { needed: 1 }
        );
        let both = [r(1, 1, InProgress, None), r(2, 2, InProgress, None)];
        assert_eq!(transition(P, &both), Transition::Pending { needed: 0 });
    }

    #[test]
    fn agreement_validates() {
        let rs = [r(1, 1, Returned, Some(5)), r(2, 2, Returned, Some(5))];
        assert_eq!(transition(P, &rs), Transition::Valid { canonical: [5; 32] });
    }

    #[test]
    fn same_worker_twice_is_not_a_quorum() {
        let rs = [r(1, 1, Returned, Some(5)), r(2, 1, Returned, Some(5))];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
    }

    #[test]
    fn disagreement_sends_one_more_then_fails_at_cap() {
        let mut rs = vec![r(1, 1, Returned, Some(1)), r(2, 2, Returned, Some(2))];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        rs.push(r(3, 3, Returned, Some(3)));
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        rs.push(r(4, 4, Returned, Some(4)));
        assert_eq!(transition(P, &rs), Transition::Failed);
        // A third agreeing result rescues it before the cap.
        let rs = [
            r(1, 1, Returned, Some(1)),
            r(2, 2, Returned, Some(2)),
            r(3, 3, Returned, Some(2)),
        ];
        assert_eq!(transition(P, &rs), Transition::Valid { canonical: [2; 32] });
    }

    #[test]
    fn expired_and_refused_replicas_are_replaced() {
        let rs = [r(1, 1, Expired, None), r(2, 2, InProgress, None)];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        let rs = [r(1, 1, Error, None), r(2, 2, Returned, Some(1))];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 1 });
        let rs = [r(1, 1, Abandoned, None)];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 2 });
    }

    #[test]
    fn never_issues_past_the_cap() {
        let rs = [
            r(1, 1, Returned, Some(1)),
            r(2, 2, Returned, Some(2)),
            r(3, 3, Returned, Some(3)),
            r(4, 4, InProgress, None),
        ];
        assert_eq!(transition(P, &rs), Transition::Pending { needed: 0 });
    }

    #[test]
    fn one_replica_per_worker() {
        let rs = [
            r(1, 1, InProgress, None),
            r(2, 2, Returned, Some(1)),
            r(3, 3, Expired, None),
            r(4, 4, Error, None),
        ];
        assert!(!may_receive(1, &rs));
        assert!(!may_receive(2, &rs));
        assert!(may_receive(3, &rs));
        assert!(!may_receive(4, &rs));
        assert!(may_receive(5, &rs));
    }

    #[test]
    fn leases_and_exclusion() {
        assert_eq!(lease_deadline(1000, 500), 1500);
        assert!(!is_expired(1500, 1500));
        assert!(is_expired(1500, 1501));
        assert!(!is_excluded(2, 0, 3));
        assert!(is_excluded(2, 1, 3));
        assert!(!is_excluded(100, 100, 0));
    }
}
