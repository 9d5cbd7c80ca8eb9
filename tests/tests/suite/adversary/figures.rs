//! The figures of `docs/security-results.md` (ignored; `.ci/run` runs them in release).

use std::time::Duration;

use super::harness::*;
use super::liar::*;

/// Issue 30's figures: patient pairs (4 colluders among 18 workers, two pairs) that lie 1, 3,
/// 10, 30 and 100 times, only where a pair holds a whole quorum, two runs each; and the cost of
/// the audits on an honest-only campaign (results per valid workunit, coordinator nodes).
/// Release mode, a few minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "figures: run in release with --ignored --nocapture (.ci/run does)"]
async fn patient_colluder_figures() {
    let mut all = Vec::new();
    for lies in [1, 3, 10, 30, 100] {
        for run_no in 0..2 {
            let pair = |pair| Strategy::PatientPair { pair, lies };
            let f = run(Scenario {
                name: if run_no == 0 {
                    "patient pairs"
                } else {
                    "patient pairs (again)"
                },
                honest: 14,
                liars: vec![pair(0), pair(0), pair(1), pair(1)],
                // Split sub-positions of two depth-6 starts (no public answer).
                campaigns: vec![(6, 2, "0,1")],
                integrity: serve_integrity(),
                limit: Duration::from_secs(240),
            })
            .await;
            eprintln!("lies {lies}: {f:?}");
            all.push((lies, f));
        }
    }
    let honest = run(Scenario {
        name: "honest only",
        honest: 18,
        liars: Vec::new(),
        campaigns: vec![(6, 2, "0,1")],
        integrity: serve_integrity(),
        limit: Duration::from_secs(240),
    })
    .await;
    println!(
        "| lie budget per pair | workunits | lies told | wrong values | wrong divides | honest quarantined | liars quarantined | audits (overturned) | audit replicas | results per valid workunit | time |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (lies, f) in &all {
        println!(
            "| {lies} | {} | {} | {} | {} | {} | {} | {} ({}) | {} | {:.2} | {:.1} s |",
            f.units,
            f.lies_told,
            f.wrong_values,
            f.wrong_divides,
            f.honest_quarantined,
            f.liars_quarantined,
            f.audits,
            f.audits_overturned,
            f.audit_replicas,
            f.replicas_per_valid,
            f.secs
        );
    }
    println!(
        "honest only: {} workunits, {:.2} results per valid workunit, {} audits, {:.2e} coordinator nodes, {:.1} s",
        honest.units,
        honest.replicas_per_valid,
        honest.audits,
        honest.check_nodes as f64,
        honest.secs
    );
    for (_, f) in &all {
        assert_targets(f);
        assert!(f.liars_quarantined >= f.liars_who_lied, "{f:?}");
    }
    assert_targets(&honest);
}

/// The figures of `docs/security-results.md`: 10 %, 30 % and 50 % colluding liars of mixed
/// strategies against honest runners, nobody trusted at the start. Release mode, minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "figures: run in release with --ignored --nocapture (.ci/run does)"]
async fn full_figures_at_10_30_50_percent_liars() {
    let mix = |n: usize| -> Vec<Strategy> {
        let kinds = [
            Strategy::Instant,
            Strategy::PrivateOnly,
            Strategy::Fraction(0.3),
            Strategy::BehaveThenLie(20),
            Strategy::Delayed(Duration::from_millis(300)),
        ];
        (0..n).map(|i| kinds[i % kinds.len()]).collect()
    };
    let mut all = Vec::new();
    for (name, honest, liars) in [("10 %", 9, 1), ("30 %", 7, 3), ("50 %", 5, 5)] {
        let f = run(Scenario {
            name,
            honest,
            liars: mix(liars),
            // Split sub-positions of a depth-7 and a depth-6 campaign (no public answer) and
            // start positions at depth 5 (public answers).
            campaigns: vec![(7, 2, "518"), (6, 2, "0"), (5, 0, "0-99")],
            integrity: serve_integrity(),
            limit: Duration::from_secs(240),
        })
        .await;
        eprintln!("{f:?}");
        all.push(f);
    }
    println!(
        "| liars / workers | workunits | lies told | wrong values accepted | honest quarantined | liars quarantined | replicas per valid workunit | coordinator checks (nodes) | re-splits (overturned) | time | complete |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for f in &all {
        println!(
            "| {} ({} / {}) | {} | {} | {} | {} | {} | {:.2} | {} ({:.2e}) | {} ({}) | {:.1} s | {} |",
            f.name,
            f.liars,
            f.workers,
            f.units,
            f.lies_told,
            f.wrong_values,
            f.honest_quarantined,
            f.liars_quarantined,
            f.replicas_per_valid,
            f.checks_run,
            f.check_nodes as f64,
            f.resplits,
            f.resplits_overturned,
            f.secs,
            f.complete
        );
    }
    for f in &all {
        assert_eq!(f.wrong_values, 0, "{f:?}");
    }
    for f in all.iter().take(2) {
        assert_targets(f);
    }
}
