//! The decisions on submitted results, pure and free of HTTP: [`judge`] checks one result
//! against its lease and gives a [`Verdict`]; [`Plan`] turns the verdicts of a request into the
//! settlements the store writes in one transaction, and the store's outcomes back into one
//! [`Refusal`] or acceptance per result. A refusal carries its [`ErrorCode`] and message as
//! domain data; `net/api/workers.rs` reads the leases, writes the settlements and maps each refusal
//! to its HTTP answer (`net/api/error.rs`: the status is decided there alone).

use c960_common::digest::result_digest;
use c960_common::error_code::ErrorCode;
use c960_common::wire::{BatchedResult, WorkUnitKind};

use crate::integrity::trust;
use crate::model::{LeaseInfo, ReplicaState, Settlement, StoreError, StoreResult, Submission};
use crate::work::validator;

/// A result refused on its merits (broken, lying or contradicting a known answer): what the
/// worker is told. Its lease is closed as an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The machine-readable code.
    pub code: ErrorCode,
    /// What was wrong with the result.
    pub message: String,
}

/// Why one submitted result was not accepted.
#[derive(Debug)]
pub enum Refusal {
    /// Not this worker's open lease, or a settlement the store could not write: the store's
    /// reason.
    Store(StoreError),
    /// The result itself was refused ([`Verdict::Refuse`]), once its lease was closed.
    Fault(Fault),
}

impl Refusal {
    /// The machine-readable code the worker is told.
    pub fn code(&self) -> ErrorCode {
        match self {
            Refusal::Store(e) => e.code(),
            Refusal::Fault(f) => f.code,
        }
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Refusal {
        Refusal::Store(e)
    }
}

/// What becomes of one submitted result once checked against its lease.
pub enum Verdict {
    /// Verified: store it.
    Store(Settlement),
    /// Broken or lying: close the lease as an error (a strike), and tell the worker why.
    Refuse(Settlement, Fault),
    /// Not this worker's open lease: nothing to write.
    Reject(StoreError),
}

/// Checks one result against its lease: holder, state, kind, digest (recomputed from the
/// payload) and shape; then, as checks whose failure is evidence against the worker, the public
/// known answer; and the plausibility of its speed (nodes per second from lease issue at
/// `now_ms`, at most `max_nodes_per_sec`), whose failure is no evidence: the result is stored
/// and marked [`Submission::implausible`]. Pure: the store is written afterwards, in one
/// transaction per request.
pub fn judge(
    worker_id: u64,
    lease: Option<LeaseInfo>,
    r: BatchedResult,
    engine: &str,
    now_ms: i64,
    max_nodes_per_sec: u64,
) -> Verdict {
    let Some(lease) = lease.filter(|l| l.workunit_id == r.workunit_id) else {
        return Verdict::Reject(StoreError::UnknownLease(r.lease_id));
    };
    if lease.worker_id != worker_id {
        return Verdict::Reject(StoreError::LeaseNotYours(r.lease_id));
    }
    if lease.state != ReplicaState::InProgress {
        return Verdict::Reject(match lease.state {
            ReplicaState::Expired => StoreError::LeaseExpired(lease.id),
            s => StoreError::LeaseClosed(lease.id, s.name()),
        });
    }
    // The replica is closed as an error (a strike, or for a failed check the evidence that
    // quarantines the worker), so that it is reissued to someone else.
    let refusal = |code: ErrorCode, reason: String, message: String, failed_check: bool| {
        Verdict::Refuse(
            Settlement::Refuse {
                lease_id: lease.id,
                reason,
                failed_check,
            },
            Fault { code, message },
        )
    };
    let refuse =
        |code: ErrorCode, reason: String, message: String| refusal(code, reason, message, false);
    // Cheap checks before dear ones. First what the result's size bounds: its kind (a result
    // of the wrong kind cannot match any digest: say so first) and its sizes (a self-play
    // game no longer than the workunit's move cap allows), before anything reads it.
    match validator::check_result_bounds(&lease.kind, &r.result) {
        Err(e @ validator::ShapeError::WrongKind { .. }) => {
            return refuse(ErrorCode::WrongResultKind, e.to_string(), e.to_string());
        }
        Err(e) => return refuse(ErrorCode::InvalidResult, e.to_string(), e.to_string()),
        Ok(()) => {}
    }
    // The digest is recomputed from the payload: a mismatch means a broken or lying client.
    let digest = result_digest(r.workunit_id, &lease.kind, &r.result);
    if digest != r.digest {
        return refuse(
            ErrorCode::DigestMismatch,
            "digest mismatch".into(),
            "the digest does not match the payload".into(),
        );
    }
    // Then the dear checks: reading and replaying every game, every move of a divide or PV.
    if let Err(e) = validator::check_result_shape(&lease.kind, &r.result) {
        return refuse(ErrorCode::InvalidResult, e.to_string(), e.to_string());
    }
    let nodes = r.result.nodes();
    if let Some(known) = lease.known_nodes
        && known != nodes
    {
        let m = format!("{nodes} nodes contradicts the known answer of this workunit");
        return refusal(ErrorCode::CheckFailed, m.clone(), m, true);
    }
    // Too fast is no evidence (a worker's own table answers a repeated campaign at once): the
    // result is stored, and its workunit checked by the coordinator.
    let elapsed = now_ms.saturating_sub(lease.issued_ms);
    let implausible = matches!(lease.kind, WorkUnitKind::Perft { .. })
        && !trust::plausible(nodes, elapsed, max_nodes_per_sec);
    Verdict::Store(Settlement::Store {
        lease_id: lease.id,
        submission: Submission {
            result: r.result,
            digest,
            elapsed_ms: r.elapsed_ms,
            engine: engine.to_string(),
            implausible,
        },
    })
}

/// The settlements of one request's verdicts, and what to answer for each result.
#[derive(Debug, Default)]
pub struct Plan {
    /// What the store writes, in one transaction.
    pub settlements: Vec<Settlement>,
    /// One answer per result, final for rejections; settled ones are completed by [`Plan::finish`].
    outcomes: Vec<Result<(), Refusal>>,
    /// For each settlement, the outcome slot it answers and the fault to report once written.
    slots: Vec<(usize, Option<Fault>)>,
}

impl Plan {
    /// The plan of these verdicts, in the order of the results.
    pub fn of(verdicts: impl IntoIterator<Item = Verdict>) -> Plan {
        let mut plan = Plan::default();
        for v in verdicts {
            let slot = plan.outcomes.len();
            match v {
                Verdict::Store(s) => {
                    plan.slots.push((slot, None));
                    plan.settlements.push(s);
                    plan.outcomes.push(Ok(()));
                }
                Verdict::Refuse(s, e) => {
                    plan.slots.push((slot, Some(e)));
                    plan.settlements.push(s);
                    plan.outcomes.push(Ok(()));
                }
                Verdict::Reject(e) => plan.outcomes.push(Err(Refusal::Store(e))),
            }
        }
        plan
    }

    /// The answers once the store wrote the settlements with these outcomes (one per
    /// settlement, in order): a refusal is reported once written; a settlement the store could
    /// not write reports the store's reason.
    pub fn finish(mut self, written: Vec<StoreResult<()>>) -> Vec<Result<(), Refusal>> {
        for ((slot, fault), w) in self.slots.into_iter().zip(written) {
            self.outcomes[slot] = match (w, fault) {
                (Err(e), _) => Err(Refusal::Store(e)),
                (Ok(()), Some(f)) => Err(Refusal::Fault(f)),
                (Ok(()), None) => Ok(()),
            };
        }
        self.outcomes
    }
}

#[cfg(test)]
mod tests {
    use c960_common::perft::divide;
    use c960_common::startpos::StartPosition;
    use c960_common::wire::{PerftResult, PositionSpec, WorkResult};

    use super::*;

    const WORKER: u64 = 7;
    const NOW: i64 = 1_000_000;

    fn kind() -> WorkUnitKind {
        WorkUnitKind::Perft {
            position: PositionSpec::StartPosition(518),
            depth: 2,
        }
    }

    fn lease(state: ReplicaState) -> LeaseInfo {
        LeaseInfo {
            id: 11,
            workunit_id: 3,
            worker_id: WORKER,
            state,
            deadline_ms: NOW + 60_000,
            issued_ms: NOW - 10_000,
            kind: kind(),
            known_nodes: None,
        }
    }

    /// The honest answer, its digest recomputed as a worker would.
    fn honest() -> BatchedResult {
        let pos = StartPosition::new(518).unwrap().position();
        let d: Vec<(String, u64)> = divide(&pos, 2)
            .into_iter()
            .map(|(m, n)| (m.to_string(), n))
            .collect();
        let nodes = d.iter().map(|x| x.1).sum();
        let result = WorkResult::Perft(PerftResult { nodes, divide: d });
        BatchedResult {
            lease_id: 11,
            workunit_id: 3,
            digest: result_digest(3, &kind(), &result),
            result,
            elapsed_ms: 5,
        }
    }

    fn verdict(lease: Option<LeaseInfo>, r: BatchedResult) -> Verdict {
        judge(WORKER, lease, r, "test 1", NOW, 1_000_000_000)
    }

    fn code(v: &Verdict) -> Option<ErrorCode> {
        match v {
            Verdict::Store(_) => None,
            Verdict::Refuse(_, f) => Some(f.code),
            Verdict::Reject(e) => Some(e.code()),
        }
    }

    #[test]
    fn an_honest_result_is_stored() {
        let v = verdict(Some(lease(ReplicaState::InProgress)), honest());
        let Verdict::Store(Settlement::Store {
            lease_id,
            submission,
        }) = v
        else {
            panic!("not stored");
        };
        assert_eq!(lease_id, 11);
        assert_eq!(submission.result.nodes(), 400);
        assert_eq!(submission.engine, "test 1");
    }

    #[test]
    fn results_of_no_open_lease_of_this_worker_are_rejected_without_a_write() {
        let open = || Some(lease(ReplicaState::InProgress));
        let cases = [
            (None, honest(), ErrorCode::UnknownLease),
            (
                open(),
                BatchedResult {
                    workunit_id: 4,
                    ..honest()
                },
                ErrorCode::UnknownLease,
            ),
            (
                Some(LeaseInfo {
                    worker_id: WORKER + 1,
                    ..lease(ReplicaState::InProgress)
                }),
                honest(),
                ErrorCode::LeaseNotYours,
            ),
            (
                Some(lease(ReplicaState::Expired)),
                honest(),
                ErrorCode::LeaseExpired,
            ),
            (
                Some(lease(ReplicaState::Returned)),
                honest(),
                ErrorCode::LeaseClosed,
            ),
        ];
        for (lease, r, want) in cases {
            let v = verdict(lease, r);
            assert!(matches!(v, Verdict::Reject(_)), "{want}");
            assert_eq!(code(&v), Some(want));
        }
    }

    /// A self-play result for a two-game workunit (move cap 400) whose first game is `first`,
    /// its digest right unless `digest_right` is false.
    fn self_play(first: String, digest_right: bool) -> (LeaseInfo, BatchedResult) {
        use c960_common::wire::{AnalysisEngine, SelfPlayResult};
        let kind = WorkUnitKind::SelfPlay {
            position: PositionSpec::StartPosition(518),
            games: 2,
            nodes: 1000,
            engine: AnalysisEngine::Builtin,
            hash_mib: 1,
            opening_plies: 2,
            max_plies: 400,
            seed: 3,
        };
        let result = WorkResult::SelfPlay(SelfPlayResult {
            engine_id: c960_common::search::ENGINE_ID.into(),
            nodes: 1,
            white_wins: 0,
            draws: 2,
            black_wins: 0,
            games: vec![first, "*".into()],
        });
        let mut digest = result_digest(3, &kind, &result);
        if !digest_right {
            digest[0] ^= 1;
        }
        let lease = LeaseInfo {
            kind,
            ..lease(ReplicaState::InProgress)
        };
        let r = BatchedResult {
            digest,
            result,
            ..honest()
        };
        (lease, r)
    }

    #[test]
    fn sizes_are_checked_before_the_digest_and_the_games() {
        // A game longer than any of 400 plies is refused for its size, digest right or wrong,
        // before a move of it is read.
        let long = "1. Nf3 Nf6 2. Ng1 Ng8 ".repeat(50_000);
        for right in [true, false] {
            let (lease, r) = self_play(long.clone(), right);
            let v = verdict(Some(lease), r);
            let Verdict::Refuse(_, e) = &v else {
                panic!("not refused");
            };
            assert_eq!(e.code, ErrorCode::InvalidResult);
            assert!(e.message.contains("bytes, more than"), "{}", e.message);
        }
        // Within the size, a wrong digest is found before the games are read; a right one
        // lets the games be read (and these are no games).
        let (lease, r) = self_play("1. Nf3 *".into(), false);
        assert_eq!(
            code(&verdict(Some(lease), r)),
            Some(ErrorCode::DigestMismatch)
        );
        let (lease, r) = self_play("1. Nf3 *".into(), true);
        let v = verdict(Some(lease), r);
        let Verdict::Refuse(_, e) = &v else {
            panic!("not refused");
        };
        assert!(e.message.contains("game 1"), "{}", e.message);
    }

    #[test]
    fn broken_or_lying_results_are_refused_and_close_the_lease() {
        let open = || Some(lease(ReplicaState::InProgress));
        let mut tampered = honest();
        if let WorkResult::Perft(p) = &mut tampered.result {
            p.nodes += 1;
        }
        let mut relabelled = tampered.clone();
        relabelled.digest = result_digest(3, &kind(), &relabelled.result);
        let known = Some(LeaseInfo {
            known_nodes: Some(401),
            ..lease(ReplicaState::InProgress)
        });
        let instant = Some(LeaseInfo {
            issued_ms: NOW,
            ..lease(ReplicaState::InProgress)
        });
        let cases = [
            (open(), tampered, ErrorCode::DigestMismatch, false),
            (open(), relabelled, ErrorCode::InvalidResult, false),
            (known, honest(), ErrorCode::CheckFailed, true),
        ];
        for (lease, r, want, check) in cases {
            let v = verdict(lease, r);
            assert_eq!(code(&v), Some(want));
            let Verdict::Refuse(Settlement::Refuse { failed_check, .. }, _) = v else {
                panic!("{want} not refused");
            };
            assert_eq!(failed_check, check, "{want}");
        }
        // 400 nodes in 0 ms is faster than 100 nodes/s: stored (a cache hit is no evidence),
        // marked for the coordinator's check.
        let v = judge(WORKER, instant, honest(), "test 1", NOW, 100);
        let Verdict::Store(Settlement::Store { submission, .. }) = v else {
            panic!("an implausibly fast result is refused");
        };
        assert!(submission.implausible);
        let v = judge(WORKER, open(), honest(), "test 1", NOW, 100);
        assert!(
            matches!(v, Verdict::Store(Settlement::Store { submission, .. }) if !submission.implausible)
        );
    }

    #[test]
    fn a_plan_reports_rejections_refusals_and_the_stores_outcomes_in_order() {
        let open = || Some(lease(ReplicaState::InProgress));
        let mut tampered = honest();
        tampered.digest[0] ^= 1;
        let plan = Plan::of([
            verdict(open(), honest()),
            verdict(None, honest()),
            verdict(open(), tampered),
            verdict(open(), honest()),
        ]);
        assert_eq!(plan.settlements.len(), 3, "the rejection writes nothing");
        let out = plan.finish(vec![Ok(()), Ok(()), Err(StoreError::LeaseExpired(11))]);
        let codes: Vec<_> = out
            .iter()
            .map(|o| o.as_ref().err().map(Refusal::code))
            .collect();
        assert_eq!(
            codes,
            [
                None,
                Some(ErrorCode::UnknownLease),
                Some(ErrorCode::DigestMismatch),
                Some(ErrorCode::LeaseExpired)
            ]
        );
    }
}
