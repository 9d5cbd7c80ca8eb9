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
//! Each backend runs the quarantine inside the transaction that found the evidence (SQLite:
//! `store/sqlite/quarantine.rs`), so a quarantine is all-or-nothing like every other state
//! change. This module holds the rules' documentation and their tests.

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
            implausible: false,
        }
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
            check_rate_trusted_ppm: 0,
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
        assert!(
            wanted
                .iter()
                .all(|r| r.purpose == crate::store::CheckPurpose::Resplit)
                && wanted.len() == 2,
            "{wanted:?}"
        );
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
}
