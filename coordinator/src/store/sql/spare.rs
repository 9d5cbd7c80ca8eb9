//! Spare capacity re-verifies (issue 54): a worker that asks for work when no campaign has any
//! gets a hidden replica of a valid perft value with the fewest agreeing workers, which stays
//! valid meanwhile. Its result is graded like any late one; one that disagrees opens a dispute
//! ([`super::bisection`]) that convicts whoever is wrong — the value's workers included, whose
//! values are then re-verified.

use super::{Tx, bump_setting};
use crate::integrity::trust::Integrity;
use crate::model::{Lease, StoreResult};
use crate::store::codes::{
    CAMPAIGN_ACTIVE, KIND_COLUMNS, KIND_PERFT, OUTCOME_VALID, REPLICA_IN_PROGRESS,
    REPLICA_RETURNED, WORKUNIT_VALID, u64_to_db,
};
use crate::store::db::params;
use crate::work::handout::Deadlines;

/// The spare replica for `worker_id`, if some valid value of an active campaign (the one
/// [`Integrity::idle_reverify_campaign`] names, if it names one) has fewer than
/// [`Integrity::idle_reverify_upto`] agreeing workers (0: re-verification off), none of them
/// this one, and no replica out: the one with the fewest, oldest first.
pub(super) fn spare_replica(
    tx: Tx,
    worker_id: u64,
    integrity: &Integrity,
    deadlines: Deadlines,
    now_ms: i64,
) -> StoreResult<Option<Lease>> {
    if integrity.idle_reverify_upto == 0 {
        return Ok(None);
    }
    let only = match integrity.idle_reverify_campaign {
        0 => String::new(),
        c => format!("AND w.campaign_id = {}", u64_to_db(c)),
    };
    let agreeing = format!(
        "(SELECT COUNT(*) FROM results a WHERE a.workunit_id = w.id AND a.state = {REPLICA_RETURNED} AND a.outcome = {OUTCOME_VALID})"
    );
    let Some(row) = tx.query_opt(
        &format!(
            "SELECT {KIND_COLUMNS} FROM workunits w JOIN campaigns c ON c.id = w.campaign_id
             WHERE w.state = {WORKUNIT_VALID} AND w.kind = {KIND_PERFT} AND c.status = {CAMPAIGN_ACTIVE} {only}
               AND NOT EXISTS (SELECT 1 FROM results r WHERE r.workunit_id = w.id AND (r.worker_id = ?1 OR r.state = {REPLICA_IN_PROGRESS}))
               AND {agreeing} < ?2
             ORDER BY {agreeing}, w.id LIMIT 1"
        ),
        params![u64_to_db(worker_id), u64_to_db(integrity.idle_reverify_upto)],
    )?
    else {
        return Ok(None);
    };
    let kind = super::leases::workunit_kind(&row, 0)?;
    let wu = row.u64(crate::store::codes::KIND_COLUMN_COUNT - 1)?;
    let lease = tx.query_one(
        &format!(
            "INSERT INTO results (workunit_id, worker_id, state, issued_ms, deadline_ms, hard_deadline_ms)
             VALUES (?1, ?2, {REPLICA_IN_PROGRESS}, ?3, ?4, ?5) RETURNING id"
        ),
        params![
            u64_to_db(wu),
            u64_to_db(worker_id),
            now_ms,
            deadlines.renew_by,
            deadlines.hard
        ],
    )?;
    bump_setting(tx, "spare_replicas", 1)?;
    Ok(Some(Lease {
        lease_id: lease.u64(0)?,
        workunit_id: wu,
        kind,
        deadline_ms: deadlines.renew_by,
    }))
}
