//! Probation in the store: what the workers that have not returned a stored result yet hold,
//! for the pure rules of [`crate::integrity::trust::probation_room`] (issue 31's lease hoarding).

use super::Tx;
use crate::integrity::trust;
use crate::model::StoreResult;
use crate::store::codes::{
    REPLICA_IN_PROGRESS, REPLICA_RETURNED, TRUST_UNTRUSTED, WORKUNIT_OPEN, u64_to_db,
};
use crate::store::db::params;

/// Whether `worker_id` ever returned a result that was stored (refusals and leases given back
/// do not count: a hoarder must not leave probation by giving its lease back).
pub(super) fn returned_any(tx: Tx, worker_id: u64) -> StoreResult<bool> {
    Ok(tx
        .query_opt(
            &format!("SELECT 1 FROM results WHERE worker_id = ?1 AND returned_ms IS NOT NULL AND state = {REPLICA_RETURNED} LIMIT 1"),
            params![u64_to_db(worker_id)],
        )?
        .is_some())
}

/// Whether the worker `o` of a query is in probation (trust::in_probation), as SQL.
fn in_probation() -> String {
    format!(
        "o.trusted = {TRUST_UNTRUSTED} AND NOT EXISTS (
    SELECT 1 FROM results p WHERE p.worker_id = o.id AND p.returned_ms IS NOT NULL AND p.state = {REPLICA_RETURNED})"
    )
}

/// Open leases of the workers in probation whose last fetch came from `block`.
pub(super) fn probation_leases_of_block(tx: Tx, block: &str, now_ms: i64) -> StoreResult<u64> {
    tx.query_one(
        &format!(
            "SELECT COUNT(*) FROM results r JOIN workers o ON o.id = r.worker_id
             WHERE o.last_block = ?1 AND r.state = {REPLICA_IN_PROGRESS} AND r.deadline_ms >= ?2 AND {}",
            in_probation()
        ),
        params![block, now_ms],
    )?
    .u64(0)
}

/// What the workers in probation hold of `campaign` and its remaining replicas, for
/// trust::probation_room when a worker wants `want` more: the ready replicas are counted only
/// up to what the share could need (trust::probation_count_limit), so a campaign of a million
/// workunits costs no more than a small one.
pub(super) fn probation_hold(
    tx: Tx,
    campaign: u64,
    block_held: u64,
    want: u64,
    integrity: &trust::Integrity,
    now_ms: i64,
) -> StoreResult<trust::ProbationHold> {
    let open = tx.query_one(
        &format!(
            "SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN {} THEN 1 ELSE 0 END), 0) AS BIGINT)
             FROM results r JOIN workunits w ON w.id = r.workunit_id JOIN workers o ON o.id = r.worker_id
             WHERE w.campaign_id = ?1 AND r.state = {REPLICA_IN_PROGRESS} AND r.deadline_ms >= ?2",
            in_probation()
        ),
        params![u64_to_db(campaign), now_ms],
    )?;
    let (open_all, held) = (open.u64(0)?, open.u64(1)?);
    let limit = trust::probation_count_limit(held, want, integrity);
    let ready = if limit == 0 {
        0
    } else {
        tx.query_one(
            &format!(
                "SELECT CAST(COALESCE(SUM(t.needed), 0) AS BIGINT) FROM (SELECT w.needed FROM workunits w{}
                 WHERE w.campaign_id = ?1 AND w.state = {WORKUNIT_OPEN} AND w.needed > 0 LIMIT ?2) t",
                tx.dialect().ready_index()
            ),
            params![u64_to_db(campaign), u64_to_db(limit)],
        )?
        .u64(0)?
    };
    Ok(trust::ProbationHold {
        block: block_held,
        campaign: held,
        campaign_remaining: open_all.saturating_add(ready),
    })
}
