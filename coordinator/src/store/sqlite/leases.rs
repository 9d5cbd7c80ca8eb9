//! Assignment, results, refusals and expiry of leases.

use c960_common::wire::{Capabilities, WorkResult};
use rusqlite::{Connection, OptionalExtension, params};

use super::transition::{bump_setting, expire, fail_check, integrity_in, replicas, retransition};
use super::{SqliteStore, exec};
use crate::scheduler::{self, CampaignSlot, ReplicaState};
use crate::store::codes::{
    accepted_kinds, campaign_status, db_to_u64, kind_of, replica_code, replica_state, trust_level,
    u64_to_db,
};
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

/// A workunit as the assign query reads it: id, sp, fen, depth, kind, hash MiB.
type WorkunitRow = (i64, Option<i64>, String, i64, i64, Option<i64>);

/// Loads a lease and checks it is open and held by `worker_id`.
fn open_lease_of(
    tx: &Connection,
    worker_id: u64,
    lease_id: u64,
    now_ms: i64,
) -> StoreResult<(u64, i64)> {
    let (wu, holder, state, deadline): (i64, i64, i64, i64) = tx
        .prepare_cached(
            "SELECT workunit_id, worker_id, state, deadline_ms FROM results WHERE id = ?1",
        )?
        .query_row([u64_to_db(lease_id)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .optional()?
        .ok_or(StoreError::UnknownLease(lease_id))?;
    if db_to_u64(holder) != worker_id {
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
    Ok((db_to_u64(wu), deadline))
}

/// Stores a verified result of an open lease of `worker_id` and runs the transitioner.
fn store_result_in(
    tx: &Connection,
    worker_id: u64,
    lease_id: u64,
    s: &Submission,
    now_ms: i64,
) -> StoreResult<()> {
    let json = |v: Result<String, serde_json::Error>| v.map_err(|e| StoreError::Db(e.to_string()));
    let (divide, payload) = match &s.result {
        WorkResult::Perft(r) => (Some(json(serde_json::to_string(&r.divide))?), None),
        WorkResult::Analysis(r) => (None, Some(json(serde_json::to_string(r))?)),
    };
    let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
    exec(
        tx,
        "UPDATE results SET state = 1, returned_ms = ?2, digest = ?3, nodes = ?4, divide = ?5, elapsed_ms = ?6, engine = ?7, payload = ?8
         WHERE id = ?1",
        params![
            u64_to_db(lease_id),
            now_ms,
            s.digest.to_vec(),
            u64_to_db(s.result.nodes()),
            divide,
            u64_to_db(s.elapsed_ms),
            s.engine,
            payload
        ],
    )?;
    bump_setting(tx, "results_returned", 1)?;
    pick_secret_check(tx, worker_id, wu)?;
    retransition(tx, wu, now_ms)
}

/// Picks the workunit for a secret check at the rate for the submitter's trust (untrusted
/// workers are checked far more often). Only perft workunits without a public answer are
/// picked: a public answer is checked on receipt anyway, and must not earn trust.
fn pick_secret_check(tx: &Connection, worker_id: u64, workunit_id: u64) -> StoreResult<()> {
    let level: i64 = tx
        .prepare_cached("SELECT trusted FROM workers WHERE id = ?1")?
        .query_row([u64_to_db(worker_id)], |r| r.get(0))?;
    let integrity = integrity_in(tx)?;
    let draw = rand::random::<u64>() % 1_000_000;
    if trust::picks_check(trust_level(level), draw, &integrity) {
        exec(
            tx,
            "UPDATE workunits SET check_state = 1 WHERE id = ?1 AND check_state = 0 AND kind = 0 AND known_nodes IS NULL",
            [u64_to_db(workunit_id)],
        )?;
    }
    Ok(())
}

/// Closes an open lease of `worker_id` whose result was refused, with a strike (or, for a
/// failed check, with the evidence that quarantines it).
fn refuse_in(
    tx: &Connection,
    worker_id: u64,
    lease_id: u64,
    reason: &str,
    failed_check: bool,
    now_ms: i64,
) -> StoreResult<()> {
    let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
    exec(
        tx,
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
        exec(
            tx,
            "UPDATE workers SET refused = refused + 1 WHERE id = ?1",
            [u64_to_db(worker_id)],
        )?;
    }
    retransition(tx, wu, now_ms)?;
    super::quarantine::check(tx, worker_id, now_ms)
}

/// Leases `worker_id` holds open: issued, not answered, deadline not passed.
fn open_leases_in(conn: &Connection, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
    let n: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM results WHERE worker_id = ?1 AND state = 0 AND deadline_ms >= ?2",
        )?
        .query_row(params![u64_to_db(worker_id), now_ms], |r| r.get(0))?;
    Ok(n as u64)
}

/// Up to `limit` open leases `worker_id` holds on workunits of the accepted kinds, as leases
/// again (same ids and deadlines).
fn own_open_leases(
    tx: &Connection,
    worker_id: u64,
    codes: &str,
    now_ms: i64,
    limit: u64,
) -> StoreResult<Vec<Lease>> {
    // `codes` holds integers from accepted_codes only.
    let mut st = tx.prepare_cached(&format!(
        "SELECT r.id, w.id, w.sp, w.fen, w.depth, w.kind, w.hash_mib, r.deadline_ms
         FROM results r JOIN workunits w ON w.id = r.workunit_id
         WHERE r.worker_id = ?1 AND r.state = 0 AND r.deadline_ms >= ?2 AND w.kind IN ({codes})
         ORDER BY r.id LIMIT ?3"
    ))?;
    let rows = st.query_map(params![u64_to_db(worker_id), now_ms, limit as i64], |r| {
        Ok(Lease {
            lease_id: db_to_u64(r.get(0)?),
            workunit_id: db_to_u64(r.get(1)?),
            kind: kind_of(r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?),
            deadline_ms: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// A lease with its workunit's kind.
fn lease_in(conn: &Connection, lease_id: u64) -> StoreResult<Option<LeaseInfo>> {
    Ok(conn
        .prepare_cached(
            "SELECT r.id, r.workunit_id, r.worker_id, r.state, r.deadline_ms, w.sp, w.fen, w.depth, w.kind, w.hash_mib,
                    r.issued_ms, w.known_nodes
             FROM results r JOIN workunits w ON w.id = r.workunit_id WHERE r.id = ?1",
        )?
        .query_row([u64_to_db(lease_id)], |r| {
            Ok(LeaseInfo {
                id: db_to_u64(r.get(0)?),
                workunit_id: db_to_u64(r.get(1)?),
                worker_id: db_to_u64(r.get(2)?),
                state: replica_state(r.get(3)?),
                deadline_ms: r.get(4)?,
                kind: kind_of(r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
                issued_ms: r.get(10)?,
                known_nodes: r.get::<_, Option<i64>>(11)?.map(db_to_u64),
            })
        })
        .optional()?)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn assign_from(
    s: &SqliteStore,
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
    s.with_tx(|tx| {
        expire(tx, now_ms)?;
        // Standing inside the transaction: a quarantine committed a moment ago is seen here,
        // so no lease goes to a worker that is being quarantined.
        let (banned, quarantined, level, passed, reg_block): (bool, bool, i64, i64, Option<String>) = tx
            .prepare_cached(
                "SELECT banned != 0, quarantined_ms IS NOT NULL, trusted, checks_passed, reg_block FROM workers WHERE id = ?1",
            )?
            .query_row([u64_to_db(worker_id)], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .optional()?
            .ok_or(StoreError::UnknownWorker(worker_id))?;
        if banned || quarantined {
            return Err(StoreError::NotInGoodStanding { worker: worker_id, banned });
        }
        exec(tx, "UPDATE workers SET last_seen_ms = ?2, last_block = COALESCE(?3, last_block) WHERE id = ?1",
            params![u64_to_db(worker_id), now_ms, block])?;
        let integrity = integrity_in(tx)?;
        let level = trust_level(level);
        let mut want = u64::from(max_units);
        // The worker's own open leases first: it asks again, so it lost them (a crash).
        let mut leases = own_open_leases(tx, worker_id, &codes, now_ms, want)?;
        want -= leases.len() as u64;
        let cap = trust::lease_cap(level, db_to_u64(passed), lease_cap, &integrity);
        let open = open_leases_in(tx, worker_id, now_ms)?;
        if cap > 0 {
            if open >= cap && leases.is_empty() {
                return Err(StoreError::LeaseLimit { worker: worker_id, open, cap });
            }
            want = want.min(cap.saturating_sub(open));
        }
        if let Some(b) = block.filter(|_| integrity.block_lease_cap > 0) {
            let in_block: i64 = tx
                .prepare_cached(
                    "SELECT COUNT(*) FROM results r JOIN workers o ON o.id = r.worker_id
                     WHERE o.last_block = ?1 AND r.state = 0 AND r.deadline_ms >= ?2",
                )?
                .query_row(params![b, now_ms], |r| r.get(0))?;
            want = want.min(integrity.block_lease_cap.saturating_sub(db_to_u64(in_block)));
        }
        if want == 0 {
            return Ok(leases);
        }
        // The NOT EXISTS mirror scheduler::may_receive so the index does the filtering;
        // may_receive is checked again below on the loaded replicas. Each workunit appears
        // once, so a batch never holds two replicas of one workunit. Replicas reserved for
        // trusted workers are skipped by untrusted ones; with address-block separation on,
        // so are workunits a worker of either of this worker's blocks holds or answered.
        // `codes` holds integers from accepted_codes only, so formatting it in is safe.
        let (b1, b2) = if integrity.separate_address_blocks {
            let now = block.map(str::to_string);
            (reg_block.clone().or(now.clone()), now.or(reg_block))
        } else {
            (None, None)
        };
        // Campaigns in serving order (priority, pause: scheduler::serving_order), each
        // walked on the per-campaign partial index of its ready workunits until the batch is
        // full (named: without statistics SQLite would pick workunits_campaign, which also
        // walks the campaign's workunits that have every replica out).
        let slots: Vec<CampaignSlot> = tx
            .prepare_cached("SELECT id, priority, status FROM campaigns")?
            .query_map([], |r| {
                Ok(CampaignSlot { id: db_to_u64(r.get(0)?), priority: r.get(1)?, status: campaign_status(r.get(2)?) })
            })?
            .collect::<Result<_, _>>()?;
        let mut st = tx.prepare_cached(
            &format!("SELECT w.id, w.sp, w.fen, w.depth, w.kind, w.hash_mib FROM workunits w INDEXED BY workunits_ready_by_campaign
             WHERE w.campaign_id = ?6 AND w.state = 0 AND w.needed > 0 AND w.kind IN ({codes}) AND (w.trusted_only = 0 OR ?3)
             AND NOT EXISTS (
                SELECT 1 FROM results r WHERE r.workunit_id = w.id AND r.worker_id = ?1 AND r.state IN (0, 1, 4))
             AND (?4 IS NULL OR NOT EXISTS (
                SELECT 1 FROM results r JOIN workers o ON o.id = r.worker_id
                WHERE r.workunit_id = w.id AND r.state IN (0, 1) AND o.id != ?1
                  AND (o.reg_block IN (?4, ?5) OR o.last_block IN (?4, ?5))))
             ORDER BY w.id LIMIT ?2"),
        )?;
        let mut found: Vec<WorkunitRow> = Vec::new();
        for campaign in scheduler::serving_order(&slots) {
            let left = want - found.len() as u64;
            if left == 0 {
                break;
            }
            let rows = st.query_map(
                params![u64_to_db(worker_id), left as i64, level.is_trusted(), b1, b2, u64_to_db(campaign)],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
            )?;
            for row in rows {
                found.push(row?);
            }
        }
        drop(st);
        let deadline = scheduler::lease_deadline(now_ms, lease_ms);
        for (wu, sp, fen, depth, kind, hash_mib) in found {
            if !scheduler::may_receive(worker_id, &replicas(tx, db_to_u64(wu))?) {
                return Err(StoreError::Db("scheduler and query disagree".into()));
            }
            exec(tx,
                "INSERT INTO results (workunit_id, worker_id, state, issued_ms, deadline_ms) VALUES (?1, ?2, 0, ?3, ?4)",
                params![wu, u64_to_db(worker_id), now_ms, deadline],
            )?;
            let lease_id = db_to_u64(tx.last_insert_rowid());
            retransition(tx, db_to_u64(wu), now_ms)?;
            leases.push(Lease { lease_id, workunit_id: db_to_u64(wu), kind: kind_of(sp, fen, depth, kind, hash_mib), deadline_ms: deadline });
        }
        Ok(leases)
    })
}

pub(super) fn leases(s: &SqliteStore, lease_ids: &[u64]) -> StoreResult<Vec<Option<LeaseInfo>>> {
    let conn = s.lock()?;
    lease_ids.iter().map(|&id| lease_in(&conn, id)).collect()
}

pub(super) fn settle(
    s: &SqliteStore,
    worker_id: u64,
    settlements: &[Settlement],
    now_ms: i64,
) -> StoreResult<Vec<StoreResult<()>>> {
    s.with_tx(|tx| {
        // Overdue leases are recorded as expired first, so refusing a late result is durable
        // and its replica is already on its way to another worker.
        expire(tx, now_ms)?;
        let mut outcomes = Vec::with_capacity(settlements.len());
        for s in settlements {
            let outcome = match s {
                Settlement::Store {
                    lease_id,
                    submission,
                } => store_result_in(tx, worker_id, *lease_id, submission, now_ms),
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
        exec(
            tx,
            "UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1",
            params![u64_to_db(worker_id), now_ms],
        )?;
        Ok(outcomes)
    })
}

pub(super) fn fail(
    s: &SqliteStore,
    worker_id: u64,
    lease_id: u64,
    reason: &str,
    now_ms: i64,
) -> StoreResult<()> {
    let reason: String = reason.chars().take(500).collect();
    s.with_tx(|tx| {
        let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
        exec(
            tx,
            "UPDATE results SET state = ?2, returned_ms = ?3, error = ?4 WHERE id = ?1",
            params![
                u64_to_db(lease_id),
                replica_code(ReplicaState::Error),
                now_ms,
                format!("engine failed: {reason}")
            ],
        )?;
        exec(
            tx,
            "UPDATE workers SET last_seen_ms = ?2 WHERE id = ?1",
            params![u64_to_db(worker_id), now_ms],
        )?;
        retransition(tx, wu, now_ms)
    })
}

pub(super) fn abandon(
    s: &SqliteStore,
    worker_id: u64,
    lease_id: u64,
    now_ms: i64,
) -> StoreResult<()> {
    s.with_tx(|tx| {
        let (wu, _) = open_lease_of(tx, worker_id, lease_id, now_ms)?;
        exec(
            tx,
            "UPDATE results SET state = ?2 WHERE id = ?1",
            params![u64_to_db(lease_id), replica_code(ReplicaState::Abandoned)],
        )?;
        retransition(tx, wu, now_ms)
    })
}

pub(super) fn expire_leases(s: &SqliteStore, now_ms: i64) -> StoreResult<u64> {
    s.with_tx(|tx| expire(tx, now_ms))
}

pub(super) fn release_all_leases(s: &SqliteStore, now_ms: i64) -> StoreResult<u64> {
    s.with_tx(|tx| {
        let ids: Vec<(i64, i64)> = {
            let mut st = tx.prepare("SELECT id, workunit_id FROM results WHERE state = 0")?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()?
        };
        for (id, wu) in &ids {
            exec(
                tx,
                "UPDATE results SET state = ?2 WHERE id = ?1",
                params![id, replica_code(ReplicaState::Abandoned)],
            )?;
            retransition(tx, db_to_u64(*wu), now_ms)?;
        }
        Ok(ids.len() as u64)
    })
}

pub(super) fn open_leases(s: &SqliteStore, worker_id: u64, now_ms: i64) -> StoreResult<u64> {
    let conn = s.lock()?;
    open_leases_in(&conn, worker_id, now_ms)
}
