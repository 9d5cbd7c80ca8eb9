//! Issue 54: disagreements over the coordinator's budget settled by proof.

use std::time::Duration;

use c960_coordinator::model::TrustLevel;

use super::harness::*;
use super::liar::*;

/// A trusted pair (trust earned, so its values are audited) lies where it holds a whole quorum,
/// on split sub-units (depth 4) the coordinator cannot count (its budget: 5,000 nodes). Each lie
/// meets the hidden audit replica of another worker, the disagreement becomes a dispute, and
/// bisection proves each liar wrong at a leaf the coordinator counts (depth 2): both liars are
/// quarantined, their values re-verified, nobody honest is touched. Before disputes, a replica
/// that disagreed only outvoted the pair, which kept its standing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_pair_over_the_budget_is_convicted_by_bisection() {
    let f = run_trusting(
        Scenario {
            name: "disputes",
            honest: 4,
            liars: vec![
                Strategy::PatientPair { pair: 0, lies: 3 },
                Strategy::PatientPair { pair: 0, lies: 3 },
            ],
            campaigns: vec![(5, 1, "0-3")],
            integrity: serve_integrity(),
            limit: Duration::from_secs(180),
        },
        Some(5_000),
        Some(TrustLevel::Earned),
    )
    .await;
    assert_targets(&f);
    assert!(f.lies_told > 0, "the pair never held a whole quorum: {f:?}");
    assert_eq!(
        f.liars_quarantined, f.liars_who_lied,
        "every liar that lied is convicted: {f:?}"
    );
    assert!(
        f.convicted >= f.liars_who_lied && f.disputes >= f.convicted,
        "{f:?}"
    );
}
