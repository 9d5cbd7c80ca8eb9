//! Conformance (both backends, instantiated by `conformance!`): the integrity rules of issue 30
//! in the store — griefers at the result cap, split start positions checked by their published
//! totals, trust spread over time and lost by giving work back.

use crate::model::{CheckOutcome, RowStatus, Submission, TrustLevel};
use std::collections::BTreeMap;

use super::{ALL, sub, unknown_campaign};
use crate::integrity::trust::Integrity;
use crate::store::Store;
use crate::store::db::Backend;
use crate::work::campaign::NewCampaign;

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
    assert_eq!(
        rows[0].status,
        RowStatus::Open,
        "griefers never fail a workunit"
    );
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

/// SP 518's depth-3 split at ply 1 (20 sub-units summing to the published 8,902), with the
/// true value of each sub-unit.
fn split_518<S: Backend>(s: &S) -> (crate::model::Campaign, BTreeMap<u64, u64>) {
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
            (r.workunit_id, c960_common::perft(&pos, r.depth))
        })
        .collect();
    assert_eq!(truth.values().sum::<u64>(), 8902);
    (c, truth)
}

/// An answer to sub-unit `wu`: its true value, or one node more.
fn answer(truth: &BTreeMap<u64, u64>, wu: u64, lie: bool) -> Submission {
    let n = truth[&wu] + u64::from(lie);
    let mut d = [0u8; 32];
    d[..8].copy_from_slice(&n.to_le_bytes());
    Submission {
        digest: d,
        ..sub(n, 0)
    }
}

/// Workers the operator trusts.
fn trusted_workers<S: Backend>(s: &S, names: &[&str]) -> Vec<u64> {
    names
        .iter()
        .map(|n| {
            let w = s.register_worker(n, b"k", "e", 0).unwrap();
            s.set_trust(w, true).unwrap();
            w
        })
        .collect()
}

/// Honest trusted workers (a recount by untrusted ones would wait for an anchor) answer what
/// is open until nothing is: afterwards every sub-unit is valid with its true value.
fn honest_recount_ends_in_the_truth<S: Backend>(
    s: &S,
    c: &crate::model::Campaign,
    truth: &BTreeMap<u64, u64>,
    mut t: i64,
) {
    let honest = trusted_workers(s, &["h0", "h1", "h2"]);
    for _ in 0..3 {
        for &w in &honest {
            while let Some(l) = s.assign(w, &ALL, t, 100_000).unwrap() {
                s.submit(w, l.lease_id, &answer(truth, l.workunit_id, false), t)
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

/// Issue 30: two trusted colluders answer every sub-unit of SP 518's depth-3 split, one of them
/// one node too many. Everything is valid, but the start sums to one more than its published
/// 8,902: every sub-unit is reopened for one more hidden replica, and honest workers' recounts
/// replace the lie.
pub(crate) fn a_split_start_that_misses_its_known_total_is_recounted<S: Backend>(s: &S) {
    // No secret checks: a value with a check queued is left to it (the next test).
    s.set_integrity(&no_secret_checks()).unwrap();
    let (c, truth) = split_518(s);
    let liar_unit = *truth.keys().next().unwrap();
    let mut t = 1;
    for w in trusted_workers(s, &["c0", "c1"]) {
        while let Some(l) = s.assign(w, &ALL, t, 100_000).unwrap() {
            let lie = l.workunit_id == liar_unit;
            s.submit(w, l.lease_id, &answer(&truth, l.workunit_id, lie), t)
                .unwrap();
            t += 1;
        }
    }
    // Every sub-unit was valid a moment: the known total reopened them all.
    let (_, rows) = s.table(c.id).unwrap();
    assert!(
        rows.iter().all(|r| r.status != RowStatus::Valid),
        "{rows:?}"
    );
    honest_recount_ends_in_the_truth(s, &c, &truth, t);
}

fn no_secret_checks() -> Integrity {
    Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        ..Integrity::default()
    }
}

/// A split start whose values miss their published total while each waits for a secret check:
/// the checks are kept (only the coordinator's own computation is evidence against the liars; a
/// recount by a replica would merely outvote them). Verified, the lie's check quarantines both
/// colluders and reopens what they validated; over budget, the lie is recounted by a hidden
/// replica then, and nobody is quarantined.
fn missed_total_with_a_check_queued<S: Backend>(s: &S, over_budget: bool, max_strikes: u64) {
    s.set_integrity(&no_secret_checks()).unwrap();
    s.set_max_strikes(max_strikes).unwrap();
    let (c, truth) = split_518(s);
    let liar_unit = *truth.keys().next().unwrap();
    let colluders = trusted_workers(s, &["c0", "c1"]);
    // The second colluder's answers are all drawn for a secret check.
    let mut t = 1;
    for (i, &w) in colluders.iter().enumerate() {
        if i == 1 {
            s.set_integrity(&Integrity {
                check_rate_trusted_ppm: 1_000_000,
                ..no_secret_checks()
            })
            .unwrap();
        }
        while let Some(l) = s.assign(w, &ALL, t, 100_000).unwrap() {
            let lie = l.workunit_id == liar_unit;
            s.submit(w, l.lease_id, &answer(&truth, l.workunit_id, lie), t)
                .unwrap();
            t += 1;
        }
    }
    s.set_integrity(&no_secret_checks()).unwrap();
    // The start misses its total, but every value has a check queued: nothing is reopened.
    let (_, rows) = s.table(c.id).unwrap();
    assert!(
        rows.iter().all(|r| r.status == RowStatus::Valid),
        "{rows:?}"
    );
    let queued: Vec<u64> = s
        .checks_wanted(100)
        .unwrap()
        .iter()
        .map(|q| q.workunit_id)
        .collect();
    assert_eq!(queued.len(), rows.len(), "{queued:?}");
    // The checker gets to the honest values first, then to the lie.
    for &wu in truth.keys().filter(|&&wu| wu != liar_unit) {
        let right = CheckOutcome::Verified {
            digest: answer(&truth, wu, false).digest,
            nodes: truth[&wu],
        };
        s.record_check(wu, &right, t).unwrap();
    }
    let outcome = if over_budget {
        CheckOutcome::OverBudget
    } else {
        CheckOutcome::Verified {
            digest: answer(&truth, liar_unit, false).digest,
            nodes: truth[&liar_unit],
        }
    };
    s.record_check(liar_unit, &outcome, t).unwrap();
    // Verified: the lie is overturned, the liars are quarantined and what they validated
    // reopens (with quarantine off, the lie alone). Over budget: the start still misses its
    // total and nothing else will prove the lie: a replica recounts it.
    let quarantine = !over_budget && max_strikes > 0;
    let (_, rows) = s.table(c.id).unwrap();
    for r in &rows {
        let reopened = r.workunit_id == liar_unit || quarantine;
        assert_eq!(r.status != RowStatus::Valid, reopened, "{r:?}");
    }
    for &w in &colluders {
        assert_eq!(
            s.worker(w).unwrap().unwrap().quarantined,
            quarantine,
            "a verified check is evidence; a value recounted by a replica is not"
        );
    }
    honest_recount_ends_in_the_truth(s, &c, &truth, t);
}

/// [`missed_total_with_a_check_queued`], the check verified.
pub(crate) fn a_missed_known_total_keeps_a_queued_check_that_then_quarantines_the_liars<
    S: Backend,
>(
    s: &S,
) {
    missed_total_with_a_check_queued(s, false, 3);
}

/// [`missed_total_with_a_check_queued`], the check over budget.
pub(crate) fn a_missed_known_total_recounts_a_value_whose_check_was_over_budget<S: Backend>(s: &S) {
    missed_total_with_a_check_queued(s, true, 3);
}

/// [`missed_total_with_a_check_queued`], the check verified, automatic quarantine off: the
/// check overturns the lie all the same.
pub(crate) fn a_verified_check_overturns_a_valid_lie_with_quarantine_off<S: Backend>(s: &S) {
    missed_total_with_a_check_queued(s, false, 0);
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
    assert_eq!((rec.trust, rec.checks_passed), (TrustLevel::Untrusted, 2));
    // A third, a second later, is the second that counts.
    check(ls[2].workunit_id, 2, 1_100);
    assert_eq!(s.worker(w).unwrap().unwrap().trust, TrustLevel::Earned);
    // Five leases given back with no valid result: trust is gone (no quarantine).
    for t in 0..5 {
        let l = s.assign(w, &ALL, 2_000 + t, 100_000).unwrap().unwrap();
        s.fail(w, l.lease_id, "engine crashed", 2_000 + t).unwrap();
    }
    let rec = s.worker(w).unwrap().unwrap();
    assert_eq!((rec.trust, rec.quarantined), (TrustLevel::Untrusted, false));
}

/// Issue 31: identities in probation (untrusted, nothing returned) hold one lease each, eight
/// per address block (a loopback block too), and together a quarter of a campaign's remaining
/// replicas, plus one for a block that holds none: the rest stays for workers that answered,
/// and a newcomer from a block of its own always gets its first workunit.
pub(crate) fn probation_caps_leave_work_for_newcomers_and_answering_workers<S: Backend>(s: &S) {
    use c960_common::wait::WaitCause;
    s.set_integrity(&Integrity {
        probation_lease_cap: 1,
        probation_block_cap: 8,
        probation_share_pct: 25,
        ..Integrity::default()
    })
    .unwrap();
    // 40 workunits, 80 replicas: a share of 20.
    let c = unknown_campaign(s, (0..40).collect());
    let reg = |n: String, b: &str| s.register_worker_from(&n, b"h", "e", Some(b), 0).unwrap();
    let fetch = |w: u64, b: &str| s.assign_from(w, &ALL, 1, 1000, 16, 64, Some(b)).unwrap();
    let local = "127.1.0.0/24";
    let held_local: Vec<usize> = (0..12)
        .map(|i| fetch(reg(format!("a{i}"), local), local).len())
        .collect();
    assert!(held_local.iter().all(|&n| n <= 1), "{held_local:?}");
    assert_eq!(held_local.iter().sum::<usize>(), 8, "eight for one block");
    // 30 more blocks, two identities each: the first of each block gets one, the second none
    // (the share is spent): 8 + 30 = 38 of 80 held, fewer than the share plus the blocks.
    let mut second = Vec::new();
    let mut held = 8;
    for b in 0..30 {
        let block = format!("127.2.{b}.0/24");
        held += fetch(reg(format!("b{b}"), &block), &block).len();
    }
    for b in 0..30 {
        let block = format!("127.2.{b}.0/24");
        let w = reg(format!("c{b}"), &block);
        assert!(fetch(w, &block).is_empty(), "block {block}");
        second.push((w, block));
    }
    assert_eq!(held, 38);
    let (w, block) = &second[0];
    let why = s.waiting_for(*w, &ALL, Some(block), 64, 2).unwrap();
    assert_eq!(why[0].cause, WaitCause::Probation, "{why:?}");
    assert_eq!(why[0].campaign, Some(c.id));
    // A newcomer from a block of its own gets its first workunit; answered, it is out of
    // probation and takes the untrusted cap from the replicas the hoarders could not.
    let honest = reg("honest".into(), "127.0.0.0/24");
    let first = fetch(honest, "127.0.0.0/24");
    assert_eq!(first.len(), 1);
    s.submit(honest, first[0].lease_id, &sub(7, 7), 3).unwrap();
    assert_eq!(fetch(honest, "127.0.0.0/24").len(), 4);
    // Giving a lease back does not end probation.
    let giver = reg("giver".into(), "127.3.0.0/24");
    let l = fetch(giver, "127.3.0.0/24");
    s.fail(giver, l[0].lease_id, "no", 4).unwrap();
    assert_eq!(fetch(giver, "127.3.0.0/24").len(), 1);
    // Off (the default here): four each, as before.
    s.set_integrity(&Integrity::default()).unwrap();
    assert_eq!(fetch(second[1].0, &second[1].1).len(), 4);
}

/// `serve`'s rule for agreements nothing anchors ([`crate::integrity::anchoring`]), with trust
/// after two checks 100 ms apart: the first result of each untrusted worker is checked (its
/// trust check), a later agreement waits while another worker is at work, the sweep asks the
/// next trust checks once they are due, and once the workers are trusted their waiting
/// agreement is anchored, with no further check and no further replica.
pub(crate) fn unanchored_agreements_wait_for_their_workers_trust<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        trust_after_checks: 2,
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        trust_check_spacing_ms: 100,
        unanchored_sample_ppm: 0,
        ..Integrity::default()
    })
    .unwrap();
    let c = unknown_campaign(s, vec![0, 1, 2, 3]);
    // X is at work (registered just now) and could audit: the crowd.
    let [a, b, _x] = ["a", "b", "x"].map(|n| s.register_worker(n, b"h", "e", 0).unwrap());
    let agree = |now: i64, tag: u8| {
        let la = s.assign(a, &ALL, now, 10_000).unwrap().unwrap();
        let lb = s.assign(b, &ALL, now, 10_000).unwrap().unwrap();
        assert_eq!(la.workunit_id, lb.workunit_id);
        s.submit(a, la.lease_id, &sub(u64::from(tag), tag), now + 1)
            .unwrap();
        s.submit(b, lb.lease_id, &sub(u64::from(tag), tag), now + 1)
            .unwrap();
        la.workunit_id
    };
    let wanted = || -> Vec<u64> {
        s.checks_wanted(10)
            .unwrap()
            .iter()
            .map(|r| r.workunit_id)
            .collect()
    };
    let check = |wu: u64, tag: u8, now: i64| {
        s.record_check(
            wu,
            &CheckOutcome::Verified {
                digest: [tag; 32],
                nodes: u64::from(tag),
            },
            now,
        )
        .unwrap()
    };
    let status = |i: usize| s.table(c.id).unwrap().1[i].status;
    // The first agreement: A's trust check (B's rides on it).
    let w1 = agree(1, 7);
    assert_eq!(wanted(), vec![w1]);
    check(w1, 7, 3);
    assert_eq!(status(0), RowStatus::Valid);
    // The next two wait: no check is due, another worker is at work.
    let w2 = agree(4, 8);
    let w3 = agree(6, 9);
    assert_eq!(wanted(), Vec::<u64>::new(), "nothing checked at once");
    assert_eq!((status(1), status(2)), (RowStatus::Open, RowStatus::Open));
    let swept = s.sweep_waiting_agreements(50).unwrap();
    assert_eq!((swept.anchored, swept.asked), (0, 0), "not due yet");
    // Due: one check asked for both workers, on the oldest waiting agreement.
    let swept = s.sweep_waiting_agreements(103).unwrap();
    assert_eq!((swept.anchored, swept.asked), (0, 1));
    assert_eq!(wanted(), vec![w2]);
    assert_eq!(s.sweep_waiting_agreements(104).unwrap().asked, 0, "asked");
    check(w2, 8, 105);
    for w in [a, b] {
        assert_eq!(s.worker(w).unwrap().unwrap().trust, TrustLevel::Earned);
    }
    // Trusted now: the agreement that waited is anchored by them, uncounted by the coordinator.
    assert_eq!(status(2), RowStatus::Open);
    let swept = s.sweep_waiting_agreements(106).unwrap();
    assert_eq!((swept.anchored, swept.asked), (1, 0));
    let (_, rows) = s.table(c.id).unwrap();
    assert_eq!((rows[2].status, rows[2].nodes), (RowStatus::Valid, Some(9)));
    assert!(!wanted().contains(&w3));
    assert_eq!(s.check_cost().unwrap().checks_run, 2);
}

/// Without another worker at work nothing could audit a waiting agreement, and the coordinator
/// would audit it anyway: two workers alone have it checked at once.
pub(crate) fn without_a_crowd_an_unanchored_agreement_is_checked_at_once<S: Backend>(s: &S) {
    s.set_integrity(&Integrity {
        check_rate_untrusted_ppm: 0,
        check_rate_trusted_ppm: 0,
        trust_check_spacing_ms: 100,
        unanchored_sample_ppm: 0,
        ..Integrity::default()
    })
    .unwrap();
    let _ = unknown_campaign(s, vec![0, 1]);
    let [a, b] = ["a", "b"].map(|n| s.register_worker(n, b"h", "e", 0).unwrap());
    let mut units = Vec::new();
    for now in [1, 4] {
        let la = s.assign(a, &ALL, now, 10_000).unwrap().unwrap();
        let lb = s.assign(b, &ALL, now, 10_000).unwrap().unwrap();
        s.submit(a, la.lease_id, &sub(5, 5), now + 1).unwrap();
        s.submit(b, lb.lease_id, &sub(5, 5), now + 1).unwrap();
        units.push(la.workunit_id);
    }
    let wanted: Vec<u64> = s
        .checks_wanted(10)
        .unwrap()
        .iter()
        .map(|r| r.workunit_id)
        .collect();
    assert_eq!(
        wanted, units,
        "the trust check, then the one without a crowd"
    );
}
