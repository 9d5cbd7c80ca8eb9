//! Conformance (both backends, instantiated by `conformance!`): the integrity rules of issue 30
//! in the store — griefers at the result cap, split start positions checked by their published
//! totals, trust spread over time and lost by giving work back.

use std::collections::BTreeMap;

use super::conformance::{ALL, sub, unknown_campaign};
use super::db::Backend;
use crate::campaign::NewCampaign;
use crate::store::{CheckOutcome, Store, Submission};
use crate::trust::Integrity;

pub(crate) fn griefing_untrusted_results_at_the_cap_never_fail_a_workunit<S: Backend>(s: &S) {
    let c = s
        .create_campaign(&NewCampaign::new(2, 2, Some(3), vec![518]).unwrap(), 0)
        .unwrap();
    let g: Vec<u64> = (0..4)
        .map(|i| s.register_worker(&format!("g{i}"), b"h", "e", 0).unwrap())
        .collect();
    // Three griefers, a fabrication each: the cap is reached without a quorum.
    for (i, &w) in g.iter().take(3).enumerate() {
        let l = s.assign(w, &ALL, i as i64, 1000).unwrap().unwrap();
        s.submit(w, l.lease_id, &sub(400 + i as u64, i as u8 + 1), i as i64)
            .unwrap();
    }
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(rows[0].status, "open", "griefers never fail a workunit");
    assert!(
        s.assign(g[3], &ALL, 5, 1000).unwrap().is_none(),
        "beyond the cap, replicas only for trusted workers"
    );
    // Trusted workers settle it.
    let t: Vec<u64> = (0..2)
        .map(|i| {
            let w = s.register_worker(&format!("t{i}"), b"h", "e", 0).unwrap();
            s.set_trust(w, true).unwrap();
            w
        })
        .collect();
    let a = s.assign(t[0], &ALL, 6, 1000).unwrap().unwrap();
    s.submit(t[0], a.lease_id, &sub(400, 1), 7).unwrap();
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!(
        (rows[0].status.as_str(), rows[0].nodes),
        ("valid", Some(400))
    );
    let _ = t[1];
}

/// Issue 30: two trusted colluders answer every sub-unit of SP 518's depth-3 split, one of them
/// one node too many. Everything is valid, but the start sums to one more than its published
/// 8,902: every sub-unit is reopened for one more hidden replica, and honest workers' recounts
/// replace the lie.
pub(crate) fn a_split_start_that_misses_its_known_total_is_recounted<S: Backend>(s: &S) {
    use c960_common::perft;
    let c = s
        .create_campaign(
            &NewCampaign::new(3, 2, None, vec![518])
                .unwrap()
                .split_by("1")
                .unwrap(),
            0,
        )
        .unwrap();
    let (_, rows) = s.table(c.id).unwrap();
    let truth: BTreeMap<u64, u64> = rows
        .iter()
        .map(|r| {
            let pos = c960_common::Position::from_fen(&r.fen).unwrap();
            (r.workunit_id, perft(&pos, r.depth))
        })
        .collect();
    assert_eq!(truth.values().sum::<u64>(), 8902);
    let liar_unit = rows[0].workunit_id;
    let answer = |wu: u64, lie: bool| {
        let n = truth[&wu] + u64::from(lie);
        let mut d = [0u8; 32];
        d[..8].copy_from_slice(&n.to_le_bytes());
        Submission {
            digest: d,
            ..sub(n, 0)
        }
    };
    let colluders = ["c0", "c1"].map(|n| {
        let w = s.register_worker(n, b"k", "e", 0).unwrap();
        s.set_trust(w, true).unwrap();
        w
    });
    let mut t = 1;
    for w in colluders {
        while let Some(l) = s.assign(w, &ALL, t, 100_000).unwrap() {
            s.submit(
                w,
                l.lease_id,
                &answer(l.workunit_id, l.workunit_id == liar_unit),
                t,
            )
            .unwrap();
            t += 1;
        }
    }
    // Every sub-unit was valid a moment: the known total reopened them all.
    let (_, rows) = s.table(c.id).unwrap();
    assert!(rows.iter().all(|r| r.status != "valid"), "{rows:?}");
    // Honest trusted workers (a recount by untrusted ones would wait for an anchor).
    let honest: Vec<u64> = (0..3)
        .map(|i| {
            let w = s.register_worker(&format!("h{i}"), b"k", "e", 0).unwrap();
            s.set_trust(w, true).unwrap();
            w
        })
        .collect();
    for _ in 0..3 {
        for &w in &honest {
            while let Some(l) = s.assign(w, &ALL, t, 100_000).unwrap() {
                s.submit(w, l.lease_id, &answer(l.workunit_id, false), t)
                    .unwrap();
                t += 1;
            }
        }
    }
    let (_, rows) = s.table(c.id).unwrap();
    for r in &rows {
        assert_eq!(
            (r.status.as_str(), r.nodes),
            ("valid", Some(truth[&r.workunit_id])),
            "{r:?}"
        );
    }
}

/// Issue 30: trust takes checks spread over time, and giving work back as a pattern costs it.
pub(crate) fn trust_takes_time_and_giving_work_back_costs_it<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        trust_after_checks: 2,
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        trust_check_spacing_ms: 1_000,
        ..Integrity::default()
    })
    .unwrap();
    unknown_campaign(s, (0..12).collect());
    let w = s.register_worker("w", b"h", "e", 0).unwrap();
    let ls = s.assign_batch(w, &ALL, 1, 100_000, 3, 0).unwrap();
    for (i, l) in ls.iter().enumerate() {
        s.submit(w, l.lease_id, &sub(i as u64, i as u8), 2).unwrap();
    }
    let check = |wu: u64, d: u8, at: i64| {
        let outcome = CheckOutcome::Verified {
            digest: [d; 32],
            nodes: 1,
        };
        s.record_check(wu, &outcome, at).unwrap()
    };
    // Two passed checks 10 ms apart count once.
    check(ls[0].workunit_id, 0, 10);
    check(ls[1].workunit_id, 1, 20);
    let rec = s.worker(w).unwrap().unwrap();
    assert_eq!((rec.trust.as_str(), rec.checks_passed), ("untrusted", 2));
    // A third, a second later, is the second that counts.
    check(ls[2].workunit_id, 2, 1_100);
    assert_eq!(s.worker(w).unwrap().unwrap().trust, "earned");
    // Five leases given back with no valid result: trust is gone (no quarantine).
    for t in 0..5 {
        let l = s.assign(w, &ALL, 2_000 + t, 100_000).unwrap().unwrap();
        s.fail(w, l.lease_id, "engine crashed", 2_000 + t).unwrap();
    }
    let rec = s.worker(w).unwrap().unwrap();
    assert_eq!((rec.trust.as_str(), rec.quarantined), ("untrusted", false));
}
