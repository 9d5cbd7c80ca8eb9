//! Disputes inside a transaction: opened when a perft workunit's results disagree and the
//! coordinator will not count it, challenges handed to each side as leases and answered through
//! the worker session, and the referee's moves written ([`crate::integrity::referee`] decides
//! them; the checker thread plays them). A side proven wrong fails a check, exactly as a failed
//! audit ([`super::cascade::convict`]): its trust is gone, the quarantine rule runs, and
//! everything it validated is re-verified.

use std::collections::BTreeMap;

use c960_common::wire::{PerftResult, PositionSpec, WorkUnitKind};

use super::{Tx, bump_setting, integrity_in};
use crate::model::disputes::{Advance, Answer, CHALLENGE_BASE, DisputeCost, DisputeView};
use crate::model::{Lease, LeaseInfo, ReplicaState, StoreError, StoreResult};
use crate::store::codes::{
    CHALLENGE_ANSWERED, CHALLENGE_MISSED, CHALLENGE_OPEN, DISPUTE_CHALLENGED, DISPUTE_DECIDED,
    DISPUTE_DUE, REPLICA_RETURNED, u64_to_db,
};
use crate::store::db::{Backend, Batch, params};

fn perft_kind(fen: String, depth: i64) -> WorkUnitKind {
    WorkUnitKind::Perft {
        position: PositionSpec::Fen(fen),
        depth: depth as u32,
    }
}

/// Opens a dispute on workunit `wu` between the first results of its two largest groups of
/// agreeing returned results of workers in good standing (a quarantined worker's graded result
/// stays, but it was proven wrong already), unless one is open on it or this pair was disputed
/// already. Returns whether a dispute is open on it now.
pub(super) fn open(tx: Tx, wu: u64, now_ms: i64) -> StoreResult<bool> {
    let wu_db = u64_to_db(wu);
    if tx
        .query_opt(
            &format!(
                "SELECT id FROM disputes WHERE workunit_id = ?1 AND state != {DISPUTE_DECIDED}"
            ),
            params![wu_db],
        )?
        .is_some()
    {
        return Ok(true);
    }
    let rows = tx.query(
        &format!(
            "SELECT r.id, r.worker_id, r.digest, r.nodes, w.fen, w.depth FROM results r JOIN workunits w ON w.id = r.workunit_id
             JOIN workers o ON o.id = r.worker_id
             WHERE r.workunit_id = ?1 AND r.state = {REPLICA_RETURNED} AND r.digest IS NOT NULL AND o.quarantined_ms IS NULL
             ORDER BY r.id"
        ),
        params![wu_db],
    )?;
    // Groups of agreeing results: (size, first result, its worker, its count), by digest.
    let mut groups: BTreeMap<Vec<u8>, (u64, i64, i64, i64)> = BTreeMap::new();
    let (mut fen, mut depth) = (String::new(), 0);
    for r in &rows {
        let g = groups.entry(r.blob(2)?).or_insert((
            0,
            r.i64(0)?,
            r.i64(1)?,
            r.opt_i64(3)?.unwrap_or(0),
        ));
        g.0 += 1;
        (fen, depth) = (r.text(4)?, r.i64(5)?);
    }
    let mut sides: Vec<(u64, i64, i64, i64)> = groups.into_values().collect();
    sides.sort_by_key(|&(size, first, _, _)| (std::cmp::Reverse(size), first));
    let [a, b, ..] = sides[..] else {
        return Ok(false);
    };
    let seen = tx.query_opt(
        "SELECT id FROM disputes WHERE workunit_id = ?1 AND ((result_a = ?2 AND result_b = ?3) OR (result_a = ?3 AND result_b = ?2))",
        params![wu_db, a.1, b.1],
    )?;
    if seen.is_some() {
        return Ok(false);
    }
    tx.exec(
        "INSERT INTO disputes (workunit_id, result_a, result_b, worker_a, worker_b, fen, depth, claim_a, claim_b, opened_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![wu_db, a.1, b.1, a.2, b.2, fen, depth, a.3, b.3, now_ms],
    )?;
    bump_setting(tx, "disputes_opened", 1)?;
    Ok(true)
}

/// Closes the challenges past their deadline as missed, and those of quarantined workers (they
/// get no work, so they cannot answer); a dispute whose challenges are all closed is the
/// referee's turn again.
pub(super) fn expire(tx: Tx, now_ms: i64) -> StoreResult<()> {
    let closed = tx.query(
        &format!(
            "UPDATE challenges SET state = {CHALLENGE_MISSED} WHERE state = {CHALLENGE_OPEN}
             AND (deadline_ms < ?1 OR worker_id IN (SELECT id FROM workers WHERE quarantined_ms IS NOT NULL))
             RETURNING dispute_id"
        ),
        params![now_ms],
    )?;
    for r in closed {
        wake(tx, r.i64(0)?)?;
    }
    Ok(())
}

/// Makes a challenged dispute the referee's turn once none of its challenges is open.
fn wake(tx: Tx, dispute: i64) -> StoreResult<()> {
    tx.exec(
        &format!(
            "UPDATE disputes SET state = {DISPUTE_DUE} WHERE id = ?1 AND state = {DISPUTE_CHALLENGED}
             AND NOT EXISTS (SELECT 1 FROM challenges c WHERE c.dispute_id = ?1 AND c.state = {CHALLENGE_OPEN})"
        ),
        params![dispute],
    )?;
    Ok(())
}

fn divide_of(text: Option<String>) -> Answer {
    let divide = text
        .and_then(|t| serde_json::from_str::<Vec<(String, u64)>>(&t).ok())
        .unwrap_or_default();
    Answer::Divide(divide)
}

/// Up to `limit` disputes where the referee is to move, oldest first, with each side's answer
/// (the stored results' divides in the first round, the challenges' answers after).
pub(super) fn due(tx: Tx, limit: usize, now_ms: i64) -> StoreResult<Vec<DisputeView>> {
    expire(tx, now_ms)?;
    let rows = tx.query(
        &format!(
            "SELECT d.id, d.workunit_id, d.fen, d.depth, d.path, d.worker_a, d.worker_b, d.claim_a, d.claim_b, d.rounds,
                ra.divide, rb.divide
             FROM disputes d JOIN results ra ON ra.id = d.result_a JOIN results rb ON rb.id = d.result_b
             WHERE d.state = {DISPUTE_DUE} ORDER BY d.id LIMIT ?1"
        ),
        params![limit as i64],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let (id, rounds) = (r.i64(0)?, r.u64(9)?);
        let answers = if rounds == 0 {
            [divide_of(r.opt_text(10)?), divide_of(r.opt_text(11)?)]
        } else {
            let mut answers = [Answer::Waiting, Answer::Waiting];
            for c in tx.query(
                "SELECT side, state, divide FROM challenges WHERE dispute_id = ?1 ORDER BY id DESC LIMIT 2",
                params![id],
            )? {
                let side = (c.i64(0)? != 0) as usize;
                answers[side] = match c.i64(1)? {
                    CHALLENGE_ANSWERED => divide_of(c.opt_text(2)?),
                    CHALLENGE_MISSED => Answer::Missed,
                    _ => Answer::Waiting,
                };
            }
            answers
        };
        let path = r.text(4)?;
        out.push(DisputeView {
            id: id as u64,
            workunit_id: r.u64(1)?,
            fen: r.text(2)?,
            depth: r.u64(3)? as u32,
            path: path.split_whitespace().map(str::to_string).collect(),
            workers: [r.u64(5)?, r.u64(6)?],
            claims: [r.u64(7)?, r.u64(8)?],
            answers,
            rounds: rounds as u32,
        });
    }
    Ok(out)
}

/// Writes the referee's move on dispute `id`: challenges to both sides (each due within the
/// stored [`crate::integrity::trust::Integrity::challenge_ms`]), or the decision; for a
/// decision, its workunit and the workers proven wrong, who fail a check
/// ([`super::cascade::convict`]).
pub(super) fn advance(
    tx: Tx,
    id: u64,
    advance: &Advance,
    now_ms: i64,
) -> StoreResult<Option<(u64, Vec<u64>)>> {
    let id_db = u64_to_db(id);
    let row = tx
        .query_opt(
            &format!(
                "SELECT workunit_id, worker_a, worker_b, result_a, result_b FROM disputes WHERE id = ?1 AND state = {DISPUTE_DUE}"
            ),
            params![id_db],
        )?
        .ok_or_else(|| StoreError::Db(format!("dispute {id} is not the referee's to move")))?;
    let (wu, workers) = (row.u64(0)?, [row.i64(1)?, row.i64(2)?]);
    match advance {
        Advance::Challenge {
            mv,
            fen,
            depth,
            claims,
        } => {
            let deadline = now_ms.saturating_add(integrity_in(tx)?.challenge_ms as i64);
            tx.exec(
                &format!(
                    "UPDATE disputes SET state = {DISPUTE_CHALLENGED}, fen = ?2, depth = ?3, claim_a = ?4, claim_b = ?5,
                       path = CASE WHEN path = '' THEN ?6 ELSE path || ' ' || ?6 END, rounds = rounds + 1
                     WHERE id = ?1"
                ),
                params![
                    id_db,
                    fen,
                    i64::from(*depth),
                    u64_to_db(claims[0]),
                    u64_to_db(claims[1]),
                    mv
                ],
            )?;
            for side in 0..2 {
                tx.exec(
                    "INSERT INTO challenges (dispute_id, side, worker_id, fen, depth, claim, issued_ms, deadline_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        id_db,
                        side as i64,
                        workers[side],
                        fen,
                        i64::from(*depth),
                        u64_to_db(claims[side]),
                        now_ms,
                        deadline
                    ],
                )?;
            }
            bump_setting(tx, "dispute_challenges", 2)?;
            Ok(None)
        }
        Advance::Decided { losers, nodes } => {
            let named: Vec<String> = losers.iter().map(u64::to_string).collect();
            tx.exec(
                &format!(
                    "UPDATE disputes SET state = {DISPUTE_DECIDED}, losers = ?2, leaf_nodes = ?3, decided_ms = ?4 WHERE id = ?1"
                ),
                params![id_db, named.join(" "), u64_to_db(*nodes), now_ms],
            )?;
            bump_setting(tx, "disputes_decided", 1)?;
            bump_setting(tx, "dispute_nodes", *nodes)?;
            super::bump_check_nodes(tx, wu, *nodes)?;
            bump_setting(tx, "disputes_convicted", losers.len() as u64)?;
            for &loser in losers {
                tracing::warn!(
                    dispute = id,
                    workunit = wu,
                    worker = loser,
                    "a dispute proved a worker's count wrong: it fails a check"
                );
            }
            Ok(Some((wu, losers.clone())))
        }
    }
}

/// The open challenges of `worker_id` as leases (wire ids [`CHALLENGE_BASE`] + id), oldest
/// first. They are handed to it at every fetch until answered, over its lease caps: a side
/// that never gets its challenge cannot answer it.
pub(super) fn leases_for(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<Vec<Lease>> {
    tx.query(
        &format!(
            "SELECT id, fen, depth, deadline_ms FROM challenges WHERE worker_id = ?1 AND state = {CHALLENGE_OPEN} AND deadline_ms >= ?2 ORDER BY id"
        ),
        params![u64_to_db(worker_id), now_ms],
    )?
    .iter()
    .map(|r| {
        let wire = CHALLENGE_BASE + r.u64(0)?;
        Ok(Lease {
            lease_id: wire,
            workunit_id: wire,
            kind: perft_kind(r.text(1)?, r.i64(2)?),
            deadline_ms: r.i64(3)?,
        })
    })
    .collect()
}

/// Challenges as the judge reads leases (`None` for an unknown one), by challenge id.
pub(super) fn lease_infos(tx: Tx, ids: &[u64]) -> StoreResult<BTreeMap<u64, LeaseInfo>> {
    let mut out = BTreeMap::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let mut b = Batch::new(tx.dialect());
    let in_ids = b.in_ids(ids);
    for r in tx.query(
        &format!(
            "SELECT id, worker_id, state, deadline_ms, fen, depth, issued_ms FROM challenges WHERE id {in_ids}"
        ),
        &b.params(),
    )? {
        let id = r.u64(0)?;
        let wire = CHALLENGE_BASE + id;
        let state = match r.i64(2)? {
            CHALLENGE_OPEN => ReplicaState::InProgress,
            CHALLENGE_ANSWERED => ReplicaState::Returned,
            _ => ReplicaState::Expired,
        };
        out.insert(
            id,
            LeaseInfo {
                id: wire,
                workunit_id: wire,
                worker_id: r.u64(1)?,
                state,
                deadline_ms: r.i64(3)?,
                kind: perft_kind(r.text(4)?, r.i64(5)?),
                issued_ms: r.i64(6)?,
                known_nodes: None,
            },
        );
    }
    Ok(out)
}

/// Records `worker_id`'s answer to challenge `id` (its result already judged against the
/// challenge's lease): the divide it gave, or with `None` a refusal, which misses it.
pub(super) fn answer(
    tx: Tx,
    worker_id: u64,
    id: u64,
    result: Option<&PerftResult>,
    now_ms: i64,
) -> StoreResult<()> {
    let wire = CHALLENGE_BASE + id;
    let (state, nodes, divide) = match result {
        Some(r) => (
            CHALLENGE_ANSWERED,
            Some(u64_to_db(r.nodes)),
            Some(serde_json::to_string(&r.divide).map_err(|e| StoreError::Db(e.to_string()))?),
        ),
        None => (CHALLENGE_MISSED, None, None),
    };
    let done = tx.query_opt(
        &format!(
            "UPDATE challenges SET state = ?3, nodes = ?4, divide = ?5, answered_ms = ?6
             WHERE id = ?1 AND worker_id = ?2 AND state = {CHALLENGE_OPEN} AND deadline_ms >= ?6 RETURNING dispute_id"
        ),
        params![u64_to_db(id), u64_to_db(worker_id), state, nodes, divide, now_ms],
    )?;
    let Some(done) = done else {
        return Err(StoreError::LeaseClosed(wire, "answered"));
    };
    wake(tx, done.i64(0)?)
}

/// Which of `ids` (challenge ids) `worker_id` holds open now: a renewal keeps them (their
/// deadline does not move: a challenge is one subtree of a workunit the worker already
/// computed).
pub(super) fn renewable(tx: Tx, worker_id: u64, ids: &[u64], now_ms: i64) -> StoreResult<Vec<u64>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut b = Batch::new(tx.dialect());
    let in_ids = b.in_ids(ids);
    let w = b.param(u64_to_db(worker_id));
    let now = b.param(now_ms);
    tx.query(
        &format!(
            "SELECT id FROM challenges WHERE id {in_ids} AND worker_id = {w} AND state = {CHALLENGE_OPEN} AND deadline_ms >= {now}"
        ),
        &b.params(),
    )?
    .iter()
    .map(|r| Ok(CHALLENGE_BASE + r.u64(0)?))
    .collect()
}

/// What disputes have cost and found.
pub(super) fn cost(s: &impl Backend) -> StoreResult<DisputeCost> {
    s.with_reader(&mut |tx| {
        let get = |key: &str| -> StoreResult<u64> {
            tx.query_opt("SELECT value FROM settings WHERE key = ?1", params![key])?
                .map_or(Ok(0), |r| r.u64(0))
        };
        Ok(DisputeCost {
            opened: get("disputes_opened")?,
            decided: get("disputes_decided")?,
            convicted: get("disputes_convicted")?,
            challenges: get("dispute_challenges")?,
            leaf_nodes: get("dispute_nodes")?,
        })
    })
}
