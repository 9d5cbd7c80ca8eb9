//! Coordinator overhead benchmark (issue 5), ignored by default; run it in release:
//!
//! ```text
//! cargo test --release -p c960-tests --test suite -- --ignored --nocapture overhead::
//! ```
//!
//! Handouts + accepted results per second on 127.0.0.1 with trivial work (perft depth 1) and a
//! real SQLite file, over HTTP with concurrent clients, and through the store alone; and how fast
//! a split campaign's workunits are generated. Prints figures; asserts only correctness.

use std::time::{Duration, Instant};

use c960_common::digest::result_digest;
use c960_common::wire::{
    BatchedOutcome, Capabilities, FetchBatchResponse, FetchResponse, PerftResult, WorkResult,
};
use c960_coordinator::model::Submission;
use c960_coordinator::store::{SqliteStore, Store};
use c960_coordinator::work::campaign::NewCampaign;
use c960_tests::{TestServer, honest_result, honest_submission, quick_config};
use c960_worker::client::Client;

const CAMPAIGNS: usize = 5;

/// Rate limits and the lease cap off: this measures the coordinator, not its limiter.
fn bench_config() -> c960_coordinator::net::api::Config {
    let mut config = quick_config();
    config.limits.per_worker = c960_coordinator::net::api::limits::Rate::UNLIMITED;
    config.limits.max_open_leases = 0;
    config
}

fn trivial_campaigns(store: &dyn Store) -> u64 {
    let positions: Vec<u16> = (0..960).collect();
    for _ in 0..CAMPAIGNS {
        let spec = NewCampaign::new(1, 1, None, positions.clone()).unwrap();
        store
            .create_campaign(&spec, c960_coordinator::clock::now_ms())
            .unwrap();
    }
    (CAMPAIGNS * 960) as u64
}

/// Waits for the clients, checks they did every workunit, and prints the rate.
async fn report(
    label: &str,
    clients: Vec<tokio::task::JoinHandle<u64>>,
    units: u64,
    started: Instant,
) {
    let mut done = 0;
    for c in clients {
        done += c.await.unwrap();
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(done, units);
    println!(
        "{label}: {units} workunits, {} handouts + results in {secs:.2} s = {:.0} per second",
        2 * units,
        2.0 * units as f64 / secs
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "benchmark: run in release with --ignored --nocapture"]
async fn coordinator_overhead() {
    // 1. Over HTTP, 8 concurrent clients.
    let server = TestServer::start(bench_config()).await;
    let units = trivial_campaigns(&*server.store);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let url = server.url.clone();
        tasks.push(tokio::spawn(async move {
            let client = Client::new(&url).unwrap();
            let auth = client.register(&format!("b{i}"), 1, 0).await.unwrap();
            let caps = Capabilities::builtin();
            let mut done = 0u64;
            while let FetchResponse::Assigned(a) = client.fetch(&auth, &caps).await.unwrap() {
                client.submit(&auth, &honest_submission(&a)).await.unwrap();
                done += 1;
            }
            done
        }));
    }
    report("HTTP, 8 clients", tasks, units, started).await;

    // 1b. Over HTTP, 8 concurrent clients fetching and submitting 64 workunits per request.
    let server = TestServer::start(bench_config()).await;
    let units = trivial_campaigns(&*server.store);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let url = server.url.clone();
        tasks.push(tokio::spawn(async move {
            let client = Client::new(&url).unwrap();
            let auth = client.register(&format!("b{i}"), 1, 0).await.unwrap();
            let caps = Capabilities::builtin();
            let mut done = 0u64;
            while let FetchBatchResponse::Assigned(batch) =
                client.fetch_batch(&auth, &caps, 64).await.unwrap()
            {
                let results = batch.iter().map(honest_result).collect();
                let answer = client.submit_batch(&auth, results).await.unwrap();
                assert!(
                    answer
                        .outcomes
                        .iter()
                        .all(|o| *o == BatchedOutcome::Accepted)
                );
                done += batch.len() as u64;
            }
            done
        }));
    }
    report("HTTP, 8 clients, batches of 64", tasks, units, started).await;

    // 2. The store alone (what one request costs in SQLite), one thread.
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("b.db")).unwrap();
    let units = trivial_campaigns(&store);
    let w = store.register_worker("b", b"h", "e", 0).unwrap();
    let caps = Capabilities::builtin();
    let started = Instant::now();
    let mut n = 0u64;
    while let Some(l) = store.assign(w, &caps, 1, 3_600_000).unwrap() {
        let result = WorkResult::Perft(PerftResult {
            nodes: 20,
            divide: vec![],
        });
        let sub = Submission {
            digest: result_digest(l.workunit_id, &l.kind, &result),
            result,
            elapsed_ms: 0,
            engine: "b".into(),
            implausible: false,
        };
        store.submit(w, l.lease_id, &sub, 2).unwrap();
        n += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    assert_eq!(n, units);
    println!(
        "store alone: {} assigns + submits in {secs:.2} s = {:.0} per second",
        2 * n,
        2.0 * n as f64 / secs
    );

    // 3. Generating a split campaign: start positions 0-9 at ply 3 (and 4 for 0-1).
    for (k, positions) in [(3, (0..10).collect::<Vec<u16>>()), (4, vec![0, 1])] {
        let spec = NewCampaign::new(7, 2, None, positions.clone())
            .unwrap()
            .split_at(k)
            .unwrap();
        let started = Instant::now();
        let c = store.create_campaign(&spec, 0).unwrap();
        let secs = started.elapsed().as_secs_f64();
        let (_, units) = store.split_units(c.id).unwrap();
        let paths: u64 = units.iter().map(|u| u.multiplicity).sum();
        println!(
            "split campaign depth 7, ply {k}, {} start positions: {} workunits for {paths} paths ({:.1} % merged away), created in {secs:.2} s ({:.0} workunits per second, one transaction)",
            positions.len(),
            units.len(),
            100.0 * (1.0 - units.len() as f64 / paths as f64),
            units.len() as f64 / secs
        );
    }
    let _ = Duration::ZERO;
}
