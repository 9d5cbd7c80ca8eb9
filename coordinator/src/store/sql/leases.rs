//! Assignment, results, refusals and expiry of leases.

use c960_common::wire::{Capabilities, WorkResult};

use super::Tx;
use super::transition::{bump_setting, expire, fail_check, integrity_in, replicas, retransition};
use crate::scheduler::{self, CampaignSlot, ReplicaState};
use crate::store::codes::{
    KIND_COLUMN_COUNT, KIND_COLUMNS, KindColumns, accepted_kinds, campaign_status, db_to_u64,
    kind_of, replica_code, replica_state, trust_level, u64_to_db,
};
use crate::store::db::{Backend, Row, params};
use crate::store::{Lease, LeaseInfo, Settlement, StoreError, StoreResult, Submission};
use crate::trust;

/// The stored kinds a worker with these capabilities accepts, as an SQL list (integers only, so
/// formatting it into a statement is safe).
fn accepted_codes(c: &Capabilities) -> String {
    accepted_kinds(c)
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Loads a lease (locking its row on PostgreSQL, so a concurrent expiry or answer waits) and
/// checks it is open and held by `worker_id`.
fn open_lease_of(tx: Tx, worker_id: u64, lease_id: u64, now_ms: i64) -> StoreResult<(u64, i64)> {
    let r = tx
        .query_opt(
            &format!(
                "SELECT workunit_id, worker_id, state, deadline_ms FROM results WHERE id = ?1{}",
                tx.dialect().for_update()
            ),
            params![u64_to_db(lease_id)],
        )?
        .ok_or(StoreError::UnknownLease(lease_id))?;
    let (wu, holder, state, deadline) = (r.u64(0)?, r.u64(1)?, r.i64(2)?, r.i64(3)?);
    if holder != worker_id {
        return Err(StoreError::LeaseNotYours(lease_id));
    }
    let state = replica_state(state);
    if state == ReplicaState::Expired
        || (state == ReplicaState::InProgress && scheduler::is_expired(deadline, now_ms))
    {
        return Err(StoreError::LeaseExpired(lease_id));
    }
    if state != ReplicaState::InProgress {
        return Err(StoreError::LeaseClosed(lease_id, state.name()));
    }
    Ok((wu, deadline))
}

/// Stores a verified result of an open lease of `worker_id` and runs the transitioner.
fn store_result_in(
    tx: Tx,
    worker_id: u64,
    lease_id: u64,
    s: &Submission,
    now_ms: i64,
) -> StoreResult<()> {
    let json = |v: Result<String, serde_json::Error>| v.map_err(|e| StoreError::Db(e.to_string()));
    let (divide, payload) = match &s.result {
        WorkResult::Perft(r) => (Some(json(serde_json::to_string(&r.divide))?), None),
        WorkResult::Analysis(r) => (None, Some(json(serde_json::to_string(r))?)),
        WorkResult::SelfPlay(r) => (None, Some(json(serde_json::to_string(r))?)),
    };
    let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
    tx.exec(
        "UPDATE results SET state = 1, returned_ms = ?2, digest = ?3, nodes = ?4, divide = ?5, elapsed_ms = ?6, engine = ?7, payload = ?8
         WHERE id = ?1",
        params![
            u64_to_db(lease_id),
            now_ms,
            s.digest,
            u64_to_db(s.result.nodes()),
            divide,
            u64_to_db(s.elapsed_ms),
            s.engine,
            payload
        ],
    )?;
    pick_secret_check(tx, worker_id, wu)?;
    retransition(tx, wu, now_ms)
}

/// Picks the workunit for a secret check at the rate for the submitter's trust (untrusted
/// workers are checked far more often). Only perft workunits without a public answer are
/// picked: a public answer is checked on receipt anyway, and must not earn trust.
fn pick_secret_check(tx: Tx, worker_id: u64, workunit_id: u64) -> StoreResult<()> {
    let level = tx
        .query_one(
            "SELECT trusted FROM workers WHERE id = ?1",
            params![u64_to_db(worker_id)],
        )?
        .i64(0)?;
    let integrity = integrity_in(tx)?;
    let draw = rand::random::<u64>() % 1_000_000;
    if trust::picks_check(trust_level(level), draw, &integrity) {
        tx.exec(
            "UPDATE workunits SET check_state = 1 WHERE id = ?1 AND check_state = 0 AND kind IN (0, 1) AND known_nodes IS NULL",
            params![u64_to_db(workunit_id)],
        )?;
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
    super::quarantine::check(tx, worker_id, now_ms)
}

/// Leases `worker_id` holds open: issued, not answered, deadline not passed.
fn open_leases_in(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
    tx.query_one(
        "SELECT COUNT(*) FROM results WHERE worker_id = ?1 AND state = 0 AND deadline_ms >= ?2",
        params![u64_to_db(worker_id), now_ms],
    )?
    .u64(0)
}

/// Up to `limit` open leases `worker_id` holds on workunits of the accepted kinds, as leases
/// again (same ids and deadlines).
fn own_open_leases(
    tx: Tx,
    worker_id: u64,
    codes: &str,
    now_ms: i64,
    limit: u64,
) -> StoreResult<Vec<Lease>> {
    // `codes` holds integers from accepted_codes only.
    tx.query(
        &format!(
            "SELECT r.id, w.id, {KIND_COLUMNS}, r.deadline_ms
             FROM results r JOIN workunits w ON w.id = r.workunit_id
             WHERE r.worker_id = ?1 AND r.state = 0 AND r.deadline_ms >= ?2 AND w.kind IN ({codes})
             ORDER BY r.id LIMIT ?3"
        ),
        params![u64_to_db(worker_id), now_ms, limit as i64],
    )?
    .iter()
    .map(|r| {
        Ok(Lease {
            lease_id: r.u64(0)?,
            workunit_id: r.u64(1)?,
            kind: workunit_kind(r, 2)?,
            deadline_ms: r.i64(2 + KIND_COLUMN_COUNT)?,
        })
    })
    .collect()
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

/// A lease with its workunit's kind.
fn lease_in(tx: Tx, lease_id: u64) -> StoreResult<Option<LeaseInfo>> {
    tx.query_opt(
        &format!(
            "SELECT r.id, r.workunit_id, r.worker_id, r.state, r.deadline_ms, {KIND_COLUMNS},
                r.issued_ms, w.known_nodes
         FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE r.id = ?1"
        ),
        params![u64_to_db(lease_id)],
    )?
    .map(|r| {
        Ok(LeaseInfo {
            id: r.u64(0)?,
            workunit_id: r.u64(1)?,
            worker_id: r.u64(2)?,
            state: replica_state(r.i64(3)?),
            deadline_ms: r.i64(4)?,
            kind: workunit_kind(&r, 5)?,
            issued_ms: r.i64(5 + KIND_COLUMN_COUNT)?,
            known_nodes: r.opt_i64(6 + KIND_COLUMN_COUNT)?.map(|n| n as u64),
        })
    })
    .transpose()
}

#[allow(clippy::too_many_arguments)]
pub(super) fn assign_from(
    s: &impl Backend,
    worker_id: u64,
    accepts: &Capabilities,
    now_ms: i64,
    lease_ms: i64,
    max_units: u32,
    lease_cap: u64,
    block: Option<&str>,
) -> StoreResult<Vec<Lease>> {
    let codes = accepted_codes(accepts);
    if codes.is_empty() || max_units == 0 {
        return Ok(Vec::new());
    }
    s.with_tx(&mut |tx| super::deferring(tx, |tx| {
        let now_ms = tx.now_ms(now_ms)?;
        expire(tx, now_ms)?;
        // Standing inside the transaction: a quarantine committed a moment ago is seen here,
        // so no lease goes to a worker that is being quarantined. On PostgreSQL the worker's
        // row is locked, so two coordinators serving one worker take turns and its lease cap
        // holds across them.
        let r = tx
            .query_opt(
                &format!(
                    "SELECT banned != 0, quarantined_ms IS NOT NULL, trusted, checks_passed, reg_block, enrolment_token, created_ms FROM workers WHERE id = ?1{}",
                    tx.dialect().for_update()
                ),
                params![u64_to_db(worker_id)],
            )?
            .ok_or(StoreError::UnknownWorker(worker_id))?;
        let (banned, quarantined, level, passed) = (r.bool(0)?, r.bool(1)?, r.i64(2)?, r.u64(3)?);
        let reg_block = r.opt_text(4)?;
        let (token, registered) = (r.opt_i64(5)?, r.i64(6)?);
        if banned || quarantined {
            return Err(StoreError::NotInGoodStanding { worker: worker_id, banned });
        }
        tx.exec(
            "UPDATE workers SET last_seen_ms = ?2, last_block = COALESCE(?3, last_block) WHERE id = ?1",
            params![u64_to_db(worker_id), now_ms, block],
        )?;
        let integrity = integrity_in(tx)?;
        let level = trust_level(level);
        let mut want = u64::from(max_units);
        // The worker's own open leases first: it asks again, so it lost them (a crash).
        let mut leases = own_open_leases(tx, worker_id, &codes, now_ms, want)?;
        want -= leases.len() as u64;
        let cap = trust::lease_cap(level, passed, lease_cap, &integrity);
        let open = open_leases_in(tx, worker_id, now_ms)?;
        if cap > 0 {
            if open >= cap && leases.is_empty() {
                return Err(StoreError::LeaseLimit { worker: worker_id, open, cap });
            }
            want = want.min(cap.saturating_sub(open));
        }
        if let Some(b) = block.filter(|_| integrity.block_lease_cap > 0) {
            let in_block = tx
                .query_one(
                    "SELECT COUNT(*) FROM results r JOIN workers o ON o.id = r.worker_id
                     WHERE o.last_block = ?1 AND r.state = 0 AND r.deadline_ms >= ?2",
                    params![b, now_ms],
                )?
                .u64(0)?;
            want = want.min(integrity.block_lease_cap.saturating_sub(in_block));
        }
        if want == 0 {
            return Ok(leases);
        }
        // The NOT EXISTS mirror scheduler::may_receive so the index does the filtering;
        // may_receive is checked again below on the loaded replicas. Each workunit appears
        // once, so a batch never holds two replicas of one workunit. Replicas reserved for
        // trusted workers are skipped by untrusted ones; and so are workunits a worker of the
        // same party holds or answered (trust::same_party: either of this worker's address
        // blocks when separation is on, its enrolment token, its registration burst).
        // `codes` holds integers from accepted_codes only, so formatting it in is safe. On
        // PostgreSQL the workunits picked are locked and those another coordinator is handing
        // out at this moment are skipped (SKIP LOCKED), so coordinators never wait on each
        // other here and never hand out one replica twice.
        let (b1, b2) = if integrity.separate_address_blocks {
            let now = block.map(str::to_string);
            (reg_block.clone().or(now.clone()), now.or(reg_block.clone()))
        } else {
            (None, None)
        };
        let burst_block = reg_block.as_deref().filter(|_| integrity.registration_burst_ms > 0);
        // Campaigns in serving order (priority, pause: scheduler::serving_order), each walked
        // on the per-campaign partial index of its ready workunits until the batch is full.
        let slots = tx
            .query("SELECT id, priority, status FROM campaigns", params![])?
            .iter()
            .map(|r| {
                Ok(CampaignSlot {
                    id: r.u64(0)?,
                    priority: r.i64(1)?,
                    status: campaign_status(r.i64(2)?),
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let sql = format!(
            "SELECT w.id, {KIND_COLUMNS} FROM workunits w{}
             WHERE w.campaign_id = ?10 AND w.state = 0 AND w.needed > 0 AND w.kind IN ({codes}) AND (w.trusted_only = 0 OR ?3)
             AND NOT EXISTS (
                SELECT 1 FROM results r WHERE r.workunit_id = w.id AND r.worker_id = ?1 AND r.state IN (0, 1, 4))
             AND ((CAST(?4 AS TEXT) IS NULL AND CAST(?6 AS BIGINT) IS NULL AND CAST(?7 AS TEXT) IS NULL) OR NOT EXISTS (
                SELECT 1 FROM results r JOIN workers o ON o.id = r.worker_id
                WHERE r.workunit_id = w.id AND r.state IN (0, 1) AND o.id != ?1
                  AND (o.reg_block IN (?4, ?5) OR o.last_block IN (?4, ?5) OR o.enrolment_token = ?6
                       OR (o.reg_block = ?7 AND ABS(o.created_ms - ?8) <= ?9))))
             ORDER BY w.id LIMIT ?2{}",
            tx.dialect().ready_index(),
            tx.dialect().skip_locked("w")
        );
        let mut found = Vec::new();
        for campaign in scheduler::serving_order(&slots) {
            let left = want - found.len() as u64;
            if left == 0 {
                break;
            }
            found.extend(tx.query(
                &sql,
                params![u64_to_db(worker_id), left as i64, level.is_trusted(), b1, b2, token,
                    burst_block, registered, u64_to_db(integrity.registration_burst_ms), u64_to_db(campaign)],
            )?);
        }
        let deadline = scheduler::lease_deadline(now_ms, lease_ms);
        for r in found {
            let wu = r.u64(0)?;
            if !scheduler::may_receive(worker_id, &replicas(tx, wu)?) {
                return Err(StoreError::Db("scheduler and query disagree".into()));
            }
            if cfg!(debug_assertions) {
                let me = trust::Party { reg_block: reg_block.as_deref(), last_block: block, token: token.map(db_to_u64), registered_ms: registered };
                for h in tx.query(
                    "SELECT o.reg_block, o.last_block, o.enrolment_token, o.created_ms FROM results r JOIN workers o ON o.id = r.worker_id
                     WHERE r.workunit_id = ?1 AND r.state IN (0, 1) AND o.id != ?2",
                    params![u64_to_db(wu), u64_to_db(worker_id)],
                )? {
                    let (rb, lb) = (h.opt_text(0)?, h.opt_text(1)?);
                    let other = trust::Party { reg_block: rb.as_deref(), last_block: lb.as_deref(), token: h.opt_i64(2)?.map(db_to_u64), registered_ms: h.i64(3)? };
                    if trust::same_party(&me, &other, &integrity) {
                        return Err(StoreError::Db("trust::same_party and the assign query disagree".into()));
                    }
                }
            }
            let lease_id = tx
                .query_one(
                    "INSERT INTO results (workunit_id, worker_id, state, issued_ms, deadline_ms) VALUES (?1, ?2, 0, ?3, ?4) RETURNING id",
                    params![u64_to_db(wu), u64_to_db(worker_id), now_ms, deadline],
                )?
                .u64(0)?;
            retransition(tx, wu, now_ms)?;
            leases.push(Lease { lease_id, workunit_id: wu, kind: workunit_kind(&r, 1)?, deadline_ms: deadline });
        }
        Ok(leases)
    }))
}

pub(super) fn leases(s: &impl Backend, lease_ids: &[u64]) -> StoreResult<Vec<Option<LeaseInfo>>> {
    s.with_conn(&mut |tx| lease_ids.iter().map(|&id| lease_in(tx, id)).collect())
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
            for s in settlements {
                let outcome = match s {
                    Settlement::Store {
                        lease_id,
                        submission,
                    } => store_result_in(tx, worker_id, *lease_id, submission, now_ms)
                        .inspect(|()| stored += 1),
                    Settlement::Refuse {
                        lease_id,
                        reason,
                        failed_check,
                    } => refuse_in(tx, worker_id, *lease_id, reason, *failed_check, now_ms),
                };
                match outcome {
                    // Refusals are per settlement; a database failure aborts the transaction,
                    // so nothing of the batch is half-written.
                    Err(e) if e.is_internal() => return Err(e),
                    other => outcomes.push(other),
                }
            }
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
        tx.exec(
            "UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1",
            params![u64_to_db(worker_id), now_ms],
        )?;
        retransition(tx, wu, now_ms)
    })
}

pub(super) fn abandon(
    s: &impl Backend,
    worker_id: u64,
    lease_id: u64,
    now_ms: i64,
) -> StoreResult<()> {
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
            "SELECT id, workunit_id FROM results WHERE state = 0 ORDER BY workunit_id, id",
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
