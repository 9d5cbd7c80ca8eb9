//! The public pages' read-only queries; the types and what they cost are in [`crate::model::standings`].

use super::Tx;
use crate::model::standings::{StandingsQuery, WorkerHistory, WorkerResult, WorkerStanding};
use crate::model::{RowStatus, StoreError, StoreResult};
use crate::store::codes::{replica_state, result_outcome, row_status, u64_to_db};
use crate::store::db::{Row, params};
use crate::work::assembly::SplitUnit;

/// Nodes one worker returned since the minute of `?2` (hi/lo halves, exact past 2^63):
/// migration 28 keeps them per minute, so this reads a dozen rows at most however fast it
/// works.
const RECENT: &str =
    "SELECT CAST(COALESCE(SUM(nodes_hi), 0) AS BIGINT), CAST(COALESCE(SUM(nodes_lo), 0) AS BIGINT)
     FROM worker_minutes WHERE worker_id = ?1 AND minute >= ?2 / 60000";

/// The credit columns (migration 12) are kept by a trigger as results are graded, voided and
/// ungraded, so reading them costs nothing per result.
const STANDING_COLS: &str = "id, name, engine, created_ms, last_seen_ms, lost_votes, refused, banned, quarantined_ms IS NOT NULL,
    credit_results, credit_nodes_hi, credit_nodes_lo, build";

/// The leaderboard's order, matching the `workers_credit` index: credit nodes (the hi sum with
/// the carry of the lo sum, then the rest of lo), then valid results, then age.
const BY_CREDIT: &str = "(credit_nodes_hi + credit_nodes_lo / 4294967296) DESC, (credit_nodes_lo % 4294967296) DESC, credit_results DESC, id";

fn halves(hi: i64, lo: i64) -> u128 {
    (i128::from(hi) * (1 << 32) + i128::from(lo)).max(0) as u128
}

fn standing_row(r: &Row) -> StoreResult<WorkerStanding> {
    Ok(WorkerStanding {
        id: r.u64(0)?,
        name: r.text(1)?,
        engine: r.text(2)?,
        created_ms: r.i64(3)?,
        last_seen_ms: r.i64(4)?,
        valid_results: r.u64(9)?,
        valid_nodes: halves(r.i64(10)?, r.i64(11)?),
        recent_nodes: 0,
        lost_votes: r.u64(5)?,
        refused: r.u64(6)?,
        banned: r.bool(7)?,
        quarantined: r.bool(8)?,
        build: r.opt_text(12)?,
    })
}

fn add_recent(tx: Tx, w: &mut WorkerStanding, recent_since_ms: i64) -> StoreResult<()> {
    let r = tx.query_one(RECENT, params![u64_to_db(w.id), recent_since_ms])?;
    w.recent_nodes = halves(r.i64(0)?, r.i64(1)?);
    Ok(())
}

/// The leaderboard rows `q` asks for.
pub(super) fn standings(tx: Tx, q: &StandingsQuery) -> StoreResult<Vec<WorkerStanding>> {
    let (filter, order) = match q.seen_since_ms {
        Some(_) => ("WHERE last_seen_ms >= ?3", "last_seen_ms DESC, id"),
        None => ("WHERE CAST(?3 AS BIGINT) IS NULL", BY_CREDIT),
    };
    let mut out = tx
        .query(
            &format!(
                "SELECT {STANDING_COLS} FROM workers {filter} ORDER BY {order} LIMIT ?1 OFFSET ?2"
            ),
            params![
                u64_to_db(q.limit.min(i64::MAX as u64)),
                u64_to_db(q.offset.min(i64::MAX as u64)),
                q.seen_since_ms
            ],
        )?
        .iter()
        .map(standing_row)
        .collect::<StoreResult<Vec<_>>>()?;
    for w in &mut out {
        add_recent(tx, w, q.recent_since_ms)?;
    }
    Ok(out)
}

/// One worker's standing and its `limit` latest results.
pub(super) fn worker_history(
    tx: Tx,
    worker_id: u64,
    recent_since_ms: i64,
    limit: u64,
) -> StoreResult<Option<WorkerHistory>> {
    let Some(row) = tx.query_opt(
        &format!("SELECT {STANDING_COLS} FROM workers WHERE id = ?1"),
        params![u64_to_db(worker_id)],
    )?
    else {
        return Ok(None);
    };
    let mut standing = standing_row(&row)?;
    add_recent(tx, &mut standing, recent_since_ms)?;
    let results = tx
        .query(
            "SELECT r.id, r.workunit_id, w.campaign_id, COALESCE(w.sp, w.origin_sp), r.state, r.outcome,
                    r.nodes, r.issued_ms, r.returned_ms, r.elapsed_ms
             FROM results r JOIN workunits w ON w.id = r.workunit_id
             WHERE r.worker_id = ?1 ORDER BY r.id DESC LIMIT ?2",
            params![u64_to_db(worker_id), u64_to_db(limit.min(i64::MAX as u64))],
        )?
        .iter()
        .map(|r| {
            Ok(WorkerResult {
                id: r.u64(0)?,
                workunit_id: r.u64(1)?,
                campaign_id: r.u64(2)?,
                sp: r.opt_i64(3)?.map(|n| n as u16),
                state: replica_state(r.i64(4)?),
                outcome: result_outcome(r.i64(5)?),
                nodes: r.opt_i64(6)?.map(|n| n as u64),
                issued_ms: r.i64(7)?,
                returned_ms: r.opt_i64(8)?,
                elapsed_ms: r.opt_i64(9)?.map(|n| n as u64),
            })
        })
        .collect::<StoreResult<_>>()?;
    Ok(Some(WorkerHistory { standing, results }))
}

/// Streams the split workunits of start positions `first_sp..=last_sp` of a campaign (through
/// the `workunits(campaign_id, origin_sp)` index); `0..=u16::MAX` streams them all.
pub(super) fn visit_split_units_of(
    tx: Tx,
    campaign_id: u64,
    first_sp: u16,
    last_sp: u16,
    visit: &mut dyn FnMut(SplitUnit),
) -> StoreResult<()> {
    tx.each(
        "SELECT origin_sp, state, nodes, multiplicity, first_moves FROM workunits
         WHERE campaign_id = ?1 AND origin_sp BETWEEN ?2 AND ?3",
        params![u64_to_db(campaign_id), first_sp, last_sp],
        &mut |r| {
            let state = row_status(r.i64(1)?);
            let moves = r.text(4)?;
            visit(SplitUnit {
                origin_sp: r.i64(0)? as u16,
                state,
                nodes: if state == RowStatus::Valid {
                    r.opt_i64(2)?.map(|n| n as u64)
                } else {
                    None
                },
                multiplicity: r.u64(3)?,
                first_moves: serde_json::from_str(&moves)
                    .map_err(|e| StoreError::Db(e.to_string()))?,
            });
            Ok(())
        },
    )
}
