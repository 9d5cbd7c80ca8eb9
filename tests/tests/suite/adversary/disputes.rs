//! Issue 54: disagreements over the coordinator's budget settled by proof.

use std::time::Duration;

use c960_coordinator::integrity::trust::Integrity;
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
        Duration::ZERO,
    )
    .await;
    assert_targets(&f);
    assert!(f.lies_told > 0, "the pair never held a whole quorum: {f:?}");
    assert_eq!(
        f.liars_quarantined, f.liars_who_lied,
        "every liar that lied is convicted: {f:?}"
    );
    // Disputes, not the coordinator's checks (it can count no workunit), convicted them.
    assert!(f.convicted >= 1 && f.checks_run == 0, "{f:?}");
}

/// Issue 54's cost figures (release, `.ci/run`; docs/security-results.md): honest workers only,
/// `serve`'s defaults, perft(5) of all 960 Chess960 starts before (the coordinator audits every
/// value it can itself) and after (the crowd audits, the coordinator keeps a 1 % sample), and
/// of all 5,040 shuffle-chess starts after: the coordinator's share of the valid nodes and the
/// volunteers' results per valid workunit (spare-capacity re-verifications among them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn crowd_audit_cost_figures() {
    println!(
        "| campaign | audits by | workers | workunits | results per valid workunit (spare) | coordinator's share of the nodes | time |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (campaign, positions, name, sample) in [
        (
            "Chess960 perft(5)",
            "0-959",
            "the coordinator (before)",
            1_000_000,
        ),
        ("Chess960 perft(5)", "0-959", "the crowd (after)", 10_000),
        (
            "shuffle perft(5)",
            "shuffle:0-5039",
            "the crowd (after)",
            20_000,
        ),
    ] {
        let f = run(Scenario {
            name,
            honest: 4,
            liars: vec![],
            campaigns: vec![(5, 0, positions)],
            integrity: Integrity {
                audit_sample_ppm: sample,
                ..serve_integrity()
            },
            limit: Duration::from_secs(900),
        })
        .await;
        assert_targets(&f);
        println!(
            "| {campaign} | {name} | {} | {} | {:.2} ({}) | {:.1} % | {:.0} s |",
            f.workers,
            f.units,
            f.replicas_per_valid,
            f.spare_replicas,
            100.0 * f.coordinator_share,
            f.secs
        );
    }
}

/// Issue 54's adversary figures (release, `.ci/run`; docs/security-results.md): two patient
/// pairs among 18 workers, every worker's trust earned (so every value is audited, by the
/// crowd), every workunit over the coordinator's budget (5,000 nodes: it counts only dispute
/// leaves), each pair lying at most `L` times where it holds a whole quorum, two runs per `L`,
/// on two campaigns: Chess960 split sub-units (depth 4 below the second ply of two depth-6
/// starts), and perft(5) of 200 shuffle-chess starts, a family without embedded totals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn dispute_figures() {
    println!(
        "| campaign | lie budget per pair | workunits | lies told | wrong values at completion | after 4 s of re-verification | honest quarantined | liars who lied / quarantined | disputes (convictions) | audit replicas | results per valid workunit | coordinator's share | time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let campaigns = [
        ("Chess960 perft(6) of 0, 1 split at ply 2", (6, 2, "0,1")),
        ("shuffle perft(5) of 0-199", (5, 0, "shuffle:0-199")),
    ];
    for (campaign, spec) in campaigns {
        for lies in [1, 3, 10, 30] {
            for _ in 0..2 {
                let pair = |pair| Strategy::PatientPair { pair, lies };
                let f = run_trusting(
                    Scenario {
                        name: "disputes over the budget",
                        honest: 14,
                        liars: vec![pair(0), pair(0), pair(1), pair(1)],
                        campaigns: vec![spec],
                        integrity: serve_integrity(),
                        limit: Duration::from_secs(300),
                    },
                    Some(5_000),
                    Some(TrustLevel::Earned),
                    Duration::from_secs(4),
                )
                .await;
                let (w, d) = f.wrong_at_completion.unwrap_or_default();
                println!(
                    "| {campaign} | {lies} | {} | {} | {} | {} | {} | {} / {} | {} ({}) | {} | {:.2} | {:.4} % | {:.1} s |",
                    f.units,
                    f.lies_told,
                    w + d,
                    f.wrong_values + f.wrong_divides,
                    f.honest_quarantined,
                    f.liars_who_lied,
                    f.liars_quarantined,
                    f.disputes,
                    f.convicted,
                    f.audit_replicas,
                    f.replicas_per_valid,
                    100.0 * f.coordinator_share,
                    f.secs
                );
                assert_targets(&f);
            }
        }
    }
}
