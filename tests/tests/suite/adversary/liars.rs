//! Liars of every strategy, alone and colluding: no wrong value enters the table.

use c960_coordinator::model::{RowStatus, TrustLevel};
use std::time::{Duration, Instant};

use c960_common::wire::{BatchedOutcome, BatchedResult, PositionSpec, WorkUnitKind};
use c960_coordinator::integrity::trust::Integrity;
use c960_coordinator::store::Store;
use c960_coordinator::work::campaign::NewCampaign;
use c960_tests::TestServer;

use super::client::*;
use super::harness::*;
use super::liar::*;

/// 2 colluding instant liars among 5 workers (40 %), nobody trusted at the start: the liars pair
/// up, but their agreement is unanchored; contested and secret checks catch them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colluding_instant_liars_never_enter_the_table() {
    let f = run(Scenario {
        name: "instant",
        honest: 3,
        liars: vec![Strategy::Instant; 2],
        campaigns: vec![(4, 2, "518")],
        integrity: serve_integrity(),
        limit: Duration::from_secs(60),
    })
    .await;
    assert_targets(&f);
    assert_eq!(f.liars_quarantined, 2, "{f:?}");
}

/// Liars that lie only where no answer is public (split sub-positions; honest on the start
/// positions of a second campaign), on a fraction of units, and only once they have a record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_fractional_and_patient_liars_never_enter_the_table() {
    let f = run(Scenario {
        name: "mixed",
        honest: 3,
        liars: vec![
            Strategy::PrivateOnly,
            Strategy::Fraction(0.3),
            Strategy::BehaveThenLie(12),
        ],
        campaigns: vec![(4, 2, "0"), (3, 0, "0-19")],
        integrity: serve_integrity(),
        limit: Duration::from_secs(60),
    })
    .await;
    assert_targets(&f);
}

/// Half the workers are patient colluders: honest until they have earned trust, then all
/// telling the same lie. Once trusted, two of them can anchor a wrong value together; the first
/// lie that meets an honest replica (contested) or a secret check gets the liar quarantined, and
/// everything it helped validate is re-verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colluders_that_earn_trust_first_are_caught_and_reverified() {
    let f = run(Scenario {
        name: "trusted colluders",
        honest: 3,
        liars: vec![Strategy::BehaveThenLie(16); 3],
        campaigns: vec![(4, 2, "518")],
        integrity: serve_integrity(),
        limit: Duration::from_secs(60),
    })
    .await;
    assert_targets(&f);
}

/// An instant answer to a large workunit is implausible: no evidence by itself, but its
/// workunit is checked at once, and the check catches the lie (quarantine); a liar that waits to
/// look plausible is caught by the coordinator's own (secret) check too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn implausibly_fast_and_delayed_liars() {
    let server = TestServer::start(config(Integrity {
        max_nodes_per_sec: 100_000_000,
        check_rate_untrusted_ppm: 1_000_000,
        ..scenario_integrity()
    }))
    .await;
    // Sub-positions at depth 4 (about 200,000 nodes each); the lies claim a million nodes per
    // root move, which at 10^8 nodes/s takes a while.
    let spec = NewCampaign::new(6, 2, None, vec![518])
        .unwrap()
        .split_by("2")
        .unwrap();
    let c = server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let client = RawClient::new(&server.url, None);
    let fast = client.register("fast").await.unwrap();
    let a = client.fetch(&fast, 1).await.unwrap().remove(0);
    let out = client
        .submit(&fast, vec![batched(&a, fake_scaled(&a.kind, 1_000_000))])
        .await;
    // Too fast is no evidence by itself (an honest worker's own table is that fast): the result
    // is taken, and its workunit checked by the coordinator, which finds the lie.
    assert!(matches!(out.unwrap()[0], BatchedOutcome::Accepted));
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let w = server.store.worker(fast.worker_id).unwrap().unwrap();
        if w.quarantined {
            assert_eq!(w.checks_failed, 1, "{w:?}");
            break;
        }
        assert!(
            Instant::now() < until,
            "the check never caught the fast liar"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(client.fetch(&fast, 1).await.unwrap_err().0, 403);

    let slow = client.register("slow").await.unwrap();
    let a = client.fetch(&slow, 1).await.unwrap().remove(0);
    let lie = fake_scaled(&a.kind, 1_000_000);
    // At 10^8 nodes/s the lie needs lie.nodes / 10^5 ms.
    tokio::time::sleep(Duration::from_millis(lie.nodes / 100_000 + 50)).await;
    let out = client.submit(&slow, vec![batched(&a, lie)]).await.unwrap();
    assert!(matches!(out[0], BatchedOutcome::Accepted), "{out:?}");
    // Every untrusted result is checked here: the checker finds the lie.
    let until = Instant::now() + Duration::from_secs(30);
    while !server
        .store
        .worker(slow.worker_id)
        .unwrap()
        .unwrap()
        .quarantined
    {
        assert!(
            Instant::now() < until,
            "the check never caught the delayed liar"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, rows) = server.store.table(c.id).unwrap();
    assert!(rows.iter().all(|r| r.status != RowStatus::Valid));
}

/// Issue 30's patient colluders: two pairs of identities (4 of 10 workers) behave until trusted,
/// then lie, both members alike, only on workunits the pair holds whole: the attack that left
/// most of its lies in the table when replicas went out in fetch order and values anchored by
/// earned trust were checked at 2 %. Now replicas are drawn at random and every such value is
/// audited by the coordinator: each lie is overturned and its pair quarantined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patient_trusted_pairs_lying_on_whole_quorums_leave_no_wrong_value() {
    let f = run(Scenario {
        name: "patient pairs",
        honest: 6,
        liars: vec![
            Strategy::PatientPair { pair: 0, lies: 3 },
            Strategy::PatientPair { pair: 0, lies: 3 },
            Strategy::PatientPair { pair: 1, lies: 3 },
            Strategy::PatientPair { pair: 1, lies: 3 },
        ],
        campaigns: vec![(5, 2, "518")],
        integrity: serve_integrity(),
        limit: Duration::from_secs(120),
    })
    .await;
    assert_targets(&f);
    // Every identity that lied is caught (the audit's check fails it).
    assert!(
        f.liars_quarantined >= f.liars_who_lied,
        "a liar was not caught: {f:?}"
    );
}

/// Issue 30: a trusted pair lying only on workunits too large for the coordinator, which can
/// therefore neither check nor audit them itself: split sub-positions of chess960 starts whose
/// totals are published. A start whose sub-units sum to other than its total has them all
/// recounted by one more hidden replica each, and the honest majority's recount replaces the lie.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lies_over_the_coordinators_budget_are_recounted_by_the_published_totals() {
    let f = run_with(
        Scenario {
            name: "over budget",
            honest: 3,
            liars: vec![
                Strategy::PatientPair { pair: 0, lies: 5 },
                Strategy::PatientPair { pair: 0, lies: 5 },
            ],
            campaigns: vec![(4, 1, "0-19")],
            integrity: serve_integrity(),
            limit: Duration::from_secs(120),
        },
        Some(10),
    )
    .await;
    assert_targets(&f);
    assert!(f.lies_told > 0, "the pair never held a whole quorum: {f:?}");
}

/// A public total checks the total only: two fresh identities that answer every start position
/// with the right total and a wrong divide (+1/-1 on two root moves) form a quorum the total
/// anchors. The audit recounts the value, overturns the divide, and quarantines both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_total_does_not_anchor_a_wrong_divide() {
    let f = run(Scenario {
        name: "swapped divide",
        honest: 2,
        liars: vec![Strategy::SwapDivide; 2],
        campaigns: vec![(4, 0, "0-9")],
        integrity: serve_integrity(),
        limit: Duration::from_secs(60),
    })
    .await;
    assert_targets(&f);
    assert!(f.lies_told > 0, "{f:?}");
    assert_eq!(f.liars_quarantined, 2, "{f:?}");
}

/// Honest workers answering a repeated campaign from their own perft tables are far faster than
/// the plausibility bound: their results are checked by the coordinator, never taken as
/// evidence. Both campaigns complete and nobody is quarantined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_cache_hits_are_checked_not_punished() {
    let server = TestServer::start(config(Integrity {
        // Slower than any cache hit, so that the second campaign's answers are implausible.
        max_nodes_per_sec: 1_000_000,
        ..serve_integrity()
    }))
    .await;
    let honest = c960_tests::HonestWorkers::start(&server.url, 2, None);
    for round in 0..2 {
        let spec = NewCampaign::new(4, 2, None, vec![518])
            .unwrap()
            .split_by("1")
            .unwrap();
        let c = server
            .store
            .create_campaign(&spec, c960_coordinator::clock::now_ms())
            .unwrap();
        c960_tests::wait_until(Duration::from_secs(60), || {
            let (total, valid) = progress(&server, c.id);
            let cost = server.store.check_cost().unwrap();
            if valid == total && cost.checks_waiting + cost.audits_waiting == 0 {
                Ok(())
            } else {
                Err(format!("round {round} not complete: {valid} of {total}"))
            }
        })
        .await;
    }
    honest.stop().await;
    let workers = server
        .store
        .worker_summary(c960_coordinator::clock::now_ms())
        .unwrap();
    assert!(
        workers
            .list
            .iter()
            .all(|w| !w.quarantined && w.checks_failed == 0),
        "{:?}",
        workers.list
    );
}

/// Griefers: three fresh identities, each answering every workunit with a fabrication of its
/// own, reach the result cap without a quorum on every workunit they share. That no longer fails
/// the workunit: beyond the cap its replicas go to trusted workers (and the coordinator's check,
/// where it can), who settle it; and since issue 54 the griefers' disagreements are disputes
/// that prove them wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn griefers_at_the_result_cap_fail_no_workunit() {
    let mut cfg = config(serve_integrity());
    // Too large for the coordinator: only workers can settle these.
    cfg.checks.max_nodes = 100;
    let server = TestServer::start(cfg).await;
    let spec = NewCampaign::new(3, 2, None, vec![518])
        .unwrap()
        .split_by("1")
        .unwrap();
    let c = server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let client = RawClient::new(&server.url, None);
    let mut griefers = Vec::new();
    for i in 0..3 {
        griefers.push(client.register(&format!("griefer-{i}")).await.unwrap());
    }
    // Each fetches and fabricates until nothing is left for it, or until a dispute has proven
    // it wrong (issue 54: fabrications that disagree over the budget are bisected, and every
    // fabrication differs from the coordinator's count at the leaf): then it is shut out.
    let mut fabricated = 0;
    for _ in 0..20 {
        let mut any = false;
        for (i, g) in griefers.iter().enumerate() {
            let Ok(got) = client.fetch(g, 8).await else {
                continue;
            };
            any |= !got.is_empty();
            let results: Vec<BatchedResult> = got
                .iter()
                .map(|a| batched(a, fake_scaled(&a.kind, 100 + i as u64)))
                .collect();
            if !results.is_empty() && client.submit(g, results.clone()).await.is_ok() {
                fabricated += results.len();
            }
        }
        if !any {
            break;
        }
    }
    assert!(fabricated >= 8, "{fabricated} fabrications");
    let p = &server.store.progress().unwrap()[0];
    assert_eq!(p.failed, 0, "griefers failed workunits");
    // Two honest workers the operator trusts settle every workunit.
    let honest = c960_tests::HonestWorkers::start(&server.url, 2, None);
    c960_tests::wait_until(Duration::from_secs(60), || {
        let now = c960_coordinator::clock::now_ms();
        for w in server.store.worker_summary(now).unwrap().list {
            if w.name.starts_with("honest-") && w.trust == TrustLevel::Untrusted {
                server.store.set_trust(w.id, true).unwrap();
            }
        }
        let (total, valid) = progress(&server, c.id);
        if valid == total {
            Ok(())
        } else {
            let (_, rows) = server.store.table(c.id).unwrap();
            let open: Vec<String> = rows
                .iter()
                .filter(|r| r.status != RowStatus::Valid)
                .map(|r| format!("{r:?} {:?}", server.store.results(r.workunit_id).unwrap()))
                .collect();
            Err(format!("not settled: {valid} of {total}: {open:#?}"))
        }
    })
    .await;
    honest.stop().await;
    let p = &server.store.progress().unwrap()[0];
    assert_eq!(p.failed, 0);
    let (_, rows) = server.store.table(c.id).unwrap();
    for r in &rows {
        let kind = WorkUnitKind::Perft {
            position: PositionSpec::Fen(r.fen.clone()),
            depth: r.depth,
        };
        assert_eq!(r.nodes, Some(truth(&kind).nodes), "{r:?}");
    }
    // Two griefers who disagreed were both proven wrong by a dispute.
    let disputes = server.store.dispute_cost().unwrap();
    assert!(disputes.convicted >= 2, "{disputes:?}");
}
