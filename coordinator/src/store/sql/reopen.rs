//! Reopening a settled workunit inside a transaction: for re-verification (a quarantine, an
//! overturned check) or for an audit by one more hidden replica. The caller runs the
//! transitioner afterwards.

use super::Tx;
use crate::model::StoreResult;
use crate::store::codes::{
    CHECK_AUDIT_REPLICA, CHECK_NONE, OUTCOME_INVALID, OUTCOME_PENDING, OUTCOME_VALID,
    REPLICA_RETURNED, WORKUNIT_OPEN,
};
use crate::store::db::params;

/// Reopens a settled workunit for re-verification: its canonical result is withdrawn, the
/// returned results go back to ungraded, and their workers' vote counts are rolled back so that
/// the regrading counts each once (a lost vote on a value found wrong is no longer lost). An
/// audit replica it waited for is no longer wanted: the re-verification is the independent
/// recount, and the value is audited again once valid (with fewer workers left at work, a
/// quorum plus a replica may be more than there are). The caller runs the transitioner.
pub(super) fn reopen(tx: Tx, wu: i64) -> StoreResult<()> {
    tx.flush_deferred()?;
    tx.exec(
        &format!("UPDATE workers SET valid = valid - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.state = {REPLICA_RETURNED} AND r.outcome = {OUTCOME_VALID}),
                            lost_votes = lost_votes - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.state = {REPLICA_RETURNED} AND r.outcome = {OUTCOME_INVALID})
         WHERE id IN (SELECT worker_id FROM results WHERE workunit_id = ?1 AND state = {REPLICA_RETURNED} AND outcome != {OUTCOME_PENDING})"),
        params![wu],
    )?;
    tx.exec(
        &format!("UPDATE results SET outcome = {OUTCOME_PENDING} WHERE workunit_id = ?1 AND state = {REPLICA_RETURNED}"),
        params![wu],
    )?;
    tx.exec(
        &format!("UPDATE workunits SET state = {WORKUNIT_OPEN}, canonical_result_id = NULL, canonical_digest = NULL, nodes = NULL, completed_ms = NULL,
                             reverify = 1, audit_replicas = 0,
                             check_state = CASE WHEN check_state = {CHECK_AUDIT_REPLICA} THEN {CHECK_NONE} ELSE check_state END
         WHERE id = ?1"),
        params![wu],
    )?;
    Ok(())
}

/// Reopens a valid workunit for an audit by one more hidden replica
/// ([`crate::integrity::audit::AuditPath::Replica`]): like a re-verification, except that the workunit
/// now needs its quorum plus that replica, all agreeing. The caller runs the transitioner.
pub(super) fn reopen_for_audit(tx: Tx, wu: i64) -> StoreResult<()> {
    reopen(tx, wu)?;
    tx.exec(
        "UPDATE workunits SET audit_replicas = 1, check_state = ?2 WHERE id = ?1",
        params![wu, CHECK_AUDIT_REPLICA],
    )?;
    Ok(())
}
