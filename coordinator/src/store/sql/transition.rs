//! The transitioner inside a transaction: replicas, check grading, expiry.

use super::Tx;
use crate::scheduler::{self, Anchor, QuorumPolicy, ReplicaState, ReplicaView, Transition};
use crate::store::codes::{
    KIND_BUILTIN_ANALYSIS, KIND_PERFT, digest_from, replica_code, replica_state, trust_code,
    trust_level, u64_to_db,
};
use crate::store::db::params;
use crate::store::{StoreError, StoreResult};
use crate::trust::{self, Integrity};
use crate::validator::Digest;

/// The replicas of a workunit as the transitioner sees them.
pub(super) fn replicas(tx: Tx, workunit_id: u64) -> StoreResult<Vec<ReplicaView>> {
    tx.query(
        "SELECT r.id, r.worker_id, r.state, r.digest, o.trusted FROM results r JOIN workers o ON o.id = r.worker_id
         WHERE r.workunit_id = ?1 ORDER BY r.id",
        params![u64_to_db(workunit_id)],
    )?
    .iter()
    .map(|r| {
        Ok(ReplicaView {
            id: r.u64(0)?,
            worker_id: r.u64(1)?,
            state: replica_state(r.i64(2)?),
            digest: digest_from(r.opt_blob(3)?),
            trusted: trust_level(r.i64(4)?).is_trusted(),
        })
    })
    .collect()
}

/// The integrity settings stored by [`crate::store::Store::set_integrity`] (defaults where
/// unset).
pub(super) fn integrity_in(tx: Tx) -> StoreResult<Integrity> {
    let pairs = tx
        .query("SELECT key, value FROM settings", params![])?
        .iter()
        .map(|r| Ok((r.text(0)?, r.u64(1)?)))
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(Integrity::from_settings(
        pairs.iter().map(|(k, v)| (k.as_str(), *v)),
    ))
}

/// Adds `by` to a counter in the settings table (the cost of checking, for the status page).
pub(super) fn bump_setting(tx: Tx, key: &str, by: u64) -> StoreResult<()> {
    tx.exec(
        "INSERT INTO settings (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = settings.value + excluded.value",
        params![key, u64_to_db(by)],
    )?;
    Ok(())
}

/// Grades the returned results of a workunit the coordinator checked against its own digest:
/// a match is a passed secret check (trust grows), a mismatch a failed one (trust is lost at
/// once; evidence for quarantine). Returns the workers that failed.
pub(super) fn grade_checks(tx: Tx, workunit_id: u64, verified: &Digest) -> StoreResult<Vec<u64>> {
    let integrity = integrity_in(tx)?;
    let rows = tx.query(
        "SELECT id, worker_id, digest FROM results WHERE workunit_id = ?1 AND state = 1 AND checked = 0 ORDER BY id",
        params![u64_to_db(workunit_id)],
    )?;
    let mut failed = Vec::new();
    for r in rows {
        let (id, worker) = (r.i64(0)?, r.i64(1)?);
        let good = digest_from(r.opt_blob(2)?).is_some_and(|d| d == *verified);
        tx.exec(
            "UPDATE results SET checked = ?2 WHERE id = ?1",
            params![id, if good { 1 } else { 2 }],
        )?;
        if good {
            let row = tx.query_one(
                "UPDATE workers SET checks_passed = checks_passed + 1 WHERE id = ?1 RETURNING trusted, checks_passed",
                params![worker],
            )?;
            let level = trust_level(row.i64(0)?);
            let after = trust::after_passed_check(level, row.u64(1)?, &integrity);
            if after != level {
                tx.exec(
                    "UPDATE workers SET trusted = ?2 WHERE id = ?1",
                    params![worker, trust_code(after)],
                )?;
            }
        } else {
            fail_check(tx, worker as u64)?;
            failed.push(worker as u64);
        }
    }
    Ok(failed)
}

/// Records a failed check against a worker: its trust is gone at once.
pub(super) fn fail_check(tx: Tx, worker_id: u64) -> StoreResult<()> {
    tx.exec(
        "UPDATE workers SET checks_failed = checks_failed + 1, trusted = 0 WHERE id = ?1",
        params![u64_to_db(worker_id)],
    )?;
    Ok(())
}

/// Runs the transitioner on one workunit and writes its verdict (and the verdict on each
/// returned result, with the workers' vote counts) in the same transaction. A perft workunit
/// needs an anchored quorum ([`scheduler::transition_anchored`]); an unanchored or contested
/// one asks for a coordinator check, and a checked one grades its results as checks.
///
/// On PostgreSQL the workunit's row is locked first, so two coordinators transitioning one
/// workunit take turns and the second sees what the first decided: a workunit is never
/// validated twice.
pub(super) fn retransition(tx: Tx, workunit_id: u64, now_ms: i64) -> StoreResult<()> {
    let row = tx
        .query_opt(
            &format!(
                "SELECT state, quorum, max_results, canonical_digest, kind, known_nodes, verified_digest, check_state
                 FROM workunits WHERE id = ?1{}",
                tx.dialect().for_update()
            ),
            params![u64_to_db(workunit_id)],
        )?
        .ok_or(StoreError::UnknownWorkunit(workunit_id))?;
    let (state, quorum, max_results) = (row.i64(0)?, row.i64(1)?, row.i64(2)?);
    let canonical = row.opt_blob(3)?;
    let (kind, known) = (row.i64(4)?, row.opt_i64(5)?);
    let verified = digest_from(row.opt_blob(6)?);
    let check_state = row.i64(7)?;
    let mut evidence = Vec::new();
    if let Some(v) = &verified {
        evidence = grade_checks(tx, workunit_id, v)?;
    }
    let reps = replicas(tx, workunit_id)?;
    let want_check = |tx: Tx| -> StoreResult<()> {
        if check_state == 0 {
            tx.exec(
                "UPDATE workunits SET check_state = 1 WHERE id = ?1",
                params![u64_to_db(workunit_id)],
            )?;
        }
        Ok(())
    };
    let canonical = match state {
        0 => {
            let policy = QuorumPolicy {
                quorum: quorum as u32,
                max_results: max_results as u32,
            };
            let anchor = Anchor {
                required: kind == KIND_PERFT,
                verified,
                known_total: known.is_some(),
            };
            match scheduler::transition_anchored(policy, &anchor, &reps) {
                t @ (Transition::Pending { needed } | Transition::NeedsTrust { needed }) => {
                    let trusted_only = matches!(t, Transition::NeedsTrust { .. });
                    tx.exec(
                        "UPDATE workunits SET needed = ?2, trusted_only = ?3 WHERE id = ?1",
                        params![u64_to_db(workunit_id), needed, i64::from(trusted_only)],
                    )?;
                    let digests: std::collections::BTreeSet<Digest> = reps
                        .iter()
                        .filter(|r| r.state == ReplicaState::Returned)
                        .filter_map(|r| r.digest)
                        .collect();
                    // Contested or agreed without an anchor: the coordinator looks itself (a
                    // contested built-in analysis too: its search is deterministic).
                    let checkable = anchor.required || kind == KIND_BUILTIN_ANALYSIS;
                    if checkable && verified.is_none() && (trusted_only || digests.len() > 1) {
                        want_check(tx)?;
                    }
                    return quarantine_all(tx, evidence, now_ms);
                }
                Transition::Failed => {
                    tx.exec(
                        "UPDATE workunits SET state = 2, needed = 0, trusted_only = 0, completed_ms = ?2 WHERE id = ?1",
                        params![u64_to_db(workunit_id), now_ms],
                    )?;
                    return quarantine_all(tx, evidence, now_ms);
                }
                Transition::Valid { canonical } => {
                    let winner = reps
                        .iter()
                        .find(|r| r.state == ReplicaState::Returned && r.digest == Some(canonical))
                        .ok_or_else(|| StoreError::Db("quorum without a result".into()))?;
                    let changed = tx.exec(
                        "UPDATE workunits SET state = 1, needed = 0, trusted_only = 0, reverify = 0, completed_ms = ?2, canonical_result_id = ?3,
                         canonical_digest = ?4, nodes = (SELECT nodes FROM results WHERE id = ?3) WHERE id = ?1 AND state = 0",
                        params![u64_to_db(workunit_id), now_ms, u64_to_db(winner.id), canonical.to_vec()],
                    )?;
                    if changed != 1 {
                        return Err(StoreError::Db(format!(
                            "workunit {workunit_id} validated twice"
                        )));
                    }
                    // A share of the values without a public answer is recounted one ply deeper.
                    if anchor.required
                        && known.is_none()
                        && matches!(check_state, 0 | 2)
                        && trust::picks_resplit(
                            rand::random::<u64>() % 1_000_000,
                            &integrity_in(tx)?,
                        )
                    {
                        tx.exec(
                            "UPDATE workunits SET check_state = 4 WHERE id = ?1",
                            params![u64_to_db(workunit_id)],
                        )?;
                    }
                    canonical
                }
            }
        }
        1 => digest_from(canonical)
            .ok_or_else(|| StoreError::Db("valid workunit without digest".into()))?,
        _ => return quarantine_all(tx, evidence, now_ms),
    };
    // Grade every returned result not graded yet (including late ones after validation). A
    // lost vote is recorded (history, status page) but is no evidence against the worker.
    for r in reps.iter().filter(|r| r.state == ReplicaState::Returned) {
        let Some(d) = r.digest else { continue };
        let good = scheduler::agrees(&canonical, &d);
        let changed = tx.exec(
            "UPDATE results SET outcome = ?2 WHERE id = ?1 AND outcome = 0",
            params![u64_to_db(r.id), if good { 1 } else { 2 }],
        )?;
        if changed == 1 {
            tx.count_vote(r.worker_id, good)?;
        }
    }
    // After the grading, so the quarantine sees this workunit settled.
    quarantine_all(tx, evidence, now_ms)
}

/// Applies the quarantine rule to each worker that just failed a check.
fn quarantine_all(tx: Tx, workers: Vec<u64>, now_ms: i64) -> StoreResult<()> {
    for w in workers {
        super::quarantine::check(tx, w, now_ms)?;
    }
    Ok(())
}

/// Expires the leases past their deadline, each with the transitioner; returns how many. A
/// lease another coordinator expired a moment ago is not counted twice.
pub(super) fn expire(tx: Tx, now_ms: i64) -> StoreResult<u64> {
    let ids = tx.query(
        "SELECT id, workunit_id FROM results WHERE state = 0 AND deadline_ms < ?1 ORDER BY workunit_id, id",
        params![now_ms],
    )?;
    let mut n = 0;
    for r in &ids {
        let changed = tx.exec(
            "UPDATE results SET state = ?2 WHERE id = ?1 AND state = 0",
            params![r.i64(0)?, replica_code(ReplicaState::Expired)],
        )?;
        if changed == 1 {
            retransition(tx, r.u64(1)?, now_ms)?;
            n += 1;
        }
    }
    Ok(n)
}
