//! The measurements behind `docs/security-results.md` (issues 12 and 31), run by hand:
//! `cargo test -p c960-tests --test suite -- --ignored --nocapture --test-threads 1 hardening_figures::`.
//! They print figures and assert nothing about speed.

use std::time::{Duration, Instant};

use c960_common::wire::{Capabilities, FetchResponse};
use c960_coordinator::net::api::limits::Rate;
use c960_coordinator::net::api::{Config, Limits};
use c960_coordinator::store::Store;
use c960_coordinator::work::campaign::{NewCampaign, parse_positions};
use c960_tests::{TestServer, quick_config};
use c960_worker::client::Client;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `fetches` fetch + abandon round trips per worker; the fetch latencies, sorted.
async fn fetch_latencies(url: &str, workers: usize, fetches: usize) -> Vec<Duration> {
    let mut tasks = Vec::new();
    for i in 0..workers {
        let url = url.to_string();
        tasks.push(tokio::spawn(async move {
            let client = Client::new(&url).unwrap();
            let auth = client.register(&format!("f{i}"), 1, 0).await.unwrap();
            let mut out = Vec::with_capacity(fetches);
            for _ in 0..fetches {
                let t = Instant::now();
                let a = client.fetch(&auth, &Capabilities::builtin()).await.unwrap();
                out.push(t.elapsed());
                if let FetchResponse::Assigned(a) = a {
                    client.abandon(&auth, a.lease_id).await.unwrap();
                }
            }
            out
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort();
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "measurement: prints fetch latency beside export loops"]
async fn fetch_latency_beside_export_loops() {
    let server = TestServer::start(Config {
        limits: Limits {
            per_worker: Rate::UNLIMITED,
            max_open_leases: 0,
            ..quick_config().limits
        },
        ..quick_config()
    })
    .await;
    let started = Instant::now();
    let spec = NewCampaign::new(5, 2, None, parse_positions("0-959").unwrap())
        .unwrap()
        .split_by("2")
        .unwrap();
    let c = server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let units = server.store.progress().unwrap()[0].total;
    println!(
        "campaign: {units} workunits, created in {:.1?}",
        started.elapsed()
    );
    let quiet = fetch_latencies(&server.url, 4, 200).await;
    // Each loop exports the whole table again and again while the workers fetch.
    let (stop, rx) = tokio::sync::watch::channel(false);
    let mut loops = Vec::new();
    for _ in 0..4 {
        let url = format!("{}/api/v1/campaigns/{}/table?format=csv", server.url, c.id);
        let rx = rx.clone();
        loops.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut n = 0u32;
            let mut took = Duration::ZERO;
            let mut timeouts = 0u32;
            while !*rx.borrow() {
                let t = Instant::now();
                let r = http.get(&url).send().await.unwrap();
                let ok = r.status().as_u16() == 200;
                r.bytes().await.unwrap();
                if ok {
                    took += t.elapsed();
                    n += 1;
                } else {
                    timeouts += 1;
                }
            }
            (n, took, timeouts)
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let busy = fetch_latencies(&server.url, 4, 200).await;
    stop.send(true).unwrap();
    let mut exports = 0;
    let mut export_time = Duration::ZERO;
    let mut refused = 0;
    for l in loops {
        let (n, t, r) = l.await.unwrap();
        exports += n;
        export_time += t;
        refused += r;
    }
    for (name, v) in [("no export", &quiet), ("4 export loops", &busy)] {
        println!(
            "fetch latency, {name}: p50 {:.1?}, p99 {:.1?}, max {:.1?} ({} fetches)",
            percentile(v, 0.5),
            percentile(v, 0.99),
            v[v.len() - 1],
            v.len()
        );
    }
    println!(
        "exports: {exports} complete, mean {:.1?} each; {refused} not 200 (request timeout)",
        export_time / exports.max(1)
    );
}

#[tokio::test]
#[ignore = "measurement: prints admin-token guesses per second"]
async fn admin_token_guess_rate() {
    let admin = "admin-token-for-tests-0123456789";
    let server = TestServer::start(Config {
        admin_token_hash: Some(c960_coordinator::integrity::secrets::sha256(admin)),
        ..quick_config()
    })
    .await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/v1/admin/workunits/1/results", server.url);
    let (mut refused, mut guessed) = (0u32, 0u32);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        let r = http
            .get(&url)
            .bearer_auth(format!("guess-{guessed}-{refused}-0123456789"))
            .send()
            .await
            .unwrap();
        match r.status().as_u16() {
            401 => guessed += 1,
            429 => refused += 1,
            s => panic!("status {s}"),
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "admin token: {guessed} guesses checked in {secs:.1} s ({:.1}/s), {refused} answered 429 ({:.0}/s)",
        f64::from(guessed) / secs,
        f64::from(refused) / secs
    );
}

/// Issue 31's connection floods against a real `serve` (see `c960_tests::flood`): the status
/// probes' answers and latency, the worker's progress, the coordinator's CPU and memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "measurement: prints status latency and worker progress under connection floods"]
async fn connection_floods() {
    use c960_tests::flood::{self, Flood};
    let cases: [(&str, usize, bool, &[&str]); 4] = [
        (
            "13 addresses x 64, a block each, default flags",
            13,
            false,
            &[],
        ),
        (
            "50 addresses x 64, a block each, default flags",
            50,
            false,
            &[],
        ),
        ("13 addresses x 64 in one /24, default flags", 13, true, &[]),
        (
            "13 addresses x 64, a block each, --max-connections 256",
            13,
            false,
            &["--max-connections", "256"],
        ),
    ];
    for (name, addresses, one_block, args) in cases {
        let f = flood::run(&Flood {
            addresses,
            per_address: 64,
            one_block,
            serve_args: args.iter().map(|a| a.to_string()).collect(),
            probe_for: Duration::from_secs(30),
        })
        .await;
        println!("{name}: {}", f.line());
    }
}
