//! Leases once handed out (handing out is `assign.rs`): results stored, refusals, failures,
//! renewals, expiry; and the lease counts and readings the other steps share.

use c960_common::wire::WorkResult;

use super::Tx;
use std::collections::HashMap;

use super::cascade::{self, expire, retransition, retransition_many, write_decided};
use super::transition::{Known, bump_setting, decide_many, fail_check, integrity_in};
use crate::integrity::{anchoring, trust};
use crate::model::disputes::challenge_of;
use crate::model::{
    Digest, LeaseInfo, ReplicaState, Settlement, StoreError, StoreResult, Submission,
};
use crate::store::codes::{
    CHECK_NONE, CHECK_WANTED, KIND_BUILTIN_ANALYSIS, KIND_COLUMN_COUNT, KIND_COLUMNS, KIND_PERFT,
    KindColumns, OUTCOME_PENDING, OUTCOME_VALID, REPLICA_IN_PROGRESS, REPLICA_RETURNED,
    TRUST_UNTRUSTED, kind_of, replica_code, replica_state, trust_level, u64_to_db,
};
use crate::store::db::{Backend, Batch, Row, SqlType, Value, params};
use crate::work::transitioner;

/// Loads a lease (locking its row on PostgreSQL, so a concurrent expiry or answer waits) and
/// checks it is open and held by `worker_id`.
fn open_lease_of(tx: Tx, worker_id: u64, lease_id: u64, now_ms: i64) -> StoreResult<(u64, i64)> {
    let r = tx
        .query_opt(
            &format!(
                "SELECT id, workunit_id, worker_id, state, deadline_ms FROM results WHERE id = ?1{}",
                tx.dialect().for_update()
            ),
            params![u64_to_db(lease_id)],
        )?
        .ok_or(StoreError::UnknownLease(lease_id))?;
    lease_open(&r, worker_id, now_ms)
}

/// Whether a lease row (`id, workunit_id, worker_id, state, deadline_ms`) is open and held by
/// `worker_id`: its workunit and deadline if so.
fn lease_open(r: &Row, worker_id: u64, now_ms: i64) -> StoreResult<(u64, i64)> {
    let lease_id = r.u64(0)?;
    let (wu, holder, state, deadline) = (r.u64(1)?, r.u64(2)?, r.i64(3)?, r.i64(4)?);
    if holder != worker_id {
        return Err(StoreError::LeaseNotYours(lease_id));
    }
    let state = replica_state(state);
    if state == ReplicaState::Expired
        || (state == ReplicaState::InProgress && transitioner::is_expired(deadline, now_ms))
    {
        return Err(StoreError::LeaseExpired(lease_id));
    }
    if state != ReplicaState::InProgress {
        return Err(StoreError::LeaseClosed(lease_id, state.name()));
    }
    Ok((wu, deadline))
}

/// Stores verified results of open leases of `worker_id` (distinct leases) and runs the
/// transitioner on their workunits: a few statements for the whole batch. Returns an outcome
/// per result, in order (a lease that is not open is refused; the rest are stored).
fn store_results_in(
    tx: Tx,
    worker_id: u64,
    batch: &[(u64, &Submission)],
    now_ms: i64,
) -> StoreResult<Vec<StoreResult<()>>> {
    use SqlType::{BigInt, Bytes, Text};
    let json = |v: Result<String, serde_json::Error>| v.map_err(|e| StoreError::Db(e.to_string()));
    let ids: Vec<u64> = batch.iter().map(|(id, _)| *id).collect();
    // Locked in id order (a concurrent expiry or answer waits).
    let mut b = Batch::new(tx.dialect());
    let in_ids = b.in_ids(&ids);
    let rows = tx.query(
        &format!(
            "SELECT id, workunit_id, worker_id, state, deadline_ms FROM results WHERE id {in_ids} ORDER BY id{}",
            tx.dialect().for_update()
        ),
        &b.params(),
    )?;
    let found: HashMap<u64, &Row> = rows
        .iter()
        .map(|r| Ok((r.u64(0)?, r)))
        .collect::<StoreResult<_>>()?;
    let mut outcomes = Vec::with_capacity(batch.len());
    let mut updates = Vec::new();
    let mut workunits = Vec::new();
    // The leases stored (with their digests), in the order of `updates`.
    let mut stored: Vec<(u64, Digest)> = Vec::new();
    for (lease_id, s) in batch {
        let open = found
            .get(lease_id)
            .ok_or(StoreError::UnknownLease(*lease_id))
            .and_then(|r| lease_open(r, worker_id, now_ms));
        let wu = match open {
            Ok((wu, _)) => wu,
            Err(e) => {
                outcomes.push(Err(e));
                continue;
            }
        };
        let (divide, payload) = match &s.result {
            WorkResult::Perft(r) => (Some(json(serde_json::to_string(&r.divide))?), None),
            WorkResult::Analysis(r) => (None, Some(json(serde_json::to_string(r))?)),
            WorkResult::SelfPlay(r) => (None, Some(json(serde_json::to_string(r))?)),
        };
        let text = |t: Option<String>| t.map_or(Value::Null, Value::Text);
        updates.push(vec![
            Value::I64(u64_to_db(*lease_id)),
            Value::Blob(s.digest.to_vec()),
            Value::I64(u64_to_db(s.result.nodes())),
            text(divide),
            Value::I64(u64_to_db(s.elapsed_ms)),
            Value::Text(s.engine.clone()),
            text(payload),
        ]);
        workunits.push(wu);
        stored.push((*lease_id, s.digest));
        outcomes.push(Ok(()));
    }
    if updates.is_empty() {
        return Ok(outcomes);
    }
    // Picked before the transitioner reads the workunits (it only marks them).
    pick_secret_checks(tx, worker_id, &workunits, now_ms)?;
    // An implausibly fast result (a cache hit, or made up) is checked by the coordinator.
    let fast: Vec<u64> = batch
        .iter()
        .filter(|(_, s)| s.implausible)
        .filter_map(|(id, _)| {
            stored
                .iter()
                .position(|(l, _)| l == id)
                .map(|i| workunits[i])
        })
        .collect();
    if !fast.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let in_ids = b.in_ids(&fast);
        tx.exec(
            &format!("UPDATE workunits SET check_state = {CHECK_WANTED} WHERE id {in_ids} AND check_state = {CHECK_NONE} AND kind = {KIND_PERFT}"),
            &b.params(),
        )?;
    }
    // The transitioner decides with these results taken as returned, before they are stored,
    // so each is written once, with its grade: PostgreSQL checks the foreign keys of a row
    // updated a second time in the transaction that wrote it (about 30 µs a row).
    let returning: HashMap<u64, Digest> = stored.iter().copied().collect();
    let mut decided = decide_many(tx, &workunits, Known::Returning(&returning), now_ms)?;
    let grades = decided
        .as_mut()
        .map(|d| d.take_grades(|id| returning.contains_key(&id)))
        .unwrap_or_default();
    for (row, (lease_id, _)) in updates.iter_mut().zip(&stored) {
        row.push(Value::I64(
            grades.get(lease_id).copied().unwrap_or(OUTCOME_PENDING),
        ));
    }
    let mut b = Batch::new(tx.dialect());
    let now = b.param(now_ms);
    let values = b.rows(
        &[BigInt, Bytes, BigInt, Text, BigInt, Text, Text, BigInt],
        updates,
    );
    // An open lease has no grade yet (outcome 0), so a grade set here is its first.
    for r in tx.query(
        &format!(
            "WITH v(id, digest, nodes, divide, elapsed_ms, engine, payload, outcome) AS ({values})
             UPDATE results SET state = {REPLICA_RETURNED}, returned_ms = {now}, digest = v.digest, nodes = v.nodes, divide = v.divide,
               elapsed_ms = v.elapsed_ms, engine = v.engine, payload = v.payload, outcome = v.outcome
             FROM v WHERE results.id = v.id
             RETURNING results.worker_id, results.outcome, COALESCE(results.nodes, 0)"
        ),
        &b.params(),
    )? {
        if r.i64(1)? != OUTCOME_PENDING {
            tx.count_vote(r.u64(0)?, r.i64(1)? == OUTCOME_VALID, r.u64(2)?)?;
        }
    }
    match decided {
        Some(decided) => write_decided(tx, decided, now_ms)?,
        None => retransition_many(tx, &workunits, now_ms)?,
    }
    Ok(outcomes)
}

/// Picks workunits for a secret check, each at the rate for the submitter's trust (untrusted
/// workers are checked far more often), and for an untrusted worker whose trust check is due
/// ([`anchoring::trust_check_due`]) one more. Only perft workunits without a public answer are
/// picked: a public answer is checked on receipt anyway, and must not earn trust.
fn pick_secret_checks(tx: Tx, worker_id: u64, workunits: &[u64], now_ms: i64) -> StoreResult<()> {
    let row = tx.query_one(
        "SELECT trusted, trust_check_asked_ms FROM workers WHERE id = ?1",
        params![u64_to_db(worker_id)],
    )?;
    let level = trust_level(row.i64(0)?);
    let integrity = integrity_in(tx)?;
    let mut picked: Vec<u64> = workunits
        .iter()
        .copied()
        .filter(|_| {
            let draw = rand::random::<u64>() % 1_000_000;
            trust::picks_check(level, draw, &integrity)
        })
        .collect();
    if picked.is_empty()
        && anchoring::trust_check_due(level.is_trusted(), row.opt_i64(1)?, now_ms, &integrity)
    {
        picked.extend(workunits.first());
    }
    if !picked.is_empty() {
        let mut b = Batch::new(tx.dialect());
        let in_ids = b.in_ids(&picked);
        tx.exec(
            &format!("UPDATE workunits SET check_state = {CHECK_WANTED} WHERE id {in_ids} AND check_state = {CHECK_NONE} AND kind IN ({KIND_PERFT}, {KIND_BUILTIN_ANALYSIS}) AND known_nodes IS NULL"),
            &b.params(),
        )?;
        // A check is coming that grades this worker (asked now, or by its partner before).
        let coming = || -> StoreResult<bool> {
            let mut b = Batch::new(tx.dialect());
            let in_ids = b.in_ids(&picked);
            Ok(tx
                .query_opt(
                    &format!("SELECT 1 FROM workunits WHERE id {in_ids} AND check_state = {CHECK_WANTED} LIMIT 1"),
                    &b.params(),
                )?
                .is_some())
        };
        if !level.is_trusted() && coming()? {
            tx.exec(
                "UPDATE workers SET trust_check_asked_ms = ?2 WHERE id = ?1",
                params![u64_to_db(worker_id), now_ms],
            )?;
        }
    }
    Ok(())
}

/// Closes an open lease of `worker_id` whose result was refused, with a strike (or, for a
/// failed check, with the evidence that quarantines it).
fn refuse_in(
    tx: Tx,
    worker_id: u64,
    lease_id: u64,
    reason: &str,
    failed_check: bool,
    now_ms: i64,
) -> StoreResult<()> {
    let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
    tx.exec(
        "UPDATE results SET state = ?2, returned_ms = ?3, error = ?4 WHERE id = ?1",
        params![
            u64_to_db(lease_id),
            replica_code(ReplicaState::Error),
            now_ms,
            reason
        ],
    )?;
    if failed_check {
        fail_check(tx, worker_id)?;
    } else {
        tx.exec(
            "UPDATE workers SET refused = refused + 1 WHERE id = ?1",
            params![u64_to_db(worker_id)],
        )?;
    }
    retransition(tx, wu, now_ms)?;
    cascade::check(tx, worker_id, now_ms)
}

/// Leases `worker_id` holds open: issued, not answered, deadline not passed.
pub(super) fn open_leases_in(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
    tx.query_one(
        &format!("SELECT COUNT(*) FROM results WHERE worker_id = ?1 AND state = {REPLICA_IN_PROGRESS} AND deadline_ms >= ?2"),
        params![u64_to_db(worker_id), now_ms],
    )?
    .u64(0)
}

/// What the open leases of `worker_id` weigh against its lease cap: by size where `by_size`
/// ([`crate::work::handout::weighs_by_size`]), else [`crate::work::handout::LEASE_WEIGHT`] each.
pub(super) fn open_lease_weight_in(
    tx: Tx,
    worker_id: u64,
    by_size: bool,
    now_ms: i64,
) -> StoreResult<u64> {
    use crate::work::handout::{LEASE_WEIGHT, lease_weight_sql};
    if !by_size {
        return Ok(open_leases_in(tx, worker_id, now_ms)?.saturating_mul(LEASE_WEIGHT));
    }
    let weight = lease_weight_sql(KIND_PERFT);
    tx.query_one(
        &format!(
            "SELECT COALESCE(SUM({weight}), 0) FROM results r JOIN workunits w ON w.id = r.workunit_id
             WHERE r.worker_id = ?1 AND r.state = {REPLICA_IN_PROGRESS} AND r.deadline_ms >= ?2"
        ),
        params![u64_to_db(worker_id), now_ms],
    )?
    .u64(0)
}

/// Open leases held by the workers whose last fetch came from `block` (counted, not weighed:
/// a block's cap bounds how many workunits sybils of one block can lock).
pub(super) fn open_leases_of_block(tx: Tx, block: &str, now_ms: i64) -> StoreResult<u64> {
    tx.query_one(
        &format!(
            "SELECT COUNT(*) FROM results r JOIN workers o ON o.id = r.worker_id
         WHERE o.last_block = ?1 AND r.state = {REPLICA_IN_PROGRESS} AND r.deadline_ms >= ?2"
        ),
        params![block, now_ms],
    )?
    .u64(0)
}

/// The kind of a workunit from the [`KIND_COLUMNS`] starting at `at`.
pub(super) fn workunit_kind(r: &Row, at: usize) -> StoreResult<c960_common::wire::WorkUnitKind> {
    Ok(kind_of(KindColumns {
        sp: r.opt_i64(at)?,
        fen: r.text(at + 1)?,
        depth: r.i64(at + 2)?,
        kind: r.i64(at + 3)?,
        hash_mib: r.opt_i64(at + 4)?,
        games: r.opt_i64(at + 5)?,
        move_nodes: r.opt_i64(at + 6)?,
        id: r.i64(at + 7)?,
    }))
}

/// Leases with their workunits' kinds, one statement for all of them (`None` for an id that
/// names no lease), in the order asked.
fn leases_in(tx: Tx, lease_ids: &[u64]) -> StoreResult<Vec<Option<LeaseInfo>>> {
    let challenge_ids: Vec<u64> = lease_ids
        .iter()
        .filter_map(|&id| challenge_of(id))
        .collect();
    let challenges = super::bisection::lease_infos(tx, &challenge_ids)?;
    let mut b = Batch::new(tx.dialect());
    let in_ids = b.in_ids(lease_ids);
    let mut found = HashMap::new();
    for r in tx.query(
        &format!(
            "SELECT r.id, r.workunit_id, r.worker_id, r.state, r.deadline_ms, {KIND_COLUMNS},
                r.issued_ms, w.known_nodes
         FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE r.id {in_ids}"
        ),
        &b.params(),
    )? {
        let info = LeaseInfo {
            id: r.u64(0)?,
            workunit_id: r.u64(1)?,
            worker_id: r.u64(2)?,
            state: replica_state(r.i64(3)?),
            deadline_ms: r.i64(4)?,
            kind: workunit_kind(&r, 5)?,
            issued_ms: r.i64(5 + KIND_COLUMN_COUNT)?,
            known_nodes: r.opt_i64(6 + KIND_COLUMN_COUNT)?.map(|n| n as u64),
        };
        found.insert(info.id, info);
    }
    Ok(lease_ids
        .iter()
        .map(|id| match challenge_of(*id) {
            Some(c) => challenges.get(&c).cloned(),
            None => found.get(id).cloned(),
        })
        .collect())
}

pub(super) fn leases(s: &impl Backend, lease_ids: &[u64]) -> StoreResult<Vec<Option<LeaseInfo>>> {
    s.with_conn(&mut |tx| leases_in(tx, lease_ids))
}

pub(super) fn settle(
    s: &impl Backend,
    worker_id: u64,
    settlements: &[Settlement],
    now_ms: i64,
) -> StoreResult<Vec<StoreResult<()>>> {
    s.with_tx(&mut |tx| {
        super::deferring(tx, |tx| {
            let now_ms = tx.now_ms(now_ms)?;
            // Overdue leases are recorded as expired first, so refusing a late result is durable
            // and its replica is already on its way to another worker.
            expire(tx, now_ms)?;
            let mut outcomes = Vec::with_capacity(settlements.len());
            let mut stored = 0;
            // Results are stored a run at a time (one batch of statements per run); a refusal,
            // or a lease named twice, ends the run, so everything happens in the order sent.
            let mut run: Vec<(u64, &Submission)> = Vec::new();
            let mut flush = |run: &mut Vec<(u64, &Submission)>,
                             outcomes: &mut Vec<StoreResult<()>>|
             -> StoreResult<()> {
                if run.is_empty() {
                    return Ok(());
                }
                for outcome in store_results_in(tx, worker_id, run, now_ms)? {
                    if outcome.is_ok() {
                        stored += 1;
                    }
                    outcomes.push(outcome);
                }
                run.clear();
                Ok(())
            };
            for s in settlements {
                // A challenge's answer goes to its dispute, in the order sent.
                if let Some(challenge) = challenge_of(s.lease_id()) {
                    flush(&mut run, &mut outcomes)?;
                    let result = match s {
                        Settlement::Store { submission, .. } => match &submission.result {
                            WorkResult::Perft(r) => Some(r),
                            _ => None,
                        },
                        Settlement::Refuse { .. } => None,
                    };
                    match super::bisection::answer(tx, worker_id, challenge, result, now_ms) {
                        Err(e) if e.is_internal() => return Err(e),
                        other => outcomes.push(other),
                    }
                    continue;
                }
                match s {
                    Settlement::Store {
                        lease_id,
                        submission,
                    } => {
                        if run.iter().any(|(id, _)| id == lease_id) {
                            flush(&mut run, &mut outcomes)?;
                        }
                        run.push((*lease_id, submission));
                    }
                    Settlement::Refuse {
                        lease_id,
                        reason,
                        failed_check,
                    } => {
                        flush(&mut run, &mut outcomes)?;
                        match refuse_in(tx, worker_id, *lease_id, reason, *failed_check, now_ms) {
                            // Refusals are per settlement; a database failure aborts the
                            // transaction, so nothing of the batch is half-written.
                            Err(e) if e.is_internal() => return Err(e),
                            other => outcomes.push(other),
                        }
                    }
                }
            }
            flush(&mut run, &mut outcomes)?;
            // The vote counts (and credit) of this batch's quorum partners, in worker order,
            // before the settings row below: a transaction holding that row never waits for a
            // worker row, so two settling transactions cannot wait on each other.
            tx.flush_deferred()?;
            tx.exec(
                "UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1",
                params![u64_to_db(worker_id), now_ms],
            )?;
            // One row for every coordinator: added to once per batch and last, so its lock is
            // held only while the transaction commits.
            if stored > 0 {
                bump_setting(tx, "results_returned", stored)?;
            }
            Ok(outcomes)
        })
    })
}

pub(super) fn fail(
    s: &impl Backend,
    worker_id: u64,
    lease_id: u64,
    reason: &str,
    now_ms: i64,
) -> StoreResult<()> {
    if challenge_of(lease_id).is_some() {
        // A challenge stays open until answered or past its deadline.
        return Ok(());
    }
    let reason: String = reason.chars().take(500).collect();
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
        tx.exec(
            "UPDATE results SET state = ?2, returned_ms = ?3, error = ?4 WHERE id = ?1",
            params![
                u64_to_db(lease_id),
                replica_code(ReplicaState::Error),
                now_ms,
                format!("engine failed: {reason}")
            ],
        )?;
        // Giving work back as a pattern costs earned trust (trust::gives_back_too_much).
        let w = tx.query_one(
            "UPDATE workers SET last_seen_ms = ?2, gave_back = gave_back + 1 WHERE id = ?1 RETURNING gave_back, valid, trusted",
            params![u64_to_db(worker_id), now_ms],
        )?;
        if trust_level(w.i64(2)?) == crate::model::TrustLevel::Earned
            && trust::gives_back_too_much(w.u64(0)?, w.u64(1)?)
        {
            // Earned again only from scratch: checks spread over time, as a new worker.
            tx.exec(
                &format!("UPDATE workers SET trusted = {TRUST_UNTRUSTED}, trust_checks = 0, trust_check_ms = NULL WHERE id = ?1"),
                params![u64_to_db(worker_id)],
            )?;
        }
        retransition(tx, wu, now_ms)
    })
}

pub(super) fn abandon(
    s: &impl Backend,
    worker_id: u64,
    lease_id: u64,
    now_ms: i64,
) -> StoreResult<()> {
    if challenge_of(lease_id).is_some() {
        // A challenge stays open until answered or past its deadline.
        return Ok(());
    }
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
        tx.exec(
            "UPDATE results SET state = ?2 WHERE id = ?1",
            params![u64_to_db(lease_id), replica_code(ReplicaState::Abandoned)],
        )?;
        retransition(tx, wu, now_ms)
    })
}

pub(super) fn renew_leases(
    s: &impl Backend,
    worker_id: u64,
    lease_ids: &[u64],
    now_ms: i64,
) -> StoreResult<Vec<u64>> {
    let mut ids = lease_ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let (challenges, ids): (Vec<u64>, Vec<u64>) =
        ids.into_iter().partition(|&id| challenge_of(id).is_some());
    let challenges: Vec<u64> = challenges.into_iter().filter_map(challenge_of).collect();
    if ids.is_empty() && challenges.is_empty() {
        return Ok(ids);
    }
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        // A heartbeat is a sign of life: the worker is at work (it may take audit replicas).
        tx.exec(
            "UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1 AND last_seen_ms < ?2",
            params![u64_to_db(worker_id), now_ms],
        )?;
        let held = super::bisection::renewable(tx, worker_id, &challenges, now_ms)?;
        if ids.is_empty() {
            return Ok(held);
        }
        let renewal = integrity_in(tx)?.lease_renewal_ms;
        let mut b = Batch::new(tx.dialect());
        let in_ids = b.in_ids(&ids);
        let w = b.param(u64_to_db(worker_id));
        // A lease still open in the table is renewed even if its deadline passed a moment ago:
        // nobody else holds its replica until the expiry marks it. Never past its whole life.
        let until = b.param(transitioner::renewal_deadline(now_ms, renewal, i64::MAX));
        let mut renewed = Vec::new();
        for r in tx.query(
            &format!(
                "UPDATE results SET deadline_ms = CASE WHEN hard_deadline_ms < {until} THEN hard_deadline_ms ELSE {until} END
                 WHERE id {in_ids} AND worker_id = {w} AND state = {REPLICA_IN_PROGRESS} AND hard_deadline_ms IS NOT NULL
                 RETURNING id, deadline_ms"
            ),
            &b.params(),
        )? {
            if !transitioner::is_expired(r.i64(1)?, now_ms) {
                renewed.push(r.u64(0)?);
            }
        }
        renewed.extend(held);
        renewed.sort_unstable();
        Ok(renewed)
    })
}

/// Gives the leases whose deadline passed since `since_ms` (while the database's disk was full:
/// [`crate::store::disk`]) one renewal window from `now_ms`: their workers could neither renew
/// them nor send their results, which they kept. Returns how many.
pub(in crate::store) fn extend_leases_lapsed_since(
    tx: Tx,
    since_ms: i64,
    now_ms: i64,
) -> StoreResult<u64> {
    let renewal = match integrity_in(tx)?.lease_renewal_ms {
        0 => crate::integrity::trust::Integrity::default().lease_renewal_ms,
        ms => ms,
    };
    let grace = transitioner::renewal_deadline(now_ms, renewal, i64::MAX);
    tx.exec(
        &format!(
            "UPDATE results SET deadline_ms = ?2
             WHERE state = {REPLICA_IN_PROGRESS} AND deadline_ms >= ?1 AND deadline_ms < ?2"
        ),
        params![since_ms, grace],
    )
}

pub(super) fn expire_leases(s: &impl Backend, now_ms: i64) -> StoreResult<u64> {
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        expire(tx, now_ms)
    })
}

pub(super) fn release_all_leases(s: &impl Backend, now_ms: i64) -> StoreResult<u64> {
    s.with_tx(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        let ids = tx.query(
            &format!("SELECT id, workunit_id FROM results WHERE state = {REPLICA_IN_PROGRESS} ORDER BY workunit_id, id"),
            params![],
        )?;
        for r in &ids {
            tx.exec(
                "UPDATE results SET state = ?2 WHERE id = ?1",
                params![r.i64(0)?, replica_code(ReplicaState::Abandoned)],
            )?;
            retransition(tx, r.u64(1)?, now_ms)?;
        }
        Ok(ids.len() as u64)
    })
}

pub(super) fn open_leases(s: &impl Backend, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
    s.with_conn(&mut |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        open_leases_in(tx, worker_id, now_ms)
    })
}
