//! Who is at work: the workers that could take a replica now (a request in the last two
//! minutes, in good standing), which decides whether the crowd or the coordinator audits.

use super::Tx;
use crate::model::StoreResult;
use crate::store::codes::u64_to_db;
use crate::store::db::params;

/// How long a worker counts as at work after its last request (a fetch, a submission or a
/// heartbeat: four heartbeats, `c960_common::wire::HEARTBEAT_SECS`).
pub(super) const AT_WORK_MS: i64 = 2 * 60 * 1000;

/// Whether a worker in good standing that holds no replica of `workunit_id` is at work: one
/// that could take an audit replica of it.
pub(super) fn someone_else_at_work(tx: Tx, workunit_id: u64, now_ms: i64) -> StoreResult<bool> {
    Ok(tx
        .query_opt(
            "SELECT 1 FROM workers w WHERE w.last_seen_ms >= ?1 AND w.quarantined_ms IS NULL AND w.banned = 0
             AND NOT EXISTS (SELECT 1 FROM results r WHERE r.workunit_id = ?2 AND r.worker_id = w.id) LIMIT 1",
            params![now_ms.saturating_sub(AT_WORK_MS), u64_to_db(workunit_id)],
        )?
        .is_some())
}

/// The workers at work: a request in the last two minutes, in good standing.
pub(super) fn workers_at_work(tx: Tx, now_ms: i64) -> StoreResult<u64> {
    tx.query_one(
        "SELECT COUNT(*) FROM workers WHERE last_seen_ms >= ?1 AND quarantined_ms IS NULL AND banned = 0",
        params![now_ms.saturating_sub(AT_WORK_MS)],
    )?
    .u64(0)
}
