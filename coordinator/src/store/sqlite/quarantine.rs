//! Quarantine inside a SQLite transaction; the rules are in [`crate::quarantine`].

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};

use super::transition::retransition;
use crate::scheduler::ReplicaState;
use crate::store::StoreResult;
use crate::store::codes::{db_to_u64, replica_code, u64_to_db};
use crate::trust;

/// The quarantine threshold stored by [`crate::store::Store::set_max_strikes`] (default 3).
fn max_strikes(tx: &Connection) -> StoreResult<u64> {
    Ok(tx
        .query_row(
            "SELECT value FROM settings WHERE key = 'max_strikes'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .optional()?
        .map_or(3, db_to_u64))
}

/// Quarantines the worker if the evidence against it (failed checks, refused results) reached
/// the threshold ([`trust::is_excluded`]) and it is not quarantined yet.
pub(crate) fn check(tx: &Connection, worker_id: u64, now_ms: i64) -> StoreResult<()> {
    let row: Option<(i64, i64, bool)> = tx
        .query_row(
            "SELECT checks_failed, refused, quarantined_ms IS NOT NULL FROM workers WHERE id = ?1",
            [u64_to_db(worker_id)],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((failed, refused, already)) = row else {
        return Ok(());
    };
    if !already && trust::is_excluded(db_to_u64(failed), db_to_u64(refused), max_strikes(tx)?) {
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

fn pairs(tx: &Connection, sql: &str, worker_id: u64) -> StoreResult<Vec<(i64, i64)>> {
    let mut st = tx.prepare_cached(sql)?;
    let rows = st.query_map([u64_to_db(worker_id)], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Quarantines a worker now (idempotent): see the module documentation.
pub(crate) fn quarantine(tx: &Connection, worker_id: u64, now_ms: i64) -> StoreResult<()> {
    let w = u64_to_db(worker_id);
    let newly = tx.execute(
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
        "SELECT id, workunit_id FROM results WHERE worker_id = ?1 AND state = 0",
        worker_id,
    )? {
        tx.execute(
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
        "SELECT id, workunit_id FROM results WHERE worker_id = ?1 AND state = 1 AND outcome = 0",
        worker_id,
    )? {
        tx.execute(
            "UPDATE results SET state = ?2, error = 'quarantined' WHERE id = ?1",
            params![id, replica_code(ReplicaState::Error)],
        )?;
        tx.execute(
            "UPDATE workunits SET state = 0, completed_ms = NULL WHERE id = ?1 AND state = 2",
            [wu],
        )?;
        touched.insert(wu);
    }

    // Workunits it helped validate: void its result, ungrade the others, reopen.
    for (id, wu) in pairs(
        tx,
        "SELECT r.id, r.workunit_id FROM results r JOIN workunits u ON u.id = r.workunit_id
         WHERE r.worker_id = ?1 AND r.state = 1 AND r.outcome = 1 AND u.state = 1",
        worker_id,
    )? {
        tx.execute(
            "UPDATE results SET state = ?2, outcome = 2, error = 'quarantined' WHERE id = ?1",
            params![id, replica_code(ReplicaState::Error)],
        )?;
        // Roll back the vote counts of the others, so that regrading counts them once.
        tx.execute(
            "UPDATE workers SET valid = valid - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.outcome = 1),
                                lost_votes = lost_votes - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.outcome = 2)
             WHERE id IN (SELECT worker_id FROM results WHERE workunit_id = ?1 AND state = 1 AND outcome != 0)",
            [wu],
        )?;
        tx.execute(
            "UPDATE results SET outcome = 0 WHERE workunit_id = ?1 AND state = 1",
            [wu],
        )?;
        tx.execute(
            "UPDATE workunits SET state = 0, canonical_result_id = NULL, canonical_digest = NULL, nodes = NULL, completed_ms = NULL,
                                 reverify = 1
             WHERE id = ?1",
            [wu],
        )?;
        touched.insert(wu);
    }

    for wu in touched {
        retransition(tx, db_to_u64(wu), now_ms)?;
    }
    Ok(())
}
