//! Quarantine: a worker caught lying (a failed check, or too many refused results) or banned by
//! the operator gets no more work, its pending results stop counting, and every workunit it
//! helped validate is re-verified without it. Losing a vote is no evidence and never
//! quarantines anyone (see [`crate::trust`]): an honest worker outvoted by colluding liars keeps
//! its standing.
//!
//! Re-verification reopens the workunit: the quarantined worker's result is voided (state
//! `error`, outcome `invalid`), the other results go back to ungraded (their workers' vote
//! counts are rolled back so the regrading does not count them twice), and the transitioner asks
//! for as many fresh replicas as the quorum needs. The honest results still vote, but the quorum
//! must now be reached without the quarantined worker (and, for perft, be anchored again: see
//! [`crate::scheduler::transition_anchored`]); a peer that had agreed with a lie loses its vote
//! in turn. Until then the table shows such a workunit as `reverifying`.
//!
//! These functions run inside the store's transactions (they take the open transaction), so a
//! quarantine is all-or-nothing like every other state change.

use std::collections::BTreeSet;

use rusqlite::{Connection, OptionalExtension, params};

use crate::scheduler::ReplicaState;
use crate::store::{StoreError, StoreResult, db_to_u64, integrity_in, retransition, u64_to_db};
use crate::trust;
use crate::validator::Digest;

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
            params![id, ReplicaState::Abandoned.to_db()],
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
            params![id, ReplicaState::Error.to_db()],
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
            params![id, ReplicaState::Error.to_db()],
        )?;
        reopen(tx, wu)?;
        touched.insert(wu);
    }

    for wu in touched {
        retransition(tx, db_to_u64(wu), now_ms)?;
    }
    Ok(())
}

/// Reopens a settled workunit for re-verification: its canonical result is withdrawn, the
/// returned results go back to ungraded, and their workers' vote counts are rolled back so that
/// the regrading counts each once (a lost vote on a value found wrong is no longer lost). The
/// caller runs the transitioner.
fn reopen(tx: &Connection, wu: i64) -> StoreResult<()> {
    tx.execute(
        "UPDATE workers SET valid = valid - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.state = 1 AND r.outcome = 1),
                            lost_votes = lost_votes - (SELECT COUNT(*) FROM results r WHERE r.workunit_id = ?1 AND r.worker_id = workers.id AND r.state = 1 AND r.outcome = 2)
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
    Ok(())
}

/// A later, independent computation (the re-split cross-check, [`crate::checker`]) found the
/// true digest of a workunit, and it differs from what the workunit's grades rest on (its
/// canonical result, or an earlier check of the coordinator's). The truth replaces the earlier
/// check; a value that disagrees with it is reopened; checks graded against the old value are
/// graded again: a worker that failed one by telling the truth has that evidence withdrawn
/// ([`restore`]), one that passed with the wrong value has failed a check, and the workers
/// behind a wrong canonical result fail theirs when the transitioner grades them.
pub(crate) fn overturn(
    tx: &Connection,
    workunit_id: u64,
    truth: &Digest,
    now_ms: i64,
) -> StoreResult<()> {
    let wu = u64_to_db(workunit_id);
    let Some((state, canonical)) = tx
        .query_row(
            "SELECT state, canonical_digest FROM workunits WHERE id = ?1",
            [wu],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<Vec<u8>>>(1)?)),
        )
        .optional()?
    else {
        return Err(StoreError::UnknownWorkunit(workunit_id));
    };
    tx.execute(
        "UPDATE workunits SET verified_digest = ?2, check_state = 2 WHERE id = ?1",
        params![wu, truth.to_vec()],
    )?;
    match state {
        1 if canonical.as_deref() != Some(&truth[..]) => reopen(tx, wu)?,
        2 => {
            tx.execute(
                "UPDATE workunits SET state = 0, completed_ms = NULL WHERE id = ?1",
                [wu],
            )?;
        }
        _ => {}
    }
    let graded: Vec<(i64, i64, Option<Vec<u8>>, i64)> = {
        let mut st = tx.prepare_cached(
            "SELECT id, worker_id, digest, checked FROM results WHERE workunit_id = ?1 AND checked IN (1, 2)",
        )?;
        st.query_map([wu], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
            .collect::<Result<_, _>>()?
    };
    let (mut cleared, mut failed) = (Vec::new(), Vec::new());
    for (id, worker, digest, checked) in graded {
        let right = digest.as_deref() == Some(&truth[..]);
        let (now_checked, sql) = match (checked, right) {
            (2, true) => (
                1,
                "UPDATE workers SET checks_failed = MAX(checks_failed - 1, 0), checks_passed = checks_passed + 1 WHERE id = ?1",
            ),
            (1, false) => (
                2,
                "UPDATE workers SET checks_passed = MAX(checks_passed - 1, 0), checks_failed = checks_failed + 1, trusted = 0 WHERE id = ?1",
            ),
            _ => continue,
        };
        tx.execute(
            "UPDATE results SET checked = ?2 WHERE id = ?1",
            params![id, now_checked],
        )?;
        tx.execute(sql, [worker])?;
        if right {
            cleared.push(db_to_u64(worker));
        } else {
            failed.push(db_to_u64(worker));
        }
    }
    tracing::warn!(
        workunit = workunit_id,
        cleared = cleared.len(),
        failed = failed.len(),
        "a check was overturned by an independent recomputation"
    );
    retransition(tx, workunit_id, now_ms)?;
    for w in cleared {
        restore(tx, w, now_ms)?;
    }
    for w in failed {
        check(tx, w, now_ms)?;
    }
    Ok(())
}

/// Gives a worker back what withdrawn evidence took ([`trust::standing_after_rollback`]): its
/// trust as far as its checks earn it, and, when what is left no longer excludes it, the end of
/// its quarantine; its results the quarantine voided vote again (a voided valid vote is taken
/// off its count first, so the regrading counts it once).
pub(crate) fn restore(tx: &Connection, worker_id: u64, now_ms: i64) -> StoreResult<()> {
    let w = u64_to_db(worker_id);
    type Row = (i64, i64, i64, i64, bool, bool);
    let Some((level, passed, failed, refused, banned, quarantined)): Option<Row> = tx
        .query_row(
            "SELECT trusted, checks_passed, checks_failed, refused, banned != 0, quarantined_ms IS NOT NULL
             FROM workers WHERE id = ?1",
            [w],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .optional()?
    else {
        return Ok(());
    };
    let (after, stays) = trust::standing_after_rollback(
        trust::TrustLevel::from_db(level),
        db_to_u64(passed),
        db_to_u64(failed),
        db_to_u64(refused),
        banned,
        max_strikes(tx)?,
        &integrity_in(tx)?,
    );
    tx.execute(
        "UPDATE workers SET trusted = ?2 WHERE id = ?1",
        params![w, after as i64],
    )?;
    if !quarantined || stays {
        return Ok(());
    }
    tracing::info!(
        worker = worker_id,
        "evidence withdrawn: quarantine lifted, its results vote again"
    );
    tx.execute(
        "UPDATE workers SET quarantined_ms = NULL WHERE id = ?1",
        [w],
    )?;
    let voided: Vec<(i64, i64, i64)> = {
        let mut st = tx.prepare_cached(
            "SELECT id, workunit_id, outcome FROM results WHERE worker_id = ?1 AND state = ?2 AND error = 'quarantined'",
        )?;
        st.query_map(params![w, ReplicaState::Error.to_db()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?
    };
    let mut touched = BTreeSet::new();
    for (id, wu, outcome) in voided {
        if outcome == 2 {
            tx.execute(
                "UPDATE workers SET valid = MAX(valid - 1, 0) WHERE id = ?1",
                [w],
            )?;
        }
        tx.execute(
            "UPDATE results SET state = ?2, outcome = 0, error = NULL WHERE id = ?1",
            params![id, ReplicaState::Returned.to_db()],
        )?;
        touched.insert(wu);
    }
    for wu in touched {
        retransition(tx, db_to_u64(wu), now_ms)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use c960_common::wire::{Capabilities, PerftResult, WorkResult};

    use crate::campaign::NewCampaign;
    use crate::store::{CheckOutcome, SqliteStore, Store, Submission};

    fn sub(nodes: u64, tag: u8) -> Submission {
        Submission {
            result: WorkResult::Perft(PerftResult {
                nodes,
                divide: vec![],
            }),
            digest: [tag; 32],
            elapsed_ms: 1,
            engine: "test 0".into(),
        }
    }

    /// Worker L agrees with honest H on workunit 1 (the truth), then lies on workunit 2, where
    /// it loses the vote (no evidence) and then fails the coordinator's check (evidence): it is
    /// quarantined, workunit 1 is reopened (`reverifying`) and validated again by H and a third
    /// worker, and L's counts stay as history.
    #[test]
    fn quarantine_reopens_what_the_worker_validated() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        s.set_max_strikes(1).unwrap();
        let c = s
            .create_campaign(&NewCampaign::new(1, 2, None, vec![0, 1]).unwrap(), 0)
            .unwrap();
        let [l, h, x] = ["l", "h", "x"].map(|n| s.register_worker(n, b"k", "e", 0).unwrap());
        let l1 = s
            .assign(l, &Capabilities::builtin(), 0, 1000)
            .unwrap()
            .unwrap();
        let h1 = s
            .assign(h, &Capabilities::builtin(), 0, 1000)
            .unwrap()
            .unwrap();
        assert_eq!(l1.workunit_id, h1.workunit_id);
        s.submit(l, l1.lease_id, &sub(20, 1), 1).unwrap();
        s.submit(h, h1.lease_id, &sub(20, 1), 1).unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(rows[0].status, "valid");
        assert_eq!(s.worker(h).unwrap().unwrap().valid, 1);

        // Workunit 2: L lies, H and X tell the truth; L loses its vote.
        let l2 = s
            .assign(l, &Capabilities::builtin(), 2, 1000)
            .unwrap()
            .unwrap();
        let h2 = s
            .assign(h, &Capabilities::builtin(), 2, 1000)
            .unwrap()
            .unwrap();
        s.submit(l, l2.lease_id, &sub(99, 9), 3).unwrap();
        s.submit(h, h2.lease_id, &sub(20, 2), 3).unwrap();
        let x2 = s
            .assign(x, &Capabilities::builtin(), 4, 1000)
            .unwrap()
            .unwrap();
        assert_eq!(x2.workunit_id, l2.workunit_id);
        s.submit(x, x2.lease_id, &sub(20, 2), 5).unwrap();
        // A lost vote is no evidence: L keeps its standing until a check catches it.
        let lw = s.worker(l).unwrap().unwrap();
        assert!(!lw.quarantined);
        // The contested workunit was queued for the coordinator's own check, which finds the
        // truth: L failed a check and is quarantined.
        let wanted = s.checks_wanted(10).unwrap();
        assert_eq!(wanted.len(), 1);
        assert_eq!(wanted[0].workunit_id, l2.workunit_id);
        s.record_check(
            l2.workunit_id,
            &CheckOutcome::Verified {
                digest: [2; 32],
                nodes: 20,
            },
            5,
        )
        .unwrap();
        let lw = s.worker(l).unwrap().unwrap();
        assert!(lw.quarantined && !lw.banned);
        assert_eq!((lw.lost_votes, lw.valid, lw.checks_failed), (1, 1, 1));
        assert_eq!(s.worker(h).unwrap().unwrap().checks_passed, 1);

        // Workunit 1 is open again, wants one replica, which H (already returned) cannot take.
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(
            (rows[0].status.as_str(), rows[1].status.as_str()),
            ("reverifying", "valid")
        );
        assert_eq!(
            s.worker(h).unwrap().unwrap().valid,
            1,
            "H's vote on wu 1 rolled back"
        );
        assert!(
            s.assign(h, &Capabilities::builtin(), 6, 1000)
                .unwrap()
                .is_none()
        );
        let x1 = s
            .assign(x, &Capabilities::builtin(), 6, 1000)
            .unwrap()
            .unwrap();
        assert_eq!(x1.workunit_id, l1.workunit_id);
        s.submit(x, x1.lease_id, &sub(20, 1), 7).unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(
            (rows[0].status.as_str(), rows[0].agreeing_results),
            ("valid", 2)
        );
        let rs = s.results(l1.workunit_id).unwrap();
        let voided = rs.iter().find(|r| r.id == l1.lease_id).unwrap();
        assert_eq!(
            (voided.state.as_str(), voided.outcome.as_str()),
            ("error", "invalid")
        );
        assert_eq!(s.worker(h).unwrap().unwrap().valid, 2);
        assert_eq!(s.worker(x).unwrap().unwrap().valid, 2);
    }

    /// The coordinator's first check of a workunit is wrong (a fault on its side): honest H,
    /// who disagreed with liar L, fails it and is quarantined, and colluder X validates L's
    /// value. An independent recomputation then finds H's value: H's evidence is withdrawn, its
    /// quarantine lifted and its result votes again; L and X failed the check now and are
    /// quarantined; the value is reopened and validated with H's truth.
    #[test]
    fn an_overturned_check_lifts_the_quarantine_of_the_worker_that_told_the_truth() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        // Depth 9: no public answer, so only checks and trusted workers anchor.
        let c = s
            .create_campaign(&NewCampaign::new(9, 2, None, vec![0, 1]).unwrap(), 0)
            .unwrap();
        let [h, l, x, y] =
            ["h", "l", "x", "y"].map(|n| s.register_worker(n, b"k", "e", 0).unwrap());
        let caps = Capabilities::builtin();
        let h1 = s.assign(h, &caps, 0, 1000).unwrap().unwrap();
        let l1 = s.assign(l, &caps, 0, 1000).unwrap().unwrap();
        assert_eq!(h1.workunit_id, l1.workunit_id);
        let wu = h1.workunit_id;
        s.submit(h, h1.lease_id, &sub(20, 1), 1).unwrap();
        s.submit(l, l1.lease_id, &sub(99, 9), 1).unwrap();
        assert_eq!(s.checks_wanted(10).unwrap()[0].workunit_id, wu);
        // The faulty check agrees with the liar.
        s.record_check(
            wu,
            &CheckOutcome::Verified {
                digest: [9; 32],
                nodes: 99,
            },
            2,
        )
        .unwrap();
        let hw = s.worker(h).unwrap().unwrap();
        assert!(hw.quarantined && hw.checks_failed == 1);
        assert!(s.assign(h, &caps, 3, 1000).is_err(), "quarantined");
        let x1 = s.assign(x, &caps, 3, 1000).unwrap().unwrap();
        assert_eq!(x1.workunit_id, wu);
        s.submit(x, x1.lease_id, &sub(99, 9), 4).unwrap();
        assert_eq!(s.table(c.id).unwrap().1[0].nodes, Some(99));

        s.overturn_check(wu, &[1; 32], 5).unwrap();
        let hw = s.worker(h).unwrap().unwrap();
        assert!(!hw.quarantined, "evidence withdrawn: quarantine lifted");
        assert_eq!(
            (hw.checks_failed, hw.checks_passed, hw.lost_votes),
            (0, 1, 0)
        );
        for liar in [l, x] {
            let w = s.worker(liar).unwrap().unwrap();
            assert!(w.quarantined && w.checks_failed == 1 && w.trust == "untrusted");
            assert_eq!(w.valid, 0, "their votes on the wrong value are rolled back");
        }
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(rows[0].status, "reverifying");
        // H's result votes again; one more right answer settles the workunit.
        let y1 = s.assign(y, &caps, 6, 1000).unwrap().unwrap();
        assert_eq!(y1.workunit_id, wu);
        s.submit(y, y1.lease_id, &sub(20, 1), 7).unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(
            (
                rows[0].status.as_str(),
                rows[0].nodes,
                rows[0].agreeing_results
            ),
            ("valid", Some(20), 2)
        );
        assert_eq!(s.worker(h).unwrap().unwrap().valid, 1);
        // And H gets work again.
        let h2 = s.assign(h, &caps, 8, 1000).unwrap().unwrap();
        assert_ne!(h2.workunit_id, wu);
    }

    /// Two trusted colluders validate a lie between them (their trust anchors it, nothing
    /// contests it). The value is drawn for the re-split cross-check; the recount disagrees, so
    /// the value is reopened and both lose their standing; honest workers then settle it. A
    /// value the recount confirms stays valid.
    #[test]
    fn a_resplit_recount_overturns_a_lie_of_two_trusted_colluders() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        s.set_integrity(&crate::trust::Integrity {
            resplit_rate_ppm: 1_000_000,
            ..crate::trust::Integrity::default()
        })
        .unwrap();
        let c = s
            .create_campaign(&NewCampaign::new(9, 2, None, vec![0, 1]).unwrap(), 0)
            .unwrap();
        let [t1, t2, h, x] =
            ["t1", "t2", "h", "x"].map(|n| s.register_worker(n, b"k", "e", 0).unwrap());
        for t in [t1, t2] {
            s.set_trust(t, true).unwrap();
        }
        let caps = Capabilities::builtin();
        let mut lies = Vec::new();
        for (t, tag, nodes) in [(t1, 9, 99), (t2, 9, 99), (t1, 2, 30), (t2, 2, 30)] {
            let l = s.assign(t, &caps, 0, 1000).unwrap().unwrap();
            s.submit(t, l.lease_id, &sub(nodes, tag), 1).unwrap();
            lies.push(l.workunit_id);
        }
        let (lie, truth) = (lies[0], lies[2]);
        assert_ne!(lie, truth);
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!((rows[0].nodes, rows[1].nodes), (Some(99), Some(30)));
        let wanted = s.checks_wanted(10).unwrap();
        assert!(wanted.iter().all(|r| r.resplit) && wanted.len() == 2);
        s.record_check(
            truth,
            &CheckOutcome::Verified {
                digest: [2; 32],
                nodes: 30,
            },
            2,
        )
        .unwrap();
        s.record_check(
            lie,
            &CheckOutcome::Verified {
                digest: [1; 32],
                nodes: 20,
            },
            2,
        )
        .unwrap();
        assert!(s.checks_wanted(10).unwrap().is_empty());
        for t in [t1, t2] {
            let w = s.worker(t).unwrap().unwrap();
            assert!(w.quarantined && w.trust == "untrusted" && w.checks_failed == 1);
        }
        let cost = s.check_cost().unwrap();
        assert_eq!((cost.resplits_run, cost.resplits_overturned), (2, 1));
        let (_, rows) = s.table(c.id).unwrap();
        // The lie is reopened; so is the value the recount confirmed, as every value its
        // validators (caught lying elsewhere) helped validate.
        assert_eq!(
            (rows[0].status.as_str(), rows[1].status.as_str()),
            ("reverifying", "reverifying")
        );
        for w in [h, x] {
            let l = s.assign(w, &caps, 3, 1000).unwrap().unwrap();
            assert_eq!(l.workunit_id, lie);
            s.submit(w, l.lease_id, &sub(20, 1), 4).unwrap();
        }
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(
            (rows[0].status.as_str(), rows[0].nodes),
            ("valid", Some(20))
        );
    }

    #[test]
    fn ban_releases_leases_and_unban_forgives() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        s.create_campaign(&NewCampaign::new(1, 2, None, vec![0]).unwrap(), 0)
            .unwrap();
        let w = s.register_worker("w", b"k", "e", 0).unwrap();
        s.assign(w, &Capabilities::builtin(), 0, 1000)
            .unwrap()
            .unwrap();
        assert_eq!(s.open_leases(w, 0).unwrap(), 1);
        let rec = s.set_banned(w, true, 1).unwrap();
        assert!(rec.banned && rec.quarantined);
        assert_eq!(s.open_leases(w, 1).unwrap(), 0);
        assert_eq!(s.progress().unwrap()[0].queued_replicas, 2);
        let rec = s.set_banned(w, false, 2).unwrap();
        assert!(!rec.banned && !rec.quarantined);
        assert!(s.set_banned(999, true, 3).is_err());
    }

    /// Quorum 2 with room for only two results: liar L and honest H disagree and the workunit
    /// fails. Banning L reopens it without L's vote, and a third worker settles it.
    #[test]
    fn quarantine_reopens_what_the_worker_made_fail() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(&dir.path().join("t.db")).unwrap();
        let c = s
            .create_campaign(&NewCampaign::new(1, 2, Some(2), vec![0]).unwrap(), 0)
            .unwrap();
        let [l, h, x] = ["l", "h", "x"].map(|n| s.register_worker(n, b"k", "e", 0).unwrap());
        let caps = Capabilities::builtin();
        let l1 = s.assign(l, &caps, 0, 1000).unwrap().unwrap();
        let h1 = s.assign(h, &caps, 0, 1000).unwrap().unwrap();
        s.submit(l, l1.lease_id, &sub(99, 9), 1).unwrap();
        s.submit(h, h1.lease_id, &sub(20, 1), 1).unwrap();
        assert_eq!(s.table(c.id).unwrap().1[0].status, "failed");
        assert!(s.assign(x, &caps, 2, 1000).unwrap().is_none());

        s.set_banned(l, true, 3).unwrap();
        assert_eq!(s.table(c.id).unwrap().1[0].status, "open");
        let x1 = s.assign(x, &caps, 4, 1000).unwrap().unwrap();
        assert_eq!(x1.workunit_id, l1.workunit_id);
        s.submit(x, x1.lease_id, &sub(20, 1), 5).unwrap();
        let (_, rows) = s.table(c.id).unwrap();
        assert_eq!(
            (
                rows[0].status.as_str(),
                rows[0].nodes,
                rows[0].agreeing_results
            ),
            ("valid", Some(20), 2)
        );
        let p = &s.progress().unwrap()[0];
        assert_eq!((p.valid, p.failed), (1, 0));
    }
}
