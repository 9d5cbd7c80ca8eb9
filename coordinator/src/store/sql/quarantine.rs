//! Quarantine inside a transaction; the rules are in [`crate::quarantine`].

use std::collections::BTreeSet;

use super::Tx;
use super::transition::retransition;
use crate::scheduler::ReplicaState;
use crate::store::StoreResult;
use crate::store::codes::{replica_code, u64_to_db};
use crate::store::db::params;
use crate::trust;

/// The quarantine threshold stored by [`crate::store::Store::set_max_strikes`] (default 3).
fn max_strikes(tx: Tx) -> StoreResult<u64> {
    Ok(tx
        .query_opt(
            "SELECT value FROM settings WHERE key = 'max_strikes'",
            params![],
        )?
        .map(|r| r.u64(0))
        .transpose()?
        .unwrap_or(3))
}

/// Quarantines the worker if the evidence against it (failed checks, refused results) reached
/// the threshold ([`trust::is_excluded`]) and it is not quarantined yet.
pub(super) fn check(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<()> {
    let Some(row) = tx.query_opt(
        "SELECT checks_failed, refused, quarantined_ms IS NOT NULL FROM workers WHERE id = ?1",
        params![u64_to_db(worker_id)],
    )?
    else {
        return Ok(());
    };
    let (failed, refused, already) = (row.u64(0)?, row.u64(1)?, row.bool(2)?);
    if !already && trust::is_excluded(failed, refused, max_strikes(tx)?) {
        tracing::warn!(
            worker = worker_id,
            failed,
            refused,
            "worker quarantined; re-verifying its results"
        );
        quarantine(tx, worker_id, now_ms)?;
    }
    Ok(())
}

fn pairs(tx: Tx, sql: &str, worker_id: u64) -> StoreResult<Vec<(i64, i64)>> {
    tx.query(sql, params![u64_to_db(worker_id)])?
        .iter()
        .map(|r| Ok((r.i64(0)?, r.i64(1)?)))
        .collect()
}

/// Quarantines a worker now (idempotent): see [`crate::quarantine`].
pub(super) fn quarantine(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<()> {
    let w = u64_to_db(worker_id);
    let newly = tx.exec(
        "UPDATE workers SET quarantined_ms = ?2, trusted = 0 WHERE id = ?1 AND quarantined_ms IS NULL",
        params![w, now_ms],
    )?;
    if newly == 0 {
        return Ok(());
    }
    tracing::info!(
        worker = worker_id,
        "worker quarantined: its leases are released and what it validated is re-verified"
    );
    let mut touched = BTreeSet::new();

    // Open leases go back to the pool at once.
    for (id, wu) in pairs(
        tx,
        "SELECT id, workunit_id FROM results WHERE worker_id = ?1 AND state = 0 ORDER BY id",
        worker_id,
    )? {
        tx.exec(
            "UPDATE results SET state = ?2 WHERE id = ?1",
            params![id, replica_code(ReplicaState::Abandoned)],
        )?;
        touched.insert(wu);
    }

    // Returned but not yet graded: they no longer vote. That includes its votes on failed
    // workunits (a failure grades nobody), where its disagreement may be why no quorum formed:
    // those reopen, so the others decide without it.
    for (id, wu) in pairs(
        tx,
        "SELECT id, workunit_id FROM results WHERE worker_id = ?1 AND state = 1 AND outcome = 0 ORDER BY id",
        worker_id,
    )? {
        tx.exec(
            "UPDATE results SET state = ?2, error = 'quarantined' WHERE id = ?1",
            params![id, replica_code(ReplicaState::Error)],
        )?;
        tx.exec(
            "UPDATE workunits SET state = 0, completed_ms = NULL WHERE id = ?1 AND state = 2",
            params![wu],
        )?;
        touched.insert(wu);
    }

    // Workunits it helped validate: void its result, ungrade the others, reopen.
    for (id, wu) in pairs(
        tx,
        "SELECT r.id, r.workunit_id FROM results r JOIN workunits u ON u.id = r.workunit_id
         WHERE r.worker_id = ?1 AND r.state = 1 AND r.outcome = 1 AND u.state = 1 ORDER BY r.id",
        worker_id,
    )? {
        tx.exec(
            "UPDATE results SET state = ?2, outcome = 2, error = 'quarantined' WHERE id = ?1",
            params![id, replica_code(ReplicaState::Error)],
        )?;
        // Roll back the vote counts of the others, so that regrading counts them once.
        tx.exec(
            "UPDATE workers SET valid = valid - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.outcome = 1),
                                lost_votes = lost_votes - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.outcome = 2)
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
        touched.insert(wu);
    }

    for wu in touched {
        retransition(tx, wu as u64, now_ms)?;
    }
    Ok(())
}
