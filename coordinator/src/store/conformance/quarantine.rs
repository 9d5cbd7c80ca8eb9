//! Conformance (both backends, instantiated by `conformance!`): the quarantine
//! (`store/sql/quarantine.rs`): what a caught or banned worker validated or made fail is
//! re-verified without it, and a check overturned by an independent recomputation gives the
//! worker that told the truth its standing back.

use crate::model::{CheckOutcome, ReplicaState, ResultOutcome, RowStatus, TrustLevel};
use c960_common::wire::Capabilities;

use super::sub;
use crate::store::Store;
use crate::store::db::Backend;
use crate::work::campaign::NewCampaign;

/// The coordinator's first check of a workunit is wrong (a fault on its side): honest H,
/// who disagreed with liar L, fails it and is quarantined, and colluder X validates L's
/// value. An independent recomputation then finds H's value: H's evidence is withdrawn, its
/// quarantine lifted and its result votes again; L and X failed the check now and are
/// quarantined; the value is reopened and validated with H's truth.
pub(crate) fn an_overturned_check_lifts_the_quarantine_of_the_worker_that_told_the_truth<
    S: Backend,
>(
    s: &S,
) {
    // No public answer, so only checks and trusted workers anchor.
    let c = super::unknown_campaign(s, vec![0, 1]);
    let [h, l, x, y] = ["h", "l", "x", "y"].map(|n| s.register_worker(n, b"k", "e", 0).unwrap());
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
        assert!(w.quarantined && w.checks_failed == 1 && w.trust == TrustLevel::Untrusted);
        assert_eq!(w.valid, 0, "their votes on the wrong value are rolled back");
    }
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Reverifying);
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
pub(crate) fn a_resplit_recount_overturns_a_lie_of_two_trusted_colluders<S: Backend>(s: &S) {
    resplit_recounts(s, false);
}

/// [`a_resplit_recount_overturns_a_lie_of_two_trusted_colluders`] with the lie's recount first:
/// the quarantine reopens the other value before its own recount lands, which gives it the
/// truth but overturns nothing (the status page's count of overturned values stays 1).
pub(crate) fn a_recount_of_a_value_reopened_meanwhile_overturns_nothing<S: Backend>(s: &S) {
    resplit_recounts(s, true);
}

fn resplit_recounts<S: Backend>(s: &S, lie_first: bool) {
    s.set_integrity(&crate::integrity::trust::Integrity {
        resplit_rate_ppm: 1_000_000,
        check_rate_trusted_ppm: 0,
        ..crate::integrity::trust::Integrity::default()
    })
    .unwrap();
    let c = super::unknown_campaign(s, vec![0, 1]);
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
            .all(|r| r.purpose == crate::model::CheckPurpose::Resplit)
            && wanted.len() == 2,
        "{wanted:?}"
    );
    let recounts = [
        (
            truth,
            CheckOutcome::Verified {
                digest: [2; 32],
                nodes: 30,
            },
        ),
        (
            lie,
            CheckOutcome::Verified {
                digest: [1; 32],
                nodes: 20,
            },
        ),
    ];
    let order = if lie_first { [1, 0] } else { [0, 1] };
    for i in order {
        s.record_check(recounts[i].0, &recounts[i].1, 2).unwrap();
    }
    assert!(s.checks_wanted(10).unwrap().is_empty());
    for t in [t1, t2] {
        let w = s.worker(t).unwrap().unwrap();
        assert!(w.quarantined && w.trust == TrustLevel::Untrusted && w.checks_failed == 1);
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

pub(crate) fn quarantine_reopens_what_the_worker_validated<S: Backend>(s: &S) {
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
    assert_eq!(rows[0].status, RowStatus::Valid);
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
        (voided.state, voided.outcome),
        (ReplicaState::Error, ResultOutcome::Invalid)
    );
    assert_eq!(s.worker(h).unwrap().unwrap().valid, 2);
    assert_eq!(s.worker(x).unwrap().unwrap().valid, 2);
}
pub(crate) fn ban_releases_leases_and_unban_forgives<S: Backend>(s: &S) {
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
pub(crate) fn quarantine_reopens_what_the_worker_held_at_the_cap<S: Backend>(s: &S) {
    let c = s
        .create_campaign(&NewCampaign::new(1, 2, Some(2), vec![0]).unwrap(), 0)
        .unwrap();
    let [l, h, x] = ["l", "h", "x"].map(|n| s.register_worker(n, b"k", "e", 0).unwrap());
    // Trusted, so that their disagreement at the cap stops the replicas: the workunit waits
    // for the coordinator's count (a failed one reopens the same way).
    for w in [l, h, x] {
        s.set_trust(w, true).unwrap();
    }
    let caps = Capabilities::builtin();
    let l1 = s.assign(l, &caps, 0, 1000).unwrap().unwrap();
    let h1 = s.assign(h, &caps, 0, 1000).unwrap().unwrap();
    s.submit(l, l1.lease_id, &sub(99, 9), 1).unwrap();
    s.submit(h, h1.lease_id, &sub(20, 1), 1).unwrap();
    assert_eq!(s.table(c.id).unwrap().1[0].status, RowStatus::Open);
    assert!(s.assign(x, &caps, 2, 1000).unwrap().is_none());

    s.set_banned(l, true, 3).unwrap();
    assert_eq!(s.table(c.id).unwrap().1[0].status, RowStatus::Open);
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
