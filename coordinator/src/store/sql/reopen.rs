//! Reopening a settled workunit inside a transaction: for re-verification (a quarantine, an
//! overturned check) or for an audit by one more hidden replica. The caller runs the
//! transitioner afterwards.

use super::Tx;
use crate::store::StoreResult;
use crate::store::db::params;

/// Reopens a settled workunit for re-verification: its canonical result is withdrawn, the
/// returned results go back to ungraded, and their workers' vote counts are rolled back so that
/// the regrading counts each once (a lost vote on a value found wrong is no longer lost). The
/// caller runs the transitioner.
pub(super) fn reopen(tx: Tx, wu: i64) -> StoreResult<()> {
    tx.flush_deferred()?;
    tx.exec(
        "UPDATE workers SET valid = valid - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.state = 1 AND r.outcome = 1),
                            lost_votes = lost_votes - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.state = 1 AND r.outcome = 2)
         WHERE id IN (SELECT worker_id FROM results WHERE workunit_id = ?1 AND state = 1 AND outcome != 0)",
        params![wu],
    )?;
    tx.exec(
        "UPDATE results SET outcome = 0 WHERE workunit_id = ?1 AND state = 1",
        params![wu],
    )?;
    tx.exec(
        "UPDATE workunits SET state = 0, canonical_result_id = NULL, canonical_digest = NULL, nodes = NULL, completed_ms = NULL,
                             reverify = 1
         WHERE id = ?1",
        params![wu],
    )?;
    Ok(())
}

/// Reopens a valid workunit for an audit by one more hidden replica
/// ([`crate::audit::AuditPath::Replica`]): like a re-verification, except that the workunit
/// now needs its quorum plus that replica, all agreeing. The caller runs the transitioner.
pub(super) fn reopen_for_audit(tx: Tx, wu: i64) -> StoreResult<()> {
    reopen(tx, wu)?;
    tx.exec(
        "UPDATE workunits SET audit_replicas = 1, check_state = ?2 WHERE id = ?1",
        params![wu, crate::store::codes::check::AUDIT_REPLICA],
    )?;
    Ok(())
}
