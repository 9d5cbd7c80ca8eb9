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
