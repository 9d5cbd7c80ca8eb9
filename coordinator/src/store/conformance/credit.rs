//! Conformance (both backends, instantiated by `conformance!`): the credit columns of the worker
//! row equal the sum over its results graded valid after every kind of transition — validation,
//! a faulty check that quarantines an honest worker, an overturned check that restores it and
//! ungrades the liars, an operator's ban that voids validated votes, and the regrading after
//! each — with node counts past 2^63 so that the hi/lo halves are exercised.

use std::collections::BTreeMap;

use c960_common::wire::Capabilities;

use super::sub;
use crate::model::CheckOutcome;
use crate::model::standings::StandingsQuery;
use crate::store::Store;
use crate::store::codes::db_to_u64;
use crate::store::db::{Backend, params};

/// Per worker: (valid results, their nodes) summed over the results table.
fn summed<S: Backend>(s: &S) -> BTreeMap<u64, (u64, u128)> {
    s.with_conn(&mut |tx| {
        let mut out: BTreeMap<u64, (u64, u128)> = BTreeMap::new();
        for r in tx.query(
            "SELECT worker_id, COALESCE(nodes, 0) FROM results WHERE outcome = 1",
            params![],
        )? {
            let e = out.entry(r.u64(0)?).or_default();
            e.0 += 1;
            e.1 += u128::from(db_to_u64(r.i64(1)?));
        }
        Ok(out)
    })
    .unwrap()
}

/// Asserts that the leaderboard's credit (the kept columns) equals the sums, and that it is
/// ordered by credit; returns the credit of every worker that has any.
pub(crate) fn credit_is_the_sum<S: Backend>(s: &S, when: &str) -> BTreeMap<u64, (u64, u128)> {
    let rows = s
        .standings(&StandingsQuery {
            seen_since_ms: None,
            recent_since_ms: 0,
            offset: 0,
            limit: 100,
        })
        .unwrap();
    let kept: BTreeMap<u64, (u64, u128)> = rows
        .iter()
        .filter(|w| w.valid_results > 0 || w.valid_nodes > 0)
        .map(|w| (w.id, (w.valid_results, w.valid_nodes)))
        .collect();
    assert_eq!(kept, summed(s), "credit columns vs results, {when}");
    let order: Vec<_> = rows
        .iter()
        .map(|w| (std::cmp::Reverse((w.valid_nodes, w.valid_results)), w.id))
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "leaderboard order, {when}");
    kept
}

pub(crate) fn credit_columns_equal_the_sum_over_results_through_quarantine_and_restoration<
    S: Backend,
>(
    s: &S,
) {
    // No public answer, so only checks and trusted workers anchor.
    let c = super::unknown_campaign(s, vec![0, 1]);
    let [h, l, x, y, z] =
        ["h", "l", "x", "y", "z"].map(|n| s.register_worker(n, b"k", "e", 0).unwrap());
    let caps = Capabilities::builtin();
    let (truth, lie) = ((1u64 << 63) + 20, u64::MAX - 1);
    let h1 = s.assign(h, &caps, 0, 1000).unwrap().unwrap();
    let l1 = s.assign(l, &caps, 0, 1000).unwrap().unwrap();
    let wu = h1.workunit_id;
    s.submit(h, h1.lease_id, &sub(truth, 1), 1).unwrap();
    s.submit(l, l1.lease_id, &sub(lie, 9), 1).unwrap();
    assert!(credit_is_the_sum(s, "contested").is_empty());

    // A faulty check agrees with the liar: honest H is quarantined (its vote voided), and a
    // colluder validates the lie with L.
    s.record_check(
        wu,
        &CheckOutcome::Verified {
            digest: [9; 32],
            nodes: lie,
        },
        2,
    )
    .unwrap();
    let x1 = s.assign(x, &caps, 3, 1000).unwrap().unwrap();
    assert_eq!(x1.workunit_id, wu);
    s.submit(x, x1.lease_id, &sub(lie, 9), 4).unwrap();
    let credit = credit_is_the_sum(s, "after validating the lie");
    let lied = (1, u128::from(lie));
    assert_eq!(credit, BTreeMap::from([(l, lied), (x, lied)]));

    // An independent recomputation overturns the check: the liars' votes are ungraded and
    // lost, H's quarantine is lifted and its result votes again.
    s.overturn_check(wu, &[1; 32], 5).unwrap();
    assert!(!s.worker(h).unwrap().unwrap().quarantined);
    assert!(credit_is_the_sum(s, "after the overturn").is_empty());
    let y1 = s.assign(y, &caps, 6, 1000).unwrap().unwrap();
    assert_eq!(y1.workunit_id, wu);
    s.submit(y, y1.lease_id, &sub(truth, 1), 7).unwrap();
    let told = (1, u128::from(truth));
    assert_eq!(
        credit_is_the_sum(s, "after the restored vote validated"),
        BTreeMap::from([(h, told), (y, told)])
    );
    assert_eq!(s.table(c.id).unwrap().1[0].nodes, Some(truth));

    // The operator bans H: its validated vote is voided and Y's ungraded; Z's answer settles
    // the workunit again, without H.
    s.set_banned(h, true, 8).unwrap();
    assert!(credit_is_the_sum(s, "after the ban voided H's vote").is_empty());
    let z1 = s.assign(z, &caps, 9, 1000).unwrap().unwrap();
    assert_eq!(z1.workunit_id, wu);
    s.submit(z, z1.lease_id, &sub(truth, 1), 10).unwrap();
    assert_eq!(
        credit_is_the_sum(s, "after re-verification without H"),
        BTreeMap::from([(y, told), (z, told)])
    );

    // Lifting the ban: H's voided vote is graded again against the canonical value.
    s.set_banned(h, false, 11).unwrap();
    credit_is_the_sum(s, "after the unban");
}
