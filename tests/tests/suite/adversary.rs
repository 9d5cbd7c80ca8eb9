//! The adversary suite: a real coordinator on 127.0.0.1, real honest workers (the in-process
//! `c960-worker` runner) and scripted malicious clients registered as separate workers through
//! the real HTTP API. Liars collude (they all return the same wrong, self-consistent result with
//! a correctly computed digest), answer at once or with a delay, lie on a fraction of units,
//! only on units whose answer is not public, or only once trusted; sybils register many
//! identities from one address block and try to hoard leases.
//!
//! Every scenario asserts the integrity targets: no wrong value in the table, no honest worker
//! quarantined. The quick scenarios run in the default test run; `full_figures_at_10_30_50_
//! percent_liars` (ignored, release mode, `.ci/run` runs it) prints the figures recorded in
//! `docs/security-results.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use c960_common::codec;
use c960_common::digest::result_digest;
use c960_common::wire::{
    Assignment, BatchedOutcome, BatchedResult, CONTENT_TYPE, Capabilities, FetchBatchRequest,
    FetchBatchResponse, PROTOCOL_VERSION, PerftResult, PositionSpec, RegisterRequest,
    RegisterResponse, SubmitBatchRequest, SubmitBatchResponse, WorkResult, WorkUnitKind,
    WorkerAuth,
};
use c960_common::{Position, StartPosition};
use c960_coordinator::api::Config;
use c960_coordinator::api::limits::Rate;
use c960_coordinator::campaign::{NewCampaign, parse_positions};
use c960_coordinator::checker::CheckBudget;
use c960_coordinator::store::Store;
use c960_coordinator::trust::Integrity;
use c960_tests::{TestServer, quick_config};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How a scripted liar behaves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Strategy {
    /// Lies on every workunit at once, without computing anything (a fake, self-consistent
    /// divide that all liars agree on).
    Instant,
    /// Lies on this share of workunits (chosen by workunit id, so all liars lie on the same
    /// ones), honest on the rest.
    Fraction(f64),
    /// Honest on start positions (public answers), lies on split sub-positions.
    PrivateOnly,
    /// Honest until it has returned this many results, then lies on everything.
    BehaveThenLie(u64),
    /// Lies on everything, but waits this long before answering, to look plausible.
    Delayed(Duration),
    /// One of a pair of patient colluders: honest until trusted, then lies (+1 on one root
    /// move, both members alike) only on workunits the pair holds whole, `lies` times at most
    /// for the pair; everything else honest. The pair shares what each member holds.
    PatientPair { pair: usize, lies: u64 },
    /// A fresh identity that answers the right total with a wrong divide (+1 and -1 on two root
    /// moves): the public total cannot tell.
    SwapDivide,
}

/// What the members of one patient pair share.
#[derive(Default)]
struct PairState {
    /// Workunit → the pair's members holding a replica of it.
    held: BTreeMap<u64, BTreeSet<u64>>,
    /// The workunits the pair lies on.
    lied_on: BTreeSet<u64>,
}

/// The shared state of every pair, and who is trusted (as a colluder would infer from its
/// lease cap growing).
#[derive(Clone)]
struct Collusion {
    pairs: Arc<std::sync::Mutex<BTreeMap<usize, PairState>>>,
    trusted: Arc<dyn Fn(u64) -> bool + Send + Sync>,
}

/// A worker client that may bind its own source address (127.0.X.Y: a different address
/// block per X), speaking the wire protocol directly.
#[derive(Clone)]
struct RawClient {
    http: reqwest::Client,
    url: String,
}

impl RawClient {
    fn new(url: &str, from: Option<IpAddr>) -> RawClient {
        c960_worker::client::install_crypto_provider();
        RawClient {
            http: reqwest::Client::builder()
                .local_address(from)
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            url: url.to_string(),
        }
    }

    /// POSTs a bincode request; `Err((status, code))` for a refusal.
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        path: &str,
        token: Option<&str>,
        req: &Req,
    ) -> Result<Resp, (u16, String)> {
        let mut post = self
            .http
            .post(format!("{}/api/v1/{path}", self.url))
            .header("content-type", CONTENT_TYPE)
            .body(codec::encode(req).unwrap());
        if let Some(t) = token {
            post = post.bearer_auth(t);
        }
        let resp = post.send().await.map_err(|e| (0, e.to_string()))?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.map_err(|e| (status, e.to_string()))?;
        if status != 200 {
            let code = serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v["code"].as_str().map(str::to_string))
                .unwrap_or_default();
            return Err((status, code));
        }
        Ok(codec::decode(&bytes).unwrap())
    }

    async fn register(&self, name: &str) -> Result<WorkerAuth, (u16, String)> {
        let req = RegisterRequest {
            protocol: PROTOCOL_VERSION,
            name: name.into(),
            engine: c960_worker::client::engine(),
            threads: 1,
            hash_mib: 0,
            enrol_secret: None,
        };
        let r: RegisterResponse = self.call("register", None, &req).await?;
        Ok(r.auth)
    }

    async fn fetch(&self, auth: &WorkerAuth, max: u32) -> Result<Vec<Assignment>, (u16, String)> {
        let req = FetchBatchRequest {
            protocol: PROTOCOL_VERSION,
            capabilities: Capabilities::builtin(),
            max_units: max,
        };
        match self.call("fetch-batch", Some(&auth.token), &req).await? {
            FetchBatchResponse::Assigned(a) => Ok(a),
            FetchBatchResponse::NoWork { .. } => Ok(Vec::new()),
        }
    }

    async fn submit(
        &self,
        auth: &WorkerAuth,
        results: Vec<BatchedResult>,
    ) -> Result<Vec<BatchedOutcome>, (u16, String)> {
        let req = SubmitBatchRequest {
            protocol: PROTOCOL_VERSION,
            engine: c960_worker::client::engine(),
            results,
        };
        let r: SubmitBatchResponse = self.call("submit-batch", Some(&auth.token), &req).await?;
        Ok(r.outcomes)
    }
}

fn root(kind: &WorkUnitKind) -> (Position, u32) {
    let WorkUnitKind::Perft { position, depth } = kind else {
        panic!("perft only")
    };
    let pos = match position {
        PositionSpec::StartPosition(n) => StartPosition::new(u32::from(*n)).unwrap().position(),
        PositionSpec::Fen(f) => Position::from_fen(f).unwrap(),
    };
    (pos, *depth)
}

fn truth(kind: &WorkUnitKind) -> PerftResult {
    c960_compute::compute::compute(kind, &AtomicBool::new(false), |_, _, _| {}).unwrap()
}

/// The colluders' lie: every root move counted 1,000 times. Deterministic, so all liars agree,
/// self-consistent (the divide sums to the total), and free to produce.
fn fake(kind: &WorkUnitKind) -> PerftResult {
    fake_scaled(kind, 1000)
}

/// [`fake`] with `per_move` nodes per root move.
fn fake_scaled(kind: &WorkUnitKind, per_move: u64) -> PerftResult {
    let (pos, _) = root(kind);
    let divide: Vec<(String, u64)> = pos
        .legal_moves()
        .as_slice()
        .iter()
        .map(|m| (m.to_string(), per_move))
        .collect();
    PerftResult {
        nodes: divide.iter().map(|d| d.1).sum(),
        divide,
    }
}

/// The right total with +1 and -1 on the first two root moves.
fn swapped_divide(kind: &WorkUnitKind) -> PerftResult {
    let mut r = truth(kind);
    if r.divide.len() >= 2 && r.divide[1].1 > 0 {
        r.divide[0].1 += 1;
        r.divide[1].1 -= 1;
    }
    r
}

/// The truth plus one on the first root move: a lie that looks like an honest count.
fn off_by_one(kind: &WorkUnitKind) -> PerftResult {
    let mut r = truth(kind);
    if let Some(first) = r.divide.first_mut() {
        first.1 += 1;
        r.nodes += 1;
    }
    r
}

fn batched(a: &Assignment, r: PerftResult) -> BatchedResult {
    let result = WorkResult::Perft(r);
    BatchedResult {
        lease_id: a.lease_id,
        workunit_id: a.workunit_id,
        digest: result_digest(a.workunit_id, &a.kind, &result),
        result,
        elapsed_ms: 1,
    }
}

/// What one scripted liar did.
#[derive(Default)]
struct LiarLog {
    lies: AtomicU64,
    honest: AtomicU64,
}

/// Runs a scripted liar until `stop` or until it is shut out (quarantined).
async fn liar(
    client: RawClient,
    auth: WorkerAuth,
    strategy: Strategy,
    stop: Arc<AtomicBool>,
    log: Arc<LiarLog>,
    collusion: Collusion,
) {
    let mut returned = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let got = match client.fetch(&auth, 8).await {
            Ok(g) => g,
            Err((403, _)) => return,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if got.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        // A patient pair: record what this member holds, give the partner a moment to fetch,
        // then lie on what the pair holds whole (once trusted, up to its budget of lies).
        let mut pair_lies = BTreeSet::new();
        if let Strategy::PatientPair { pair, lies } = strategy {
            {
                let mut pairs = collusion.pairs.lock().unwrap();
                let state = pairs.entry(pair).or_default();
                for a in &got {
                    state
                        .held
                        .entry(a.workunit_id)
                        .or_default()
                        .insert(auth.worker_id);
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let trusted = (collusion.trusted)(auth.worker_id);
            let mut pairs = collusion.pairs.lock().unwrap();
            let state = pairs.entry(pair).or_default();
            for a in &got {
                let whole = state.held.get(&a.workunit_id).is_some_and(|h| h.len() >= 2);
                if state.lied_on.contains(&a.workunit_id)
                    || (trusted && whole && (state.lied_on.len() as u64) < lies)
                {
                    state.lied_on.insert(a.workunit_id);
                    pair_lies.insert(a.workunit_id);
                }
            }
        }
        let mut results = Vec::new();
        for a in &got {
            let split = matches!(
                &a.kind,
                WorkUnitKind::Perft {
                    position: PositionSpec::Fen(_),
                    ..
                }
            );
            let lie = match strategy {
                Strategy::Instant | Strategy::Delayed(_) => Some(fake(&a.kind)),
                Strategy::Fraction(p) => ((a.workunit_id.wrapping_mul(2_654_435_761) % 1000)
                    < (p * 1000.0) as u64)
                    .then(|| off_by_one(&a.kind)),
                Strategy::PrivateOnly => split.then(|| off_by_one(&a.kind)),
                Strategy::BehaveThenLie(n) => (returned >= n).then(|| off_by_one(&a.kind)),
                Strategy::PatientPair { .. } => pair_lies
                    .contains(&a.workunit_id)
                    .then(|| off_by_one(&a.kind)),
                Strategy::SwapDivide => Some(swapped_divide(&a.kind)),
            };
            let r = match lie {
                Some(l) => {
                    log.lies.fetch_add(1, Ordering::Relaxed);
                    l
                }
                None => {
                    log.honest.fetch_add(1, Ordering::Relaxed);
                    truth(&a.kind)
                }
            };
            results.push(batched(a, r));
            returned += 1;
        }
        if let Strategy::Delayed(d) = strategy {
            tokio::time::sleep(d).await;
        }
        if let Err((403, _)) = client.submit(&auth, results).await {
            return;
        }
    }
}

/// One scenario: a split campaign (plus, optionally, a start-position campaign with public
/// answers), honest runners and liars.
struct Scenario {
    name: &'static str,
    honest: usize,
    liars: Vec<Strategy>,
    /// (depth, split ply, positions) of each campaign.
    campaigns: Vec<(u32, u32, &'static str)>,
    integrity: Integrity,
    limit: Duration,
}

/// What came out of a scenario.
#[derive(Debug)]
struct Figures {
    name: &'static str,
    workers: usize,
    liars: usize,
    units: u64,
    wrong_values: u64,
    wrong_divides: u64,
    audits: u64,
    audits_overturned: u64,
    audit_replicas: u64,
    honest_quarantined: u64,
    liars_quarantined: u64,
    lies_told: u64,
    liars_who_lied: u64,
    replicas_per_valid: f64,
    checks_run: u64,
    check_nodes: u64,
    resplits: u64,
    resplits_overturned: u64,
    secs: f64,
    complete: bool,
}

fn config(integrity: Integrity) -> Config {
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
fn scenario_integrity() -> Integrity {
    Integrity {
        address_separation: c960_coordinator::trust::AddressSeparation::Off,
        // `serve`'s default share of validated values recounted one ply deeper.
        resplit_rate_ppm: 10_000,
        ..Integrity::default()
    }
}

/// `serve`'s integrity defaults on top of [`scenario_integrity`]: every value not vouched for by
/// the coordinator or the operator audited, replicas drawn from a pool of 64. (Trust from
/// checks at any pace: the colluders earn it as fast as they can.)
fn serve_integrity() -> Integrity {
    Integrity {
        audit_rate_ppm: 1_000_000,
        draw_pool: c960_coordinator::scheduler::DRAW_POOL,
        ..scenario_integrity()
    }
}

async fn run(s: Scenario) -> Figures {
    run_with(s, None).await
}

/// [`run`] with the coordinator's check budget at `over_budget` nodes (so that it can check
/// nothing) and every worker trusted by the operator as it registers: the case where only
/// workers, never the coordinator, can settle a value.
async fn run_with(s: Scenario, over_budget: Option<u64>) -> Figures {
    let mut cfg = config(s.integrity);
    if let Some(max_nodes) = over_budget {
        cfg.checks.max_nodes = max_nodes;
    }
    let trust_everyone = over_budget.is_some();
    let server = TestServer::start(cfg).await;
    let mut campaigns = Vec::new();
    for (depth, ply, positions) in &s.campaigns {
        let spec = NewCampaign::new(*depth, 2, None, parse_positions(positions).unwrap())
            .unwrap()
            .split_by(&ply.to_string())
            .unwrap();
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
    let mut liar_ids = BTreeSet::new();
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
                .is_some_and(|w| w.trust != "untrusted")
        }),
    };
    for (i, strategy) in s.liars.iter().enumerate() {
        let client = RawClient::new(&server.url, None);
        let auth = client.register(&format!("liar-{i}")).await.unwrap();
        if trust_everyone {
            server.store.set_trust(auth.worker_id, true).unwrap();
        }
        liar_ids.insert(auth.worker_id);
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
                if w.trust == "untrusted" && !w.quarantined {
                    server.store.set_trust(w.id, true).unwrap();
                }
            }
        }
        let valid: u64 = campaigns.iter().map(|c| progress(&server, c.id).1).sum();
        let cost = server.store.check_cost().unwrap();
        let waiting = cost.checks_waiting + cost.audits_waiting;
        // Complete, and stays complete with no check waiting for a moment (a late check may
        // catch a liar and reopen what it validated).
        if valid == total && waiting == 0 {
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
    stop.store(true, Ordering::Relaxed);
    tx.send(true).unwrap();
    for t in honest_tasks {
        let _ = t.await;
    }
    for t in liar_tasks {
        let _ = t.await;
    }

    // Every valid value against the truth, computed here: its total, and its digest (the
    // divide and the total).
    let mut wrong = 0;
    let mut wrong_divides = 0;
    let mut truths: BTreeMap<String, PerftResult> = BTreeMap::new();
    for c in &campaigns {
        let (_, rows) = server.store.table(c.id).unwrap();
        for r in rows.iter().filter(|r| r.status == "valid") {
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
    let cost = server.store.check_cost().unwrap();
    Figures {
        name: s.name,
        workers: s.honest + s.liars.len(),
        liars: s.liars.len(),
        units: total,
        wrong_values: wrong,
        wrong_divides,
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

/// (total, valid) of a campaign.
fn progress(server: &TestServer, id: u64) -> (u64, u64) {
    let p = server
        .store
        .progress()
        .unwrap()
        .into_iter()
        .find(|p| p.campaign.id == id)
        .unwrap();
    (p.total, p.valid)
}

fn assert_targets(f: &Figures) {
    eprintln!("{f:?}");
    assert_eq!(f.wrong_values, 0, "wrong values accepted: {f:?}");
    assert_eq!(f.wrong_divides, 0, "wrong divides accepted: {f:?}");
    assert_eq!(f.honest_quarantined, 0, "honest workers quarantined: {f:?}");
    assert!(f.complete, "campaign not complete: {f:?}");
}

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
    assert!(rows.iter().all(|r| r.status != "valid"));
}

/// Sybils: 12 identities from one address block. Registrations beyond the burst are refused
/// (429); the block's open leases are capped; no two of them ever hold or answer replicas of one
/// workunit, so even all of them colluding never form a quorum; an honest worker from another
/// block still gets work; a quarantined sybil gets no lease from inside the assign transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sybils_from_one_block_never_pair_and_cannot_hoard() {
    // Loopback blocks stand in for public ones here: separation everywhere.
    let mut cfg = config(Integrity {
        block_lease_cap: 20,
        address_separation: c960_coordinator::trust::AddressSeparation::Everywhere,
        ..Integrity::default()
    });
    cfg.limits.registrations_per_block = Rate::new(1.0 / 3600.0, 10.0);
    let server = TestServer::start(cfg).await;
    let spec = NewCampaign::new(3, 2, None, (0..100).collect()).unwrap();
    server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let mut sybils = Vec::new();
    let mut refused = 0;
    for i in 0..12 {
        // Distinct addresses inside one /24 change nothing.
        let ip: IpAddr = format!("127.0.0.{}", 1 + i).parse().unwrap();
        let client = RawClient::new(&server.url, Some(ip));
        match client.register(&format!("sybil-{i}")).await {
            Ok(a) => sybils.push((client, a)),
            Err((429, code)) => {
                assert_eq!(code, "rate_limited");
                refused += 1;
            }
            Err(e) => panic!("{e:?}"),
        }
    }
    assert_eq!((sybils.len(), refused), (10, 2));
    // Every sybil fetches as much as it can.
    let mut held = Vec::new();
    for (client, auth) in &sybils {
        held.extend(client.fetch(auth, 64).await.unwrap());
    }
    assert!(held.len() <= 20, "the block holds {} leases", held.len());
    let units: BTreeSet<u64> = held.iter().map(|a| a.workunit_id).collect();
    assert_eq!(units.len(), held.len(), "two sybils on one workunit");
    // They all answer the same lie; nothing pairs, nothing is valid.
    for (client, auth) in &sybils {
        let mine: Vec<BatchedResult> = held
            .iter()
            .filter(|a| {
                server.store.lease(a.lease_id).unwrap().unwrap().worker_id == auth.worker_id
            })
            .map(|a| batched(a, fake(&a.kind)))
            .collect();
        if !mine.is_empty() {
            let _ = client.submit(auth, mine).await.unwrap();
        }
    }
    // An honest worker from another block gets work at once.
    let honest = RawClient::new(&server.url, Some("127.0.1.1".parse().unwrap()));
    let h = honest.register("honest").await.unwrap();
    let got = honest.fetch(&h, 8).await.unwrap();
    assert!(!got.is_empty());
    let liars: BTreeSet<u64> = held
        .iter()
        .map(|a| server.store.lease(a.lease_id).unwrap().unwrap().worker_id)
        .collect();
    assert_eq!(liars.len(), 5, "4 leases each until the block's 20");
    for (_, auth) in &sybils {
        let w = server.store.worker(auth.worker_id).unwrap().unwrap();
        assert_eq!(
            w.quarantined,
            liars.contains(&auth.worker_id),
            "a known-answer lie is evidence: {w:?}"
        );
    }
    for (client, auth) in sybils.iter().filter(|(_, a)| liars.contains(&a.worker_id)) {
        assert_eq!(client.fetch(auth, 8).await.unwrap_err().0, 403);
    }
    let p = &server.store.progress().unwrap()[0];
    assert_eq!(p.valid, 0);
}

/// Issue 31's lease hoarding: 480 identities from 48 address blocks (open enrolment, `serve`'s
/// registration limit of 10 per block) register and fetch all they can, twice, while an honest
/// worker from a block of its own starts at the same time. Without probation they held every
/// replica within a second. Now each identity in probation holds one lease, a block eight, and
/// all of them together a quarter of the campaign plus one per block that held none
/// (`trust::probation_room`); the honest worker gets its first workunit, answers it, and
/// completes every replica it is offered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hoarders_from_48_blocks_leave_work_for_an_honest_newcomer() {
    use c960_coordinator::trust;
    const BLOCKS: usize = 48;
    const PER_BLOCK: usize = 10;
    let mut cfg = config(Integrity {
        probation_lease_cap: trust::PROBATION_LEASE_CAP,
        probation_block_cap: trust::PROBATION_BLOCK_CAP,
        probation_share_pct: trust::PROBATION_SHARE_PCT,
        draw_pool: c960_coordinator::scheduler::DRAW_POOL,
        ..Integrity::default()
    });
    cfg.limits.registrations_per_block = Rate::new(1.0 / 60.0, 10.0);
    let server = TestServer::start(cfg).await;
    let spec = NewCampaign::new(3, 2, None, (0..40).collect()).unwrap();
    let c = server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let began = Instant::now();
    let mut hoarders = Vec::new();
    for b in 0..BLOCKS {
        let url = server.url.clone();
        hoarders.push(tokio::spawn(async move {
            let mut held = Vec::new();
            for i in 0..PER_BLOCK {
                let ip: IpAddr = format!("127.60.{b}.{}", 1 + i).parse().unwrap();
                let client = RawClient::new(&url, Some(ip));
                let Ok(auth) = client.register(&format!("hoarder-{b}-{i}")).await else {
                    continue;
                };
                for _ in 0..2 {
                    let got = client.fetch(&auth, 64).await.unwrap_or_default();
                    held.extend(got.into_iter().map(|a| (b, auth.worker_id, a.lease_id)));
                }
            }
            held
        }));
    }
    // The honest worker, at the same time: fetch, compute, answer, until nothing is left for it.
    let honest = RawClient::new(&server.url, Some("127.0.0.1".parse().unwrap()));
    let h = honest.register("honest").await.unwrap();
    let (mut offered, mut completed, mut idle) = (0, 0, 0);
    let mut first_work = None;
    while began.elapsed() < Duration::from_secs(60) && idle < 20 {
        let got = honest.fetch(&h, 8).await.unwrap();
        if got.is_empty() {
            idle += if offered > 0 { 1 } else { 0 };
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        }
        idle = 0;
        first_work.get_or_insert_with(|| began.elapsed());
        offered += got.len();
        let results = got.iter().map(c960_tests::honest_result).collect();
        let outcomes = honest.submit(&h, results).await.unwrap();
        completed += outcomes
            .iter()
            .filter(|o| matches!(o, BatchedOutcome::Accepted))
            .count();
    }
    let secs = began.elapsed().as_secs_f64();
    let mut held = Vec::new();
    for t in hoarders {
        held.extend(t.await.unwrap());
    }
    // A second fetch hands an identity its own open lease again: distinct leases count.
    let held: BTreeSet<(usize, u64, u64)> = held.into_iter().collect();
    let leases: BTreeSet<u64> = held.iter().map(|(_, _, l)| *l).collect();
    let (mut per_worker, mut per_block) = (BTreeMap::new(), BTreeMap::new());
    for (b, w, _) in &held {
        *per_worker.entry(*w).or_insert(0) += 1;
        *per_block.entry(*b).or_insert(0) += 1;
    }
    let share = 80 * trust::PROBATION_SHARE_PCT as usize / 100;
    println!(
        "hoard: {} identities, {} leases held ({} blocks holding, at most {} a block); honest: first work after {:.2} s, {offered} replicas offered, {completed} completed in {secs:.1} s",
        per_worker.len(),
        leases.len(),
        per_block.len(),
        per_block.values().max().copied().unwrap_or(0),
        first_work.map_or(f64::NAN, |d| d.as_secs_f64()),
    );
    assert!(
        per_worker.values().all(|&n| n <= 1),
        "one lease an identity"
    );
    assert!(
        per_block
            .values()
            .all(|&n| n <= trust::PROBATION_BLOCK_CAP as usize),
        "{per_block:?}"
    );
    assert!(
        leases.len() <= share + BLOCKS,
        "the hoarders hold {} of 80 replicas",
        leases.len()
    );
    assert!(offered > 0, "the honest worker got no work");
    assert_eq!(completed, offered, "every replica offered completed");
    assert!(
        idle >= 20,
        "the honest worker was still being offered work after 60 s"
    );
    let (_, rows) = server.store.table(c.id).unwrap();
    assert_eq!(rows.len(), 40);
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
/// where it can), who settle it.
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
    // Each fetches and fabricates until nothing is left for it.
    let mut fabricated = 0;
    for _ in 0..20 {
        let mut any = false;
        for (i, g) in griefers.iter().enumerate() {
            let got = client.fetch(g, 8).await.unwrap();
            any |= !got.is_empty();
            let results: Vec<BatchedResult> = got
                .iter()
                .map(|a| batched(a, fake_scaled(&a.kind, 100 + i as u64)))
                .collect();
            fabricated += results.len();
            if !results.is_empty() {
                client.submit(g, results).await.unwrap();
            }
        }
        if !any {
            break;
        }
    }
    assert!(fabricated >= 40, "{fabricated} fabrications");
    let p = &server.store.progress().unwrap()[0];
    assert_eq!(p.failed, 0, "griefers failed workunits");
    // Two honest workers the operator trusts settle every workunit.
    let honest = c960_tests::HonestWorkers::start(&server.url, 2, None);
    c960_tests::wait_until(Duration::from_secs(60), || {
        let now = c960_coordinator::clock::now_ms();
        for w in server.store.worker_summary(now).unwrap().list {
            if w.name.starts_with("honest-") && w.trust == "untrusted" {
                server.store.set_trust(w.id, true).unwrap();
            }
        }
        let (total, valid) = progress(&server, c.id);
        if valid == total {
            Ok(())
        } else {
            Err(format!("not settled: {valid} of {total}"))
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
}

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

/// Issue 31: registrations from many address blocks are throttled as a whole, not only per
/// block: with a burst of 5, the sixth identity from a sixth block is refused (429).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_from_many_blocks_are_throttled_as_a_whole() {
    let mut cfg = config(Integrity::default());
    cfg.limits.registrations_total = Rate::new(1.0 / 3600.0, 5.0);
    let server = TestServer::start(cfg).await;
    let mut outcomes = Vec::new();
    for i in 0..8 {
        let ip: IpAddr = format!("127.0.{}.1", 10 + i).parse().unwrap();
        let client = RawClient::new(&server.url, Some(ip));
        outcomes.push(match client.register(&format!("id-{i}")).await {
            Ok(_) => "ok".to_string(),
            Err((status, code)) => format!("{status} {code}"),
        });
    }
    assert_eq!(outcomes[..5], ["ok"; 5]);
    assert!(
        outcomes[5..].iter().all(|o| o == "429 rate_limited"),
        "{outcomes:?}"
    );
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
