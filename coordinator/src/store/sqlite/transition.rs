//! The transitioner inside a SQLite transaction: replicas, check grading, expiry.

use rusqlite::{Connection, OptionalExtension, params};

use super::exec;
use crate::scheduler::{self, Anchor, QuorumPolicy, ReplicaState, ReplicaView, Transition};
use crate::store::codes::{
    KIND_PERFT, db_to_u64, digest_from, replica_code, replica_state, trust_code, trust_level,
    u64_to_db,
};
use crate::store::{StoreError, StoreResult};
use crate::trust::{self, Integrity};
use crate::validator::Digest;

pub(super) fn replicas(tx: &Connection, workunit_id: u64) -> StoreResult<Vec<ReplicaView>> {
    let mut st = tx.prepare_cached(
        "SELECT r.id, r.worker_id, r.state, r.digest, o.trusted FROM results r JOIN workers o ON o.id = r.worker_id
         WHERE r.workunit_id = ?1",
    )?;
    let rows = st.query_map([u64_to_db(workunit_id)], |r| {
        Ok(ReplicaView {
            id: db_to_u64(r.get(0)?),
            worker_id: db_to_u64(r.get(1)?),
            state: replica_state(r.get(2)?),
            digest: digest_from(r.get(3)?),
            trusted: trust_level(r.get(4)?).is_trusted(),
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The integrity settings stored by [`Store::set_integrity`] (defaults where unset).
pub(super) fn integrity_in(tx: &Connection) -> StoreResult<Integrity> {
    let mut st = tx.prepare_cached("SELECT key, value FROM settings")?;
    let pairs: Vec<(String, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(Integrity::from_settings(
        pairs.iter().map(|(k, v)| (k.as_str(), db_to_u64(*v))),
    ))
}

/// Adds `by` to a counter in the settings table (the cost of checking, for the status page).
pub(super) fn bump_setting(tx: &Connection, key: &str, by: u64) -> StoreResult<()> {
    exec(
        tx,
        "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = value + ?2",
        params![key, u64_to_db(by)],
    )?;
    Ok(())
}

/// Grades the returned results of a workunit the coordinator checked against its own digest:
/// a match is a passed secret check (trust grows), a mismatch a failed one (trust is lost at
/// once; evidence for quarantine). Returns the workers that failed.
pub(super) fn grade_checks(
    tx: &Connection,
    workunit_id: u64,
    verified: &Digest,
) -> StoreResult<Vec<u64>> {
    let integrity = integrity_in(tx)?;
    let rows: Vec<(i64, i64, Option<Vec<u8>>)> = tx
        .prepare_cached(
            "SELECT id, worker_id, digest FROM results WHERE workunit_id = ?1 AND state = 1 AND checked = 0",
        )?
        .query_map([u64_to_db(workunit_id)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut failed = Vec::new();
    for (id, worker, digest) in rows {
        let good = digest_from(digest).is_some_and(|d| d == *verified);
        exec(
            tx,
            "UPDATE results SET checked = ?2 WHERE id = ?1",
            params![id, if good { 1 } else { 2 }],
        )?;
        if good {
            let (level, passed): (i64, i64) = tx
                .prepare_cached(
                    "UPDATE workers SET checks_passed = checks_passed + 1 WHERE id = ?1 RETURNING trusted, checks_passed",
                )?
                .query_row([worker], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let level = trust_level(level);
            let after = trust::after_passed_check(level, db_to_u64(passed), &integrity);
            if after != level {
                exec(
                    tx,
                    "UPDATE workers SET trusted = ?2 WHERE id = ?1",
                    params![worker, trust_code(after)],
                )?;
            }
        } else {
            fail_check(tx, db_to_u64(worker))?;
            failed.push(db_to_u64(worker));
        }
    }
    Ok(failed)
}

/// Records a failed check against a worker: its trust is gone at once.
pub(super) fn fail_check(tx: &Connection, worker_id: u64) -> StoreResult<()> {
    exec(
        tx,
        "UPDATE workers SET checks_failed = checks_failed + 1, trusted = 0 WHERE id = ?1",
        [u64_to_db(worker_id)],
    )?;
    Ok(())
}

/// Runs the transitioner on one workunit and writes its verdict (and the verdict on each
/// returned result, with the workers' vote counts) in the same transaction. A perft workunit
/// needs an anchored quorum ([`scheduler::transition_anchored`]); an unanchored or contested
/// one asks for a coordinator check, and a checked one grades its results as checks.
pub(super) fn retransition(tx: &Connection, workunit_id: u64, now_ms: i64) -> StoreResult<()> {
    type Row = (
        i64,
        i64,
        i64,
        Option<Vec<u8>>,
        i64,
        Option<i64>,
        Option<Vec<u8>>,
        i64,
    );
    let (state, quorum, max_results, canonical, kind, known, verified, check_state): Row = tx
        .prepare_cached(
            "SELECT state, quorum, max_results, canonical_digest, kind, known_nodes, verified_digest, check_state
             FROM workunits WHERE id = ?1",
        )?
        .query_row([u64_to_db(workunit_id)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
        })
        .optional()?
        .ok_or(StoreError::UnknownWorkunit(workunit_id))?;
    let verified = digest_from(verified);
    let mut evidence = Vec::new();
    if let Some(v) = &verified {
        evidence = grade_checks(tx, workunit_id, v)?;
    }
    let reps = replicas(tx, workunit_id)?;
    let want_check = |tx: &Connection| -> StoreResult<()> {
        if check_state == 0 {
            exec(
                tx,
                "UPDATE workunits SET check_state = 1 WHERE id = ?1",
                [u64_to_db(workunit_id)],
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
                    exec(
                        tx,
                        "UPDATE workunits SET needed = ?2, trusted_only = ?3 WHERE id = ?1",
                        params![u64_to_db(workunit_id), needed, trusted_only],
                    )?;
                    let digests: std::collections::BTreeSet<Digest> = reps
                        .iter()
                        .filter(|r| r.state == ReplicaState::Returned)
                        .filter_map(|r| r.digest)
                        .collect();
                    // Contested or agreed without an anchor: the coordinator looks itself.
                    if anchor.required && verified.is_none() && (trusted_only || digests.len() > 1)
                    {
                        want_check(tx)?;
                    }
                    return quarantine_all(tx, evidence, now_ms);
                }
                Transition::Failed => {
                    exec(
                        tx,
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
                    exec(tx,
                        "UPDATE workunits SET state = 1, needed = 0, trusted_only = 0, reverify = 0, completed_ms = ?2, canonical_result_id = ?3,
                         canonical_digest = ?4, nodes = (SELECT nodes FROM results WHERE id = ?3) WHERE id = ?1",
                        params![u64_to_db(workunit_id), now_ms, u64_to_db(winner.id), canonical.to_vec()],
                    )?;
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
        let changed = exec(
            tx,
            "UPDATE results SET outcome = ?2 WHERE id = ?1 AND outcome = 0",
            params![u64_to_db(r.id), if good { 1 } else { 2 }],
        )?;
        if changed == 1 {
            let col = if good { "valid" } else { "lost_votes" };
            exec(
                tx,
                &format!("UPDATE workers SET {col} = {col} + 1 WHERE id = ?1"),
                [u64_to_db(r.worker_id)],
            )?;
        }
    }
    // After the grading, so the quarantine sees this workunit settled.
    quarantine_all(tx, evidence, now_ms)
}

/// Applies the quarantine rule to each worker that just failed a check.
pub(super) fn quarantine_all(tx: &Connection, workers: Vec<u64>, now_ms: i64) -> StoreResult<()> {
    for w in workers {
        super::quarantine::check(tx, w, now_ms)?;
    }
    Ok(())
}

pub(super) fn expire(tx: &Connection, now_ms: i64) -> StoreResult<u64> {
    let ids: Vec<(i64, i64)> = {
        let mut st = tx.prepare_cached(
            "SELECT id, workunit_id FROM results WHERE state = 0 AND deadline_ms < ?1",
        )?;
        st.query_map([now_ms], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?
    };
    for (id, wu) in &ids {
        exec(
            tx,
            "UPDATE results SET state = ?2 WHERE id = ?1",
            params![id, replica_code(ReplicaState::Expired)],
        )?;
        retransition(tx, db_to_u64(*wu), now_ms)?;
    }
    Ok(ids.len() as u64)
}
