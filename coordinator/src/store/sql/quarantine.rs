//! Quarantine: a worker caught lying (a failed check, or too many refused results) or banned by
//! the operator gets no more work, its pending results stop counting, and every workunit it
//! helped validate is re-verified without it. Losing a vote is no evidence and never
//! quarantines anyone (see [`crate::integrity::trust`]): an honest worker outvoted by colluding liars keeps
//! its standing.
//!
//! Re-verification reopens the workunit: the quarantined worker's result is voided (state
//! `error`, outcome `invalid`), the other results go back to ungraded (their workers' vote
//! counts are rolled back so the regrading does not count them twice), and the transitioner asks
//! for as many fresh replicas as the quorum needs. The honest results still vote, but the quorum
//! must now be reached without the quarantined worker (and, for perft, be anchored again: see
//! [`crate::work::transitioner::transition_anchored`]); a peer that had agreed with a lie loses its vote
//! in turn. Until then the table shows such a workunit as `reverifying`.
//!
//! The quarantine runs inside the transaction that found the evidence, written once for both
//! backends, so a quarantine is all-or-nothing like every other state change. When to
//! quarantine and what standing survives withdrawn evidence are pure rules in [`crate::integrity::trust`]
//! (`is_excluded`, `standing_after_rollback`); the conformance cases are in
//! `store/conformance/quarantine.rs` and `store/conformance/mod.rs`, run on SQLite and
//! PostgreSQL.
//!
//! These functions change workers and results and reopen workunits, and return what must follow
//! ([`Followup`]): the transitioner on the workunits touched, the quarantine rule on workers that
//! failed a check. [`super::cascade`] runs the follow-ups, so the quarantine and the
//! transitioner do not call each other.

use std::collections::BTreeSet;

use super::Tx;
use super::reopen::reopen;
use super::transition::integrity_in;
use crate::integrity::trust;
use crate::model::{ReplicaState, StoreError, StoreResult};
use crate::store::codes::{
    CHECK_AUDIT_REPLICA, CHECK_NONE, CHECK_VERIFIED, CHECKED_FAILED, CHECKED_PASSED,
    OUTCOME_INVALID, OUTCOME_PENDING, OUTCOME_VALID, REPLICA_IN_PROGRESS, REPLICA_RETURNED,
    TRUST_UNTRUSTED, WORKUNIT_FAILED, WORKUNIT_OPEN, WORKUNIT_VALID, replica_code, trust_code,
    trust_level, u64_to_db,
};
use crate::store::db::params;

/// What must follow a quarantine step, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Followup {
    /// Run the transitioner on this workunit.
    Retransition(u64),
    /// Give this worker back what withdrawn evidence took ([`restore`]).
    Restore(u64),
    /// Apply the quarantine rule to this worker ([`check`]).
    Check(u64),
}

fn retransitions(touched: BTreeSet<i64>) -> Vec<Followup> {
    touched
        .into_iter()
        .map(|wu| Followup::Retransition(wu as u64))
        .collect()
}

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
pub(super) fn check(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<Vec<Followup>> {
    let Some(row) = tx.query_opt(
        "SELECT checks_failed, refused, quarantined_ms IS NOT NULL FROM workers WHERE id = ?1",
        params![u64_to_db(worker_id)],
    )?
    else {
        return Ok(Vec::new());
    };
    let (failed, refused, already) = (row.u64(0)?, row.u64(1)?, row.bool(2)?);
    if !already && trust::is_excluded(failed, refused, max_strikes(tx)?) {
        tracing::warn!(
            worker = worker_id,
            failed,
            refused,
            "worker quarantined; re-verifying its results"
        );
        return quarantine(tx, worker_id, now_ms);
    }
    Ok(Vec::new())
}

fn pairs(tx: Tx, sql: &str, worker_id: u64) -> StoreResult<Vec<(i64, i64)>> {
    tx.query(sql, params![u64_to_db(worker_id)])?
        .iter()
        .map(|r| Ok((r.i64(0)?, r.i64(1)?)))
        .collect()
}

/// Quarantines a worker now (idempotent): see the module documentation.
pub(super) fn quarantine(tx: Tx, worker_id: u64, now_ms: i64) -> StoreResult<Vec<Followup>> {
    let w = u64_to_db(worker_id);
    let newly = tx.exec(
        &format!("UPDATE workers SET quarantined_ms = ?2, trusted = {TRUST_UNTRUSTED} WHERE id = ?1 AND quarantined_ms IS NULL"),
        params![w, now_ms],
    )?;
    if newly == 0 {
        return Ok(Vec::new());
    }
    tracing::info!(
        worker = worker_id,
        "worker quarantined: its leases are released and what it validated is re-verified"
    );
    let mut touched = BTreeSet::new();

    // Open leases go back to the pool at once.
    for (id, wu) in pairs(
        tx,
        &format!(
            "SELECT id, workunit_id FROM results WHERE worker_id = ?1 AND state = {REPLICA_IN_PROGRESS} ORDER BY id"
        ),
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
        &format!(
            "SELECT id, workunit_id FROM results WHERE worker_id = ?1 AND state = {REPLICA_RETURNED} AND outcome = {OUTCOME_PENDING} ORDER BY id"
        ),
        worker_id,
    )? {
        tx.exec(
            "UPDATE results SET state = ?2, error = 'quarantined' WHERE id = ?1",
            params![id, replica_code(ReplicaState::Error)],
        )?;
        tx.exec(
            &format!("UPDATE workunits SET state = {WORKUNIT_OPEN}, completed_ms = NULL WHERE id = ?1 AND state = {WORKUNIT_FAILED}"),
            params![wu],
        )?;
        // A value reopened for an audit replica whose quorum held this worker: the replica was
        // to check what it said, which no longer counts; the others settle it as a
        // re-verification does (super::reopen::reopen), and it is audited again once valid.
        tx.exec(
            &format!("UPDATE workunits SET audit_replicas = 0, check_state = {CHECK_NONE} WHERE id = ?1 AND state = {WORKUNIT_OPEN} AND check_state = {CHECK_AUDIT_REPLICA}"),
            params![wu],
        )?;
        touched.insert(wu);
    }

    // Workunits it helped validate: void its result, ungrade the others, reopen.
    for (id, wu) in pairs(
        tx,
        &format!("SELECT r.id, r.workunit_id FROM results r JOIN workunits u ON u.id = r.workunit_id
         WHERE r.worker_id = ?1 AND r.state = {REPLICA_RETURNED} AND r.outcome = {OUTCOME_VALID} AND u.state = {WORKUNIT_VALID} ORDER BY r.id"),
        worker_id,
    )? {
        tx.exec(
            &format!("UPDATE results SET state = ?2, outcome = {OUTCOME_INVALID}, error = 'quarantined' WHERE id = ?1"),
            params![id, replica_code(ReplicaState::Error)],
        )?;
        reopen(tx, wu)?;
        touched.insert(wu);
    }
    Ok(retransitions(touched))
}

/// A later, independent computation (the re-split cross-check, [`crate::integrity::checker`]) found the
/// true digest of a workunit, and it differs from what the workunit's grades rest on (its
/// canonical result, or an earlier check of the coordinator's). The truth replaces the earlier
/// check; a value that disagrees with it is reopened; checks graded against the old value are
/// graded again: a worker that failed one by telling the truth has that evidence withdrawn
/// ([`restore`]), one that passed with the wrong value has failed a check, and the workers
/// behind a wrong canonical result fail theirs when the transitioner grades them.
pub(super) fn overturn(tx: Tx, workunit_id: u64, truth: &[u8; 32]) -> StoreResult<Vec<Followup>> {
    let wu = u64_to_db(workunit_id);
    let row = tx
        .query_opt(
            &format!(
                "SELECT state, canonical_digest FROM workunits WHERE id = ?1{}",
                tx.dialect().for_update()
            ),
            params![wu],
        )?
        .ok_or(StoreError::UnknownWorkunit(workunit_id))?;
    let (state, canonical) = (row.i64(0)?, row.opt_blob(1)?);
    tx.exec(
        &format!("UPDATE workunits SET verified_digest = ?2, check_state = {CHECK_VERIFIED} WHERE id = ?1"),
        params![wu, truth],
    )?;
    match state {
        WORKUNIT_VALID if canonical.as_deref() != Some(&truth[..]) => reopen(tx, wu)?,
        WORKUNIT_FAILED => {
            tx.exec(
                &format!("UPDATE workunits SET state = {WORKUNIT_OPEN}, completed_ms = NULL WHERE id = ?1"),
                params![wu],
            )?;
        }
        _ => {}
    }
    let graded = tx.query(
        &format!("SELECT id, worker_id, digest, checked FROM results WHERE workunit_id = ?1 AND checked IN ({CHECKED_PASSED}, {CHECKED_FAILED}) ORDER BY id"),
        params![wu],
    )?;
    let (mut cleared, mut failed) = (Vec::new(), Vec::new());
    for r in &graded {
        let (id, worker, digest, checked) = (r.i64(0)?, r.i64(1)?, r.opt_blob(2)?, r.i64(3)?);
        let right = digest.as_deref() == Some(&truth[..]);
        let (now_checked, sql) = match (checked, right) {
            (CHECKED_FAILED, true) => (
                CHECKED_PASSED,
                "UPDATE workers SET checks_failed = CASE WHEN checks_failed > 0 THEN checks_failed - 1 ELSE 0 END, checks_passed = checks_passed + 1 WHERE id = ?1".to_string(),
            ),
            (CHECKED_PASSED, false) => (
                CHECKED_FAILED,
                format!("UPDATE workers SET checks_passed = CASE WHEN checks_passed > 0 THEN checks_passed - 1 ELSE 0 END, checks_failed = checks_failed + 1, trusted = {TRUST_UNTRUSTED} WHERE id = ?1"),
            ),
            _ => continue,
        };
        tx.exec(
            "UPDATE results SET checked = ?2 WHERE id = ?1",
            params![id, now_checked],
        )?;
        tx.exec(&sql, params![worker])?;
        if right {
            cleared.push(worker as u64);
        } else {
            failed.push(worker as u64);
        }
    }
    tracing::warn!(
        workunit = workunit_id,
        cleared = cleared.len(),
        failed = failed.len(),
        "a check was overturned by an independent recomputation"
    );
    let mut then = vec![Followup::Retransition(workunit_id)];
    then.extend(cleared.into_iter().map(Followup::Restore));
    then.extend(failed.into_iter().map(Followup::Check));
    Ok(then)
}

/// Gives a worker back what withdrawn evidence took ([`trust::standing_after_rollback`]): its
/// trust as far as its checks earn it, and, when what is left no longer excludes it, the end of
/// its quarantine; its results the quarantine voided vote again (a voided valid vote is taken
/// off its count first, so the regrading counts it once).
pub(super) fn restore(tx: Tx, worker_id: u64) -> StoreResult<Vec<Followup>> {
    let w = u64_to_db(worker_id);
    let Some(r) = tx.query_opt(
        "SELECT trusted, checks_passed, checks_failed, refused, banned != 0, quarantined_ms IS NOT NULL
         FROM workers WHERE id = ?1",
        params![w],
    )?
    else {
        return Ok(Vec::new());
    };
    let quarantined = r.bool(5)?;
    let (after, stays) = trust::standing_after_rollback(
        trust_level(r.i64(0)?),
        r.u64(1)?,
        r.u64(2)?,
        r.u64(3)?,
        r.bool(4)?,
        max_strikes(tx)?,
        &integrity_in(tx)?,
    );
    tx.exec(
        "UPDATE workers SET trusted = ?2 WHERE id = ?1",
        params![w, trust_code(after)],
    )?;
    if !quarantined || stays {
        return Ok(Vec::new());
    }
    tracing::info!(
        worker = worker_id,
        "evidence withdrawn: quarantine lifted, its results vote again"
    );
    tx.flush_deferred()?;
    tx.exec(
        "UPDATE workers SET quarantined_ms = NULL WHERE id = ?1",
        params![w],
    )?;
    let voided = tx.query(
        "SELECT id, workunit_id, outcome FROM results WHERE worker_id = ?1 AND state = ?2 AND error = 'quarantined' ORDER BY id",
        params![w, replica_code(ReplicaState::Error)],
    )?;
    let mut touched = BTreeSet::new();
    for v in &voided {
        if v.i64(2)? == OUTCOME_INVALID {
            tx.exec(
                "UPDATE workers SET valid = CASE WHEN valid > 0 THEN valid - 1 ELSE 0 END WHERE id = ?1",
                params![w],
            )?;
        }
        tx.exec(
            &format!("UPDATE results SET state = ?2, outcome = {OUTCOME_PENDING}, error = NULL WHERE id = ?1"),
            params![v.i64(0)?, replica_code(ReplicaState::Returned)],
        )?;
        touched.insert(v.i64(1)?);
    }
    Ok(retransitions(touched))
}
