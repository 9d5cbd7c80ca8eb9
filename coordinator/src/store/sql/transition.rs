//! The transitioner inside a transaction: replicas, check grading, expiry.

use super::Tx;
use super::at_work::{AT_WORK_MS, workers_at_work};
pub(super) use super::{bump_setting, integrity_in};
use crate::integrity::audit;
use crate::model::{Digest, ReplicaState, StoreError, StoreResult};
use crate::store::codes::{
    CHECK_AUDIT_REPLICA, CHECK_AUDIT_WANTED, CHECK_NONE, CHECK_OVER_BUDGET, CHECK_RESPLIT_WANTED,
    CHECK_UNAUDITED, CHECK_VERIFIED, CHECK_WANTED, CHECKED_NOT, DISPUTE_DECIDED,
    KIND_BUILTIN_ANALYSIS, KIND_PERFT, OUTCOME_PENDING, OUTCOME_VALID, REPLICA_IN_PROGRESS,
    REPLICA_RETURNED, TRUST_UNTRUSTED, WORKUNIT_FAILED, WORKUNIT_OPEN, WORKUNIT_VALID,
    check_standing, checked_code, digest_from, outcome_code, replica_code, replica_state,
    trust_code, trust_level, u64_to_db,
};
use crate::work::transitioner::{self, Anchor, QuorumPolicy, ReplicaView, Transition};
use std::collections::{BTreeMap, HashMap};

use crate::integrity::trust::{self, Integrity};
use crate::store::db::{Batch, Row, SqlType, Value, params};

/// The replicas of each of `workunits` (one statement), in id order; a workunit without any
/// has no entry.
pub(super) fn replicas_of(
    tx: Tx,
    workunits: &[u64],
) -> StoreResult<BTreeMap<u64, Vec<ReplicaView>>> {
    let mut b = Batch::new(tx.dialect());
    let results = b.rows_where_in("results", "workunit_id", workunits, "r");
    let mut out: BTreeMap<u64, Vec<ReplicaView>> = BTreeMap::new();
    for r in tx.query(
        &format!(
            "SELECT r.workunit_id, r.id, r.worker_id, r.state, r.digest, o.trusted FROM {results} JOIN workers o ON o.id = r.worker_id
             ORDER BY r.workunit_id, r.id"
        ),
        &b.params(),
    )? {
        out.entry(r.u64(0)?).or_default().push(ReplicaView {
            id: r.u64(1)?,
            worker_id: r.u64(2)?,
            state: replica_state(r.i64(3)?),
            digest: digest_from(r.opt_blob(4)?),
            trusted: trust_level(r.i64(5)?).is_trusted(),
            operator: trust_level(r.i64(5)?) == crate::model::TrustLevel::Operator,
        });
    }
    Ok(out)
}

/// Grades the returned results of a workunit the coordinator checked against its own digest:
/// a match is a passed secret check (trust grows, by at most one check per
/// [`Integrity::trust_check_spacing_ms`]: [`trust::counts_towards_trust`]), a mismatch a failed
/// one (trust is lost at once; evidence for quarantine). Returns the workers that failed.
pub(super) fn grade_checks(
    tx: Tx,
    workunit_id: u64,
    verified: &Digest,
    now_ms: i64,
) -> StoreResult<Vec<u64>> {
    let integrity = integrity_in(tx)?;
    let rows = tx.query(
        &format!("SELECT id, worker_id, digest FROM results WHERE workunit_id = ?1 AND state = {REPLICA_RETURNED} AND checked = {CHECKED_NOT} ORDER BY id"),
        params![u64_to_db(workunit_id)],
    )?;
    let mut failed = Vec::new();
    for r in rows {
        let (id, worker) = (r.i64(0)?, r.i64(1)?);
        let good = digest_from(r.opt_blob(2)?).is_some_and(|d| d == *verified);
        tx.exec(
            "UPDATE results SET checked = ?2 WHERE id = ?1",
            params![id, checked_code(good)],
        )?;
        if good {
            let row = tx.query_one(
                "UPDATE workers SET checks_passed = checks_passed + 1 WHERE id = ?1 RETURNING trusted, trust_checks, trust_check_ms",
                params![worker],
            )?;
            let level = trust_level(row.i64(0)?);
            let mut counted = row.u64(1)?;
            if trust::counts_towards_trust(row.opt_i64(2)?, now_ms, &integrity) {
                counted += 1;
                tx.exec(
                    "UPDATE workers SET trust_checks = ?2, trust_check_ms = ?3 WHERE id = ?1",
                    params![worker, u64_to_db(counted), now_ms],
                )?;
            }
            let after = trust::after_passed_check(level, counted, &integrity);
            if after != level {
                tx.exec(
                    "UPDATE workers SET trusted = ?2 WHERE id = ?1",
                    params![worker, trust_code(after)],
                )?;
            }
        } else {
            fail_check(tx, worker as u64)?;
            failed.push(worker as u64);
        }
    }
    Ok(failed)
}

/// Records a failed check against a worker: its trust is gone at once.
pub(super) fn fail_check(tx: Tx, worker_id: u64) -> StoreResult<()> {
    tx.exec(
        &format!("UPDATE workers SET checks_failed = checks_failed + 1, trusted = {TRUST_UNTRUSTED} WHERE id = ?1"),
        params![u64_to_db(worker_id)],
    )?;
    Ok(())
}

/// The workers that failed a check in a transition, in the order they failed: the quarantine
/// rule is applied to each by the caller ([`super::cascade`]), which sits above both the
/// transitioner and the quarantine (a quarantine runs the transitioner again).
pub(super) type Failed = Vec<u64>;

/// Runs the transitioner on one workunit and writes its verdict: [`retransition_many`] of one.
pub(super) fn retransition(tx: Tx, workunit_id: u64, now_ms: i64) -> StoreResult<Failed> {
    retransition_many(tx, &[workunit_id], now_ms)
}

/// What the transitioner decided for a batch of workunits, to be written a statement per kind
/// of change.
#[derive(Default)]
struct Verdicts {
    /// Still open: (workunit, replicas needed, trusted workers only).
    pending: Vec<Vec<Value>>,
    /// Asking for a coordinator check.
    want_check: Vec<u64>,
    /// Contested where the coordinator will not count them: settled by a dispute.
    want_dispute: Vec<u64>,
    /// Contested at the cap where the coordinator will not count them: held open for a
    /// dispute, failed only where no dispute can open.
    dispute_or_fail: Vec<u64>,
    /// Failed (too many results without a quorum).
    failed: Vec<u64>,
    /// Validated now: (workunit, canonical result, canonical digest).
    valid: Vec<Vec<Value>>,
    /// Validated now and picked for a recount one ply deeper.
    resplit: Vec<u64>,
    /// Validated now and picked for an audit by the coordinator.
    audit: Vec<u64>,
    /// Validated now and picked for an audit by one more hidden replica (reopened for it).
    audit_replica: Vec<u64>,
    /// Returned results to grade: (result, outcome 1 = agrees, 2 = disagrees).
    grades: Vec<(u64, i64)>,
}

/// A batch's workunits locked and decided by [`decide_many`], not written yet.
pub(super) struct Decided {
    verdicts: Verdicts,
    /// Workers that failed a check graded on the way.
    evidence: Vec<u64>,
}

impl Decided {
    /// Takes out the grades of the results `mine` names (result → outcome, 1 = agrees,
    /// 2 = disagrees), for the caller to write with those results; [`write_decided`] writes the
    /// rest.
    pub(super) fn take_grades(&mut self, mine: impl Fn(u64) -> bool) -> HashMap<u64, i64> {
        let (taken, rest) = std::mem::take(&mut self.verdicts.grades)
            .into_iter()
            .partition(|(id, _)| mine(*id));
        self.verdicts.grades = rest;
        taken.into_iter().collect()
    }
}

/// What the caller of [`decide_many`] knows of the workunits' replicas.
pub(super) enum Known<'a> {
    /// Nothing: they are read.
    Nothing,
    /// All of them (see [`retransition_known`]).
    All(BTreeMap<u64, Vec<ReplicaView>>),
    /// They are read, and these open leases (lease → digest) are taken as returned with those
    /// digests: the caller stores them after the decision, each with its grade
    /// ([`Decided::take_grades`]), so that no row is written twice in the transaction.
    Returning(&'a HashMap<u64, Digest>),
}

/// Runs the transitioner on each of `workunits` and writes the verdicts (and the verdict on
/// each returned result, with the workers' vote counts) in the same transaction. A perft
/// workunit needs an anchored quorum ([`transitioner::transition_anchored`]); an unanchored or
/// contested one asks for a coordinator check, and a checked one grades its results as checks.
///
/// The decisions are made per workunit, by the pure functions; the reads and writes are a few
/// statements for the whole batch ([`Batch`]), so a batch of results costs about what one does.
///
/// On PostgreSQL the workunits' rows are locked first, in id order, so two coordinators
/// transitioning one workunit take turns (and never deadlock on a pair), and the second sees
/// what the first decided: a workunit is never validated twice.
pub(super) fn retransition_many(tx: Tx, workunits: &[u64], now_ms: i64) -> StoreResult<Failed> {
    retransition_known(tx, workunits, None, now_ms)
}

/// [`retransition_many`] with the replicas of each workunit as the caller knows them, so they
/// are not read again. Only for a caller that has held the workunits' row locks since it read
/// their replicas, and that records in `known` every replica it added since: every other change
/// to a replica is transitioned in its own transaction, which waits for those locks, so none
/// can have happened in between. The assignment is such a caller (its leases are the only
/// change). Workunits with a coordinator's own digest have their checks graded first, which
/// may change the replicas' workers' trust: their replicas are read again all the same.
pub(super) fn retransition_known(
    tx: Tx,
    workunits: &[u64],
    known: Option<BTreeMap<u64, Vec<ReplicaView>>>,
    now_ms: i64,
) -> StoreResult<Failed> {
    let known = known.map_or(Known::Nothing, Known::All);
    match decide_many(tx, workunits, known, now_ms)? {
        Some(decided) => write_decided(tx, decided, now_ms),
        // Only with Known::Returning, which is not passed here.
        None => Err(StoreError::Db("the transitioner declined a batch".into())),
    }
}

/// Locks `workunits` (in id order) and runs the transitioner on each: the first half of
/// [`retransition_many`]. With [`Known::Returning`], `None` if a workunit has a coordinator's
/// own digest: its checks are graded from the stored results, so the caller stores its results
/// first and runs [`retransition_many`] instead (nothing is written here then).
pub(super) fn decide_many(
    tx: Tx,
    workunits: &[u64],
    known: Known,
    now_ms: i64,
) -> StoreResult<Option<Decided>> {
    let mut ids = workunits.to_vec();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(Some(Decided {
            verdicts: Verdicts::default(),
            evidence: Vec::new(),
        }));
    }
    let mut b = Batch::new(tx.dialect());
    let in_ids = b.in_ids(&ids);
    let rows = tx.query(
        &format!(
            "SELECT id, state, quorum, max_results, canonical_digest, kind, known_nodes, verified_digest, check_state,
                needed, trusted_only, audit_replicas
             FROM workunits WHERE id {in_ids} ORDER BY id{}",
            tx.dialect().for_update()
        ),
        &b.params(),
    )?;
    if rows.len() != ids.len() {
        let found: Vec<u64> = rows.iter().map(|r| r.u64(0)).collect::<StoreResult<_>>()?;
        let missing = ids.iter().find(|id| !found.contains(id)).copied();
        return Err(StoreError::UnknownWorkunit(missing.unwrap_or(ids[0])));
    }
    let checked = rows.iter().any(|r| matches!(r.opt_blob(7), Ok(Some(_))));
    if checked && matches!(known, Known::Returning(_)) {
        return Ok(None);
    }
    // Checks are graded first (trust may grow), then the replicas are read.
    let mut evidence = Vec::new();
    for r in &rows {
        if let Some(v) = digest_from(r.opt_blob(7)?) {
            evidence.extend(grade_checks(tx, r.u64(0)?, &v, now_ms)?);
        }
    }
    let mut reps = match known {
        Known::All(known) if !checked => {
            // The tests run unoptimised: there, every such call checks the caller's claim.
            if cfg!(debug_assertions) && known != replicas_of(tx, &ids)? {
                return Err(StoreError::Db(
                    "the replicas known to the caller and those stored disagree".into(),
                ));
            }
            known
        }
        Known::Returning(returning) => {
            let mut reps = replicas_of(tx, &ids)?;
            for r in reps.values_mut().flatten() {
                if let Some(digest) = returning.get(&r.id) {
                    if r.state != ReplicaState::InProgress {
                        return Err(StoreError::Db(format!("lease {} is not open", r.id)));
                    }
                    r.state = ReplicaState::Returned;
                    r.digest = Some(*digest);
                }
            }
            reps
        }
        Known::All(_) | Known::Nothing => replicas_of(tx, &ids)?,
    };
    let mut integrity = None;
    let mut at_work = None;
    let mut v = Verdicts::default();
    for row in &rows {
        let id = row.u64(0)?;
        let reps = reps.remove(&id).unwrap_or_default();
        decide(
            tx,
            row,
            &reps,
            (&mut integrity, &mut at_work),
            now_ms,
            &mut v,
        )?;
    }
    Ok(Some(Decided {
        verdicts: v,
        evidence,
    }))
}

/// Writes what [`decide_many`] decided: the second half of [`retransition_many`].
pub(super) fn write_decided(tx: Tx, decided: Decided, now_ms: i64) -> StoreResult<Failed> {
    let mut failed = write_verdicts(tx, decided.verdicts, now_ms)?;
    // After the grading, so the quarantine sees these workunits settled.
    failed.extend(decided.evidence);
    Ok(failed)
}

/// The transitioner's decision on one workunit (a row of [`retransition_many`]'s query) added
/// to `v`.
fn decide(
    tx: Tx,
    row: &Row,
    reps: &[ReplicaView],
    (integrity, at_work): (&mut Option<Integrity>, &mut Option<u64>),
    now_ms: i64,
    v: &mut Verdicts,
) -> StoreResult<()> {
    let id = row.u64(0)?;
    // An audit replica ([`crate::integrity::audit::AuditPath::Replica`]) is one more result that must agree.
    let audit_replicas = row.i64(11)?;
    let (state, quorum, max_results) = (
        row.i64(1)?,
        row.i64(2)? + audit_replicas,
        row.i64(3)? + audit_replicas,
    );
    let canonical = row.opt_blob(4)?;
    let (kind, known) = (row.i64(5)?, row.opt_i64(6)?);
    let verified = digest_from(row.opt_blob(7)?);
    let check_state = row.i64(8)?;
    let canonical = match state {
        WORKUNIT_OPEN => {
            let policy = QuorumPolicy {
                quorum: quorum as u32,
                max_results: max_results as u32,
            };
            let anchor = Anchor {
                required: kind == KIND_PERFT,
                verified,
                known_total: known.is_some(),
            };
            let digests: std::collections::BTreeSet<Digest> = reps
                .iter()
                .filter(|r| r.state == ReplicaState::Returned)
                .filter_map(|r| r.digest)
                .collect();
            match transitioner::transition_anchored(policy, &anchor, reps) {
                t @ (Transition::Pending { needed } | Transition::NeedsTrust { needed }) => {
                    let trusted_only = matches!(t, Transition::NeedsTrust { .. });
                    // A row rewritten with its own values is a new row version all the same
                    // (index entries, a counter trigger's rows): most first results of a
                    // quorum change nothing here.
                    if (row.i64(9)?, row.i64(10)? != 0) != (i64::from(needed), trusted_only) {
                        v.pending.push(vec![
                            Value::I64(u64_to_db(id)),
                            Value::I64(needed.into()),
                            Value::I64(trusted_only.into()),
                        ]);
                    }
                    // Contested or agreed without an anchor: the coordinator looks itself (a
                    // contested built-in analysis too: its search is deterministic).
                    // An agreement nothing anchors may wait for its workers' trust instead
                    // (crate::integrity::anchoring).
                    let checkable = anchor.required || kind == KIND_BUILTIN_ANALYSIS;
                    if checkable && verified.is_none() && check_state == CHECK_NONE {
                        let contested = digests.len() > 1;
                        if contested
                            || (trusted_only
                                && super::unanchored::checked_at_once(
                                    tx, reps, integrity, at_work, now_ms,
                                )?)
                        {
                            v.want_check.push(id);
                        }
                    }
                    // Contested where no count of the coordinator's is coming (over its
                    // budget, or audited by a replica): bisection decides who is wrong.
                    if anchor.required
                        && verified.is_none()
                        && digests.len() > 1
                        && matches!(
                            check_state,
                            CHECK_OVER_BUDGET | CHECK_AUDIT_REPLICA | CHECK_UNAUDITED
                        )
                    {
                        v.want_dispute.push(id);
                    }
                    return Ok(());
                }
                Transition::Failed => {
                    // A contested perft value is decided by proof, never given up at the cap
                    // while the coordinator's count or a dispute can settle it: a value
                    // reopened two against two while its only dispute waited on a worker
                    // quarantined for something else failed for good (CI at 27d236d).
                    if anchor.required && verified.is_none() && digests.len() > 1 {
                        match check_state {
                            CHECK_NONE | CHECK_WANTED => {
                                if check_state == CHECK_NONE {
                                    v.want_check.push(id);
                                }
                                v.pending.push(vec![
                                    Value::I64(u64_to_db(id)),
                                    Value::I64(0),
                                    Value::I64(0),
                                ]);
                                return Ok(());
                            }
                            CHECK_OVER_BUDGET | CHECK_AUDIT_REPLICA | CHECK_UNAUDITED => {
                                v.dispute_or_fail.push(id);
                                return Ok(());
                            }
                            _ => {}
                        }
                    }
                    v.failed.push(id);
                    return Ok(());
                }
                Transition::Valid { canonical } => {
                    let winner = reps
                        .iter()
                        .find(|r| r.state == ReplicaState::Returned && r.digest == Some(canonical))
                        .ok_or_else(|| StoreError::Db("quorum without a result".into()))?;
                    v.valid.push(vec![
                        Value::I64(u64_to_db(id)),
                        Value::I64(u64_to_db(winner.id)),
                        Value::Blob(canonical.to_vec()),
                    ]);
                    // Audited, or cross-checked one ply deeper (crate::integrity::audit), once: a value
                    // reopened after its audit is not drawn again.
                    if matches!(check_state, CHECK_NONE | CHECK_VERIFIED) {
                        if integrity.is_none() {
                            *integrity = Some(integrity_in(tx)?);
                        }
                        let agreeing = reps.iter().filter(|r| {
                            r.state == ReplicaState::Returned && r.digest == Some(canonical)
                        });
                        let (mut operator, mut trusted) = (false, false);
                        for r in agreeing {
                            operator |= r.operator;
                            trusted |= r.trusted;
                        }
                        let basis =
                            audit::AuditBasis::of(verified == Some(canonical), operator, trusted);
                        let draw = rand::random::<u64>() % 1_000_000;
                        let resplittable = anchor.required && known.is_none();
                        let integrity = integrity.as_ref().expect("just read");
                        match audit::pick(basis, resplittable, draw, integrity) {
                            audit::AuditPick::Resplit => v.resplit.push(id),
                            audit::AuditPick::Audit => {
                                let agreeing = reps
                                    .iter()
                                    .filter(|r| {
                                        r.state == ReplicaState::Returned
                                            && r.digest == Some(canonical)
                                    })
                                    .count() as u64;
                                if at_work.is_none() {
                                    *at_work = Some(workers_at_work(tx, now_ms)?);
                                }
                                // Another worker than the agreeing ones can take a replica.
                                let crowd = at_work.expect("just read") > agreeing;
                                let draw = rand::random::<u64>() % 1_000_000;
                                match audit::route(crowd, draw, integrity) {
                                    audit::AuditRoute::Coordinator => v.audit.push(id),
                                    audit::AuditRoute::Replica => v.audit_replica.push(id),
                                }
                            }
                            audit::AuditPick::None => {}
                        }
                    }
                    canonical
                }
            }
        }
        WORKUNIT_VALID => digest_from(canonical)
            .ok_or_else(|| StoreError::Db("valid workunit without digest".into()))?,
        _ => return Ok(()),
    };
    // A valid perft value that a later result contradicts (a spare-capacity re-verification):
    // a dispute decides which is wrong.
    if state == WORKUNIT_VALID
        && kind == KIND_PERFT
        && reps
            .iter()
            .any(|r| r.state == ReplicaState::Returned && r.digest.is_some_and(|d| d != canonical))
    {
        v.want_dispute.push(id);
    }
    // Grade every returned result not graded yet (including late ones after validation). A
    // lost vote is recorded (history, status page) but is no evidence against the worker.
    for r in reps.iter().filter(|r| r.state == ReplicaState::Returned) {
        let Some(d) = r.digest else { continue };
        let good = transitioner::agrees(&canonical, &d);
        v.grades.push((r.id, outcome_code(good)));
    }
    Ok(())
}

/// Writes a batch's verdicts: the workunits first, then the grades (whose triggers read the
/// workunits' values), then the vote counts.
fn write_verdicts(tx: Tx, v: Verdicts, now_ms: i64) -> StoreResult<Failed> {
    use SqlType::{BigInt, Bytes};
    if !v.pending.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let rows = b.rows(&[BigInt, BigInt, BigInt], v.pending);
        tx.exec(
            &format!(
                "WITH v(id, needed, trusted_only) AS ({rows})
                 UPDATE workunits SET needed = v.needed, trusted_only = v.trusted_only FROM v WHERE workunits.id = v.id"
            ),
            &b.params(),
        )?;
    }
    if !v.want_check.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let in_ids = b.in_ids(&v.want_check);
        tx.exec(
            &format!("UPDATE workunits SET check_state = {CHECK_WANTED} WHERE id {in_ids} AND check_state = {CHECK_NONE}"),
            &b.params(),
        )?;
    }
    for &wu in &v.want_dispute {
        super::bisection::open(tx, wu, now_ms)?;
    }
    let mut failed_now = v.failed;
    for wu in v.dispute_or_fail {
        if super::bisection::open(tx, wu, now_ms)? {
            tx.exec(
                "UPDATE workunits SET needed = 0, trusted_only = 0 WHERE id = ?1",
                params![u64_to_db(wu)],
            )?;
        } else {
            failed_now.push(wu);
        }
    }
    if !failed_now.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let now = b.param(now_ms);
        let in_ids = b.in_ids(&failed_now);
        tx.exec(
            &format!(
                "UPDATE workunits SET state = {WORKUNIT_FAILED}, needed = 0, trusted_only = 0, completed_ms = {now} WHERE id {in_ids}"
            ),
            &b.params(),
        )?;
    }
    let validated: Vec<u64> = v
        .valid
        .iter()
        .filter_map(|row| match row.first() {
            Some(Value::I64(id)) => Some(*id as u64),
            _ => None,
        })
        .collect();
    if !v.valid.is_empty() {
        let n = v.valid.len() as u64;
        let mut b = Batch::new(tx.dialect());
        let now = b.param(now_ms);
        let rows = b.rows(&[BigInt, BigInt, Bytes], v.valid);
        let changed = tx.exec(
            &format!(
                "WITH v(id, result_id, digest) AS ({rows})
                 UPDATE workunits SET state = {WORKUNIT_VALID}, needed = 0, trusted_only = 0, reverify = 0, completed_ms = {now},
                   canonical_result_id = v.result_id, canonical_digest = v.digest,
                   nodes = (SELECT r.nodes FROM results r WHERE r.id = v.result_id)
                 FROM v WHERE workunits.id = v.id AND workunits.state = {WORKUNIT_OPEN}"
            ),
            &b.params(),
        )?;
        if changed != n {
            return Err(StoreError::Db(format!(
                "{} of {n} workunits validated twice",
                n - changed
            )));
        }
    }
    for (ids, state) in [
        (&v.resplit, CHECK_RESPLIT_WANTED),
        (&v.audit, CHECK_AUDIT_WANTED),
    ] {
        if !ids.is_empty() {
            let mut b = Batch::new(tx.dialect());
            let in_ids = b.in_ids(ids);
            let state = b.param(state);
            tx.exec(
                &format!("UPDATE workunits SET check_state = {state} WHERE id {in_ids}"),
                &b.params(),
            )?;
        }
    }
    if !v.grades.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let grades = v
            .grades
            .into_iter()
            .map(|(id, outcome)| vec![Value::I64(u64_to_db(id)), Value::I64(outcome)])
            .collect();
        let rows = b.rows(&[BigInt, BigInt], grades);
        for r in tx.query(
            &format!(
                "WITH v(id, outcome) AS ({rows})
                 UPDATE results SET outcome = v.outcome FROM v WHERE results.id = v.id AND results.outcome = {OUTCOME_PENDING}
                 RETURNING results.worker_id, results.outcome, COALESCE(results.nodes, 0)"
            ),
            &b.params(),
        )? {
            tx.count_vote(r.u64(0)?, r.i64(1)? == OUTCOME_VALID, r.u64(2)?)?;
        }
    }
    // Audits by the crowd: reopened for one more hidden replica, once graded.
    let mut failed = Failed::new();
    if !v.audit_replica.is_empty() {
        bump_setting(tx, "audit_replicas", v.audit_replica.len() as u64)?;
    }
    for &wu in &v.audit_replica {
        super::reopen::reopen_for_audit(tx, u64_to_db(wu))?;
        failed.extend(retransition(tx, wu, now_ms)?);
    }
    // Last: it may reopen workunits validated above, once their grades are written.
    if validated.is_empty() {
        return Ok(failed);
    }
    failed.extend(check_split_totals(tx, &validated, now_ms)?);
    Ok(failed)
}

/// Values waiting for an audit replica that nobody at work can take any more (the workers that
/// could have left): their audit goes to the coordinator instead (which records them
/// `unaudited` where it cannot compute them), so that a campaign whose crowd left completes.
pub(super) fn release_stranded_audits(tx: Tx, now_ms: i64) -> StoreResult<Failed> {
    let stranded = tx.query(
        &format!(
            "SELECT u.id FROM workunits u WHERE u.state = {WORKUNIT_OPEN} AND u.check_state = {CHECK_AUDIT_REPLICA}
             AND NOT EXISTS (SELECT 1 FROM results r WHERE r.workunit_id = u.id AND r.state = {REPLICA_IN_PROGRESS})
             AND NOT EXISTS (SELECT 1 FROM disputes d WHERE d.workunit_id = u.id AND d.state != {DISPUTE_DECIDED})
             AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.last_seen_ms >= ?1 AND w.quarantined_ms IS NULL AND w.banned = 0
                 AND NOT EXISTS (SELECT 1 FROM results r2 WHERE r2.workunit_id = u.id AND r2.worker_id = w.id))
             ORDER BY u.id LIMIT 256"
        ),
        params![now_ms.saturating_sub(AT_WORK_MS)],
    )?;
    let mut failed = Failed::new();
    for r in stranded {
        let wu = r.u64(0)?;
        tx.exec(
            &format!("UPDATE workunits SET audit_replicas = 0, check_state = {CHECK_AUDIT_WANTED} WHERE id = ?1"),
            params![u64_to_db(wu)],
        )?;
        failed.extend(retransition(tx, wu, now_ms)?);
    }
    Ok(failed)
}

/// The known totals check split campaigns: once every workunit of a start position is valid,
/// Σ multiplicity × value must equal the start's published perft (`crate::work::known`, depths 1–9).
/// A mismatch means a wrong value among them that nothing caught yet: every sub-unit that
/// nothing of the coordinator's will prove ([`audit::recounted_on_missed_total`]) is reopened
/// for one more hidden replica ([`super::reopen::reopen_for_audit`]), so the liars' values are
/// recounted by other workers; one whose check comes back over budget is recounted then
/// ([`super::cascade::recount_if_total_missed`]); a mismatch that survives that is left to the
/// export's check (`ok: false`). `validated`: workunits of the starts to look at.
pub(super) fn check_split_totals(tx: Tx, validated: &[u64], now_ms: i64) -> StoreResult<Failed> {
    let mut failed = Failed::new();
    let mut b = Batch::new(tx.dialect());
    let in_ids = b.in_ids(validated);
    let origins = tx.query(
        &format!(
            "SELECT DISTINCT w.campaign_id, w.origin_sp, c.depth FROM workunits w JOIN campaigns c ON c.id = w.campaign_id
             WHERE w.id {in_ids} AND w.origin_sp IS NOT NULL"
        ),
        &b.params(),
    )?;
    for o in &origins {
        let (campaign, sp, depth) = (o.i64(0)?, o.i64(1)?, o.i64(2)?);
        let Some(known) = crate::work::known::perft(sp as u16, depth as u32) else {
            continue;
        };
        let units = tx.query(
            "SELECT id, state, nodes, multiplicity, check_state, audit_replicas FROM workunits
             WHERE campaign_id = ?1 AND origin_sp = ?2",
            params![campaign, sp],
        )?;
        let mut sum: u128 = 0;
        let mut whole = true;
        for u in &units {
            whole &= u.i64(1)? == WORKUNIT_VALID;
            sum += u128::from(u.opt_i64(2)?.map_or(0, |n| n as u64)) * u128::from(u.i64(3)? as u64);
        }
        if !whole || sum == u128::from(known) {
            continue;
        }
        tracing::warn!(
            campaign, sp, depth, sum = %sum, known,
            "a split start position sums to other than its published total: its sub-units are recounted"
        );
        for u in &units {
            let (id, check_state, audited) = (u.i64(0)?, u.i64(4)?, u.i64(5)?);
            if audit::recounted_on_missed_total(check_standing(check_state), audited != 0) {
                super::reopen::reopen_for_audit(tx, id)?;
                failed.extend(retransition(tx, id as u64, now_ms)?);
            }
        }
    }
    Ok(failed)
}

/// Expires the leases past their deadline, each with the transitioner; returns how many. A
/// lease another coordinator expired a moment ago is not counted twice.
/// How long a worker's per-minute throughput is kept: longer than the pages' window
/// (`net::api::pages::live::WINDOW_MS`, 10 minutes).
const WORKER_MINUTES_KEPT_MS: i64 = 60 * 60_000;

pub(super) fn expire(tx: Tx, now_ms: i64) -> StoreResult<(u64, Failed)> {
    let mut failed = Failed::new();
    super::bisection::expire(tx, now_ms)?;
    // The per-minute throughput (migration 28) older than any window a page reads.
    tx.exec(
        "DELETE FROM worker_minutes WHERE minute < ?1",
        params![(now_ms - WORKER_MINUTES_KEPT_MS) / 60_000],
    )?;
    let ids = tx.query(
        &format!("SELECT id, workunit_id FROM results WHERE state = {REPLICA_IN_PROGRESS} AND deadline_ms < ?1 ORDER BY workunit_id, id"),
        params![now_ms],
    )?;
    let mut n = 0;
    for r in &ids {
        let changed = tx.exec(
            &format!(
                "UPDATE results SET state = ?2 WHERE id = ?1 AND state = {REPLICA_IN_PROGRESS}"
            ),
            params![r.i64(0)?, replica_code(ReplicaState::Expired)],
        )?;
        if changed == 1 {
            failed.extend(retransition(tx, r.u64(1)?, now_ms)?);
            n += 1;
        }
    }
    Ok((n, failed))
}
