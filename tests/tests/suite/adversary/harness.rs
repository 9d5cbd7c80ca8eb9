//! Runs a scenario (a coordinator, honest runners, liars) and measures what came out.

use c960_coordinator::model::{RowStatus, TrustLevel};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use c960_common::digest::result_digest;
use c960_common::wire::{PerftResult, PositionSpec, WorkResult, WorkUnitKind};
use c960_coordinator::integrity::checker::CheckBudget;
use c960_coordinator::integrity::trust::Integrity;
use c960_coordinator::net::api::Config;
use c960_coordinator::store::Store;
use c960_coordinator::work::campaign::{NewCampaign, parse_positions};
use c960_tests::{TestServer, quick_config};

use super::client::*;
use super::liar::*;

/// One scenario: a split campaign (plus, optionally, a start-position campaign with public
/// answers), honest runners and liars.
pub(super) struct Scenario {
    pub(super) name: &'static str,
    pub(super) honest: usize,
    pub(super) liars: Vec<Strategy>,
    /// (depth, split ply, positions) of each campaign.
    pub(super) campaigns: Vec<(u32, u32, &'static str)>,
    pub(super) integrity: Integrity,
    pub(super) limit: Duration,
}

/// What came out of a scenario.
#[derive(Debug)]
pub(super) struct Figures {
    pub(super) name: &'static str,
    pub(super) workers: usize,
    pub(super) liars: usize,
    pub(super) units: u64,
    pub(super) wrong_values: u64,
    pub(super) wrong_divides: u64,
    /// With a re-verification time: (wrong values, wrong divides) at completion, before it.
    pub(super) wrong_at_completion: Option<(u64, u64)>,
    pub(super) audits: u64,
    pub(super) audits_overturned: u64,
    pub(super) audit_replicas: u64,
    pub(super) honest_quarantined: u64,
    pub(super) liars_quarantined: u64,
    pub(super) lies_told: u64,
    pub(super) liars_who_lied: u64,
    pub(super) replicas_per_valid: f64,
    pub(super) checks_run: u64,
    pub(super) check_nodes: u64,
    pub(super) resplits: u64,
    pub(super) resplits_overturned: u64,
    /// Disputes decided, and convictions (a worker proven wrong in several counts in each).
    pub(super) disputes: u64,
    pub(super) convicted: u64,
    /// The coordinator's nodes per node of the valid values.
    pub(super) coordinator_share: f64,
    /// Spare-capacity re-verification replicas handed out (included in `replicas_per_valid`).
    pub(super) spare_replicas: u64,
    pub(super) secs: f64,
    pub(super) complete: bool,
}

pub(super) fn config(integrity: Integrity) -> Config {
    Config {
        integrity,
        checks: CheckBudget {
            max_nodes: 50_000_000,
            hash_mib: 16,
            ..CheckBudget::default()
        },
        ..quick_config()
    }
}

/// The integrity settings of the scenarios: the defaults, except address-block separation
/// (everything is 127.0.0.1 here; `sybils_from_one_block_…` tests it on its own).
pub(super) fn scenario_integrity() -> Integrity {
    Integrity {
        address_separation: c960_coordinator::integrity::trust::AddressSeparation::Off,
        // `serve`'s default share of validated values recounted one ply deeper.
        resplit_rate_ppm: 10_000,
        ..Integrity::default()
    }
}

/// `serve`'s integrity defaults on top of [`scenario_integrity`]: every value not vouched for by
/// the coordinator or the operator audited (by another worker's hidden replica where one is at
/// work, by the coordinator for its 1 % sample or where none is; secret checks of 1 % of
/// workers' results; agreements nothing anchors waiting for their workers' trust while others
/// work), replicas drawn from a pool of
/// 64. (Trust from
/// checks at any pace: the colluders earn it as fast as they can.)
pub(super) fn serve_integrity() -> Integrity {
    Integrity {
        audit_rate_ppm: 1_000_000,
        audit_sample_ppm: 10_000,
        check_rate_trusted_ppm: 10_000,
        check_rate_untrusted_ppm: 10_000,
        unanchored_sample_ppm: 0,
        idle_reverify_upto: 4,
        draw_pool: c960_coordinator::work::transitioner::DRAW_POOL,
        ..scenario_integrity()
    }
}

pub(super) async fn run(s: Scenario) -> Figures {
    run_with(s, None).await
}

/// [`run`] with the coordinator's check budget at `over_budget` nodes (so that it can check
/// nothing) and every worker trusted by the operator as it registers: the case where only
/// workers, never the coordinator, can settle a value.
pub(super) async fn run_with(s: Scenario, over_budget: Option<u64>) -> Figures {
    let trust = over_budget.map(|_| TrustLevel::Operator);
    run_trusting(s, over_budget, trust, Duration::ZERO).await
}

/// [`run`] with the coordinator's check budget at `over_budget` nodes and every worker given
/// `trust` as it appears (earned trust: as if it had passed its checks, so its values are
/// audited; the operator's: they are not); once complete, the workers go on for `reverify` (the
/// spare-capacity re-verification, `Integrity::idle_reverify_upto`), and the wrong values are
/// counted at completion and after.
pub(super) async fn run_trusting(
    s: Scenario,
    over_budget: Option<u64>,
    trust: Option<TrustLevel>,
    reverify: Duration,
) -> Figures {
    let mut cfg = config(s.integrity);
    if let Some(max_nodes) = over_budget {
        cfg.checks.max_nodes = max_nodes;
    }
    let trust_everyone = trust.is_some();
    let grant = |store: &dyn Store, id: u64| match trust {
        Some(TrustLevel::Earned) => {
            let code = c960_coordinator::store::codes::trust_code(TrustLevel::Earned);
            store
                .raw_tx(&mut |c| {
                    c.exec(
                        &format!("UPDATE workers SET trusted = {code} WHERE id = {id}"),
                        &[],
                    )
                    .map(|_| ())
                })
                .unwrap();
        }
        _ => {
            store.set_trust(id, true).unwrap();
        }
    };
    let server = TestServer::start(cfg).await;
    let mut campaigns = Vec::new();
    for (depth, ply, positions) in &s.campaigns {
        // `shuffle:A-B`: shuffle chess starts A..=B (unsplit); otherwise Chess960 starts.
        let spec = match positions.strip_prefix("shuffle:") {
            Some(range) => {
                let (a, b) = range.split_once('-').unwrap();
                let numbers = (a.parse().unwrap()..=b.parse().unwrap()).collect();
                NewCampaign::in_family(
                    c960_common::family::Family::Shuffle,
                    *depth,
                    2,
                    None,
                    numbers,
                )
                .unwrap()
            }
            None => NewCampaign::new(*depth, 2, None, parse_positions(positions).unwrap())
                .unwrap()
                .split_by(&ply.to_string())
                .unwrap(),
        };
        campaigns.push(
            server
                .store
                .create_campaign(&spec, c960_coordinator::clock::now_ms())
                .unwrap(),
        );
    }
    let began = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut honest_tasks = Vec::new();
    // Liars register first and answer at once: the worst case for the honest workers.
    // In the order of `s.liars` (and of `logs`).
    let mut liar_ids = Vec::new();
    let mut liar_tasks = Vec::new();
    let logs: Vec<Arc<LiarLog>> = s.liars.iter().map(|_| Arc::default()).collect();
    let store = server.store.clone();
    let collusion = Collusion {
        pairs: Arc::default(),
        trusted: Arc::new(move |id| {
            store
                .worker(id)
                .ok()
                .flatten()
                .is_some_and(|w| w.trust != TrustLevel::Untrusted)
        }),
    };
    for (i, strategy) in s.liars.iter().enumerate() {
        let client = RawClient::new(&server.url, None);
        let auth = client.register(&format!("liar-{i}")).await.unwrap();
        if trust_everyone {
            grant(&*server.store, auth.worker_id);
        }
        liar_ids.push(auth.worker_id);
        liar_tasks.push(tokio::spawn(liar(
            client,
            auth,
            *strategy,
            stop.clone(),
            logs[i].clone(),
            collusion.clone(),
        )));
    }
    for i in 0..s.honest {
        let mut cfg = c960_worker::runner::RunnerConfig::new(&server.url);
        cfg.name = format!("honest-{i}");
        cfg.progress = false;
        cfg.backoff_base = Duration::from_millis(50);
        cfg.backoff_cap = Duration::from_millis(500);
        cfg.hash_mib = 16;
        honest_tasks.push(tokio::spawn(c960_worker::runner::run(cfg, rx.clone())));
    }
    let total: u64 = campaigns.iter().map(|c| progress(&server, c.id).0).sum();
    let until = Instant::now() + s.limit;
    let mut complete = false;
    let mut settled_since: Option<Instant> = None;
    while Instant::now() < until {
        if trust_everyone {
            let now = c960_coordinator::clock::now_ms();
            for w in server.store.worker_summary(now).unwrap().list {
                if w.trust == TrustLevel::Untrusted && !w.quarantined && w.checks_failed == 0 {
                    grant(&*server.store, w.id);
                }
            }
        }
        let valid: u64 = campaigns.iter().map(|c| progress(&server, c.id).1).sum();
        // Complete, and stays complete with nothing waiting for a moment.
        if valid == total && waiting(&server) == 0 {
            let since = *settled_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_millis(500) {
                complete = true;
                break;
            }
        } else {
            settled_since = None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let secs = began.elapsed().as_secs_f64();
    if !complete {
        // What still waits, for the report of an incomplete run.
        server
            .store
            .raw_read(&mut |c| {
                for r in c.query("SELECT id, workunit_id, worker_a, worker_b, state, rounds, depth, claim_a, claim_b FROM disputes WHERE state != 2", &[])? {
                    eprintln!("OPEN DISPUTE {:?}", (r.i64(0)?, r.i64(1)?, r.i64(2)?, r.i64(3)?, r.i64(4)?, r.i64(5)?, r.i64(6)?));
                }
                for r in c.query("SELECT id, dispute_id, worker_id, state, deadline_ms FROM challenges WHERE state = 0", &[])? {
                    eprintln!("OPEN CHALLENGE {:?}", (r.i64(0)?, r.i64(1)?, r.i64(2)?, r.i64(3)?));
                }
                Ok(())
            })
            .unwrap();
    }
    let mut truths: BTreeMap<String, PerftResult> = BTreeMap::new();
    let mut wrong_at_completion = None;
    if !reverify.is_zero() && complete {
        wrong_at_completion = Some(wrong_values(&server, &campaigns, &mut truths));
        tokio::time::sleep(reverify).await;
        // Complete again (a dispute may have reopened what a convicted worker validated).
        complete = false;
        let until = Instant::now() + s.limit;
        while Instant::now() < until {
            let valid: u64 = campaigns.iter().map(|c| progress(&server, c.id).1).sum();
            if valid == total && waiting(&server) == 0 {
                complete = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    tx.send(true).unwrap();
    for t in honest_tasks {
        let _ = t.await;
    }
    for t in liar_tasks {
        let _ = t.await;
    }

    let (wrong, wrong_divides) = wrong_values(&server, &campaigns, &mut truths);
    let workers = server
        .store
        .worker_summary(c960_coordinator::clock::now_ms())
        .unwrap();
    let quarantined = |liar: bool| {
        workers
            .list
            .iter()
            .filter(|w| w.quarantined && liar_ids.contains(&w.id) == liar)
            .count() as u64
    };
    // A liar that lied and was not quarantined: what became of its lies, for the report.
    for (log, id) in logs.iter().zip(&liar_ids) {
        let lied_on = log.lied_on.lock().unwrap().clone();
        let caught = workers.list.iter().any(|w| w.id == *id && w.quarantined);
        if lied_on.is_empty() || caught {
            continue;
        }
        eprintln!("liar {id} lied on {lied_on:?} and is not quarantined");
        for wu in lied_on {
            for r in server.store.results(wu).unwrap() {
                eprintln!("  workunit {wu}: {r:?}");
            }
            // Where it stands (state, check, needed) and its disputes, to tell a stall's cause.
            server
                .store
                .raw_tx(&mut |c| {
                    let rows = c.query(
                        &format!("SELECT state, check_state, needed, audit_replicas, max_results FROM workunits WHERE id = {wu}"),
                        &[],
                    )?;
                    eprintln!("  workunit {wu}: {rows:?}");
                    let rows = c.query(
                        &format!("SELECT id, state, worker_a, worker_b, result_a, result_b, rounds, losers FROM disputes WHERE workunit_id = {wu}"),
                        &[],
                    )?;
                    eprintln!("  its disputes: {rows:?}");
                    Ok(())
                })
                .ok();
        }
    }
    let cost = server.store.check_cost().unwrap();
    let disputes = server.store.dispute_cost().unwrap();
    Figures {
        disputes: disputes.decided,
        convicted: disputes.convicted,
        coordinator_share: cost.coordinator_node_share,
        spare_replicas: cost.spare_replicas,
        name: s.name,
        workers: s.honest + s.liars.len(),
        liars: s.liars.len(),
        units: total,
        wrong_values: wrong,
        wrong_divides,
        wrong_at_completion,
        audits: cost.audits_run,
        audits_overturned: cost.audits_overturned,
        audit_replicas: cost.audit_replicas,
        honest_quarantined: quarantined(false),
        liars_quarantined: quarantined(true),
        lies_told: logs.iter().map(|l| l.lies.load(Ordering::Relaxed)).sum(),
        liars_who_lied: logs
            .iter()
            .filter(|l| l.lies.load(Ordering::Relaxed) > 0)
            .count() as u64,
        replicas_per_valid: cost.replicas_per_valid_workunit,
        checks_run: cost.checks_run,
        check_nodes: cost.check_nodes,
        resplits: cost.resplits_run,
        resplits_overturned: cost.resplits_overturned,
        secs,
        complete,
    }
}

/// Checks, audits and disputes still open: any may catch a liar and reopen what it validated.
fn waiting(server: &TestServer) -> u64 {
    let cost = server.store.check_cost().unwrap();
    let disputes = server.store.dispute_cost().unwrap();
    cost.checks_waiting + cost.audits_waiting + disputes.opened - disputes.decided
}

/// (total, valid) of a campaign.
pub(super) fn progress(server: &TestServer, id: u64) -> (u64, u64) {
    let p = c960_tests::progress_of(&*server.store, id);
    (p.total, p.valid)
}

pub(super) fn assert_targets(f: &Figures) {
    eprintln!("{f:?}");
    assert_eq!(f.wrong_values, 0, "wrong values accepted: {f:?}");
    assert_eq!(f.wrong_divides, 0, "wrong divides accepted: {f:?}");
    assert_eq!(f.honest_quarantined, 0, "honest workers quarantined: {f:?}");
    assert!(f.complete, "campaign not complete: {f:?}");
}

/// Every valid value against the truth, computed here (and kept in `truths`): (wrong totals,
/// right totals with a wrong divide).
fn wrong_values(
    server: &TestServer,
    campaigns: &[c960_coordinator::model::Campaign],
    truths: &mut BTreeMap<String, PerftResult>,
) -> (u64, u64) {
    let mut wrong = 0;
    let mut wrong_divides = 0;
    for c in campaigns {
        let (_, rows) = server.store.table(c.id).unwrap();
        for r in rows.iter().filter(|r| r.status == RowStatus::Valid) {
            let kind = match r.sp {
                Some(sp) => WorkUnitKind::Perft {
                    position: PositionSpec::StartPosition(sp),
                    depth: r.depth,
                },
                None => WorkUnitKind::Perft {
                    position: PositionSpec::Fen(r.fen.clone()),
                    depth: r.depth,
                },
            };
            let key = format!("{}/{}", r.fen, r.depth);
            let t = truths.entry(key).or_insert_with(|| truth(&kind)).clone();
            let digest = result_digest(r.workunit_id, &kind, &WorkResult::Perft(t.clone()));
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            if r.nodes != Some(t.nodes) {
                wrong += 1;
            } else if r.digest.as_deref() != Some(hex.as_str()) {
                wrong_divides += 1;
            }
        }
    }
    (wrong, wrong_divides)
}
