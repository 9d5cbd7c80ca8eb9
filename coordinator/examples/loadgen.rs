//! Load generator: N simulated workers (default 200) hammer a coordinator served in this process
//! on 127.0.0.1 with a real SQLite file, for a fixed time (default 60 s). Each worker registers,
//! then loops fetch → compute (tiny perft, so the coordinator is what is measured) → submit,
//! honouring `Retry-After`. At the end it checks that there were no 5xx answers, that every
//! accepted result is in the store (none lost), and that every valid workunit equals the
//! reference table; it prints throughput and latency percentiles.
//!
//! ```text
//! cargo run --release -p c960-coordinator --example loadgen -- --workers 200 --secs 60
//! ```
//! Exit status 1 if any check fails.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use c960_common::digest::result_digest;
use c960_common::wire::{Capabilities, FetchResponse, PROTOCOL_VERSION, SubmitRequest};
use c960_compute::compute::compute;
use c960_coordinator::model::ReplicaState;
use c960_coordinator::net::api::auth::Enrolment;
use c960_coordinator::net::api::limits::Rate;
use c960_coordinator::net::api::{self, AppState, Config, Limits};
use c960_coordinator::store::{SqliteStore, Store};
use c960_coordinator::work::campaign::NewCampaign;
use c960_worker::client::{Client, ClientError, engine};
use clap::Parser;

/// Load generator for the c960 coordinator.
#[derive(Parser)]
struct Args {
    /// Simulated workers.
    #[arg(long, default_value_t = 200)]
    workers: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 60)]
    secs: u64,
    /// Perft depth of the workunits (small: the coordinator is under test, not the engine).
    #[arg(long, default_value_t = 1)]
    depth: u32,
    /// Campaigns of 960 workunits created up front (enough that work never runs out).
    #[arg(long, default_value_t = 60)]
    campaigns: usize,
    /// Per-worker rate limit in requests/s (0: off, to measure capacity).
    #[arg(long, default_value_t = 0.0)]
    rate_per_worker: f64,
}

/// What one simulated worker saw.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    server_errors: u64,
    rate_limited: u64,
    other_refusals: BTreeMap<String, u64>,
    transport_errors: u64,
    accepted: Vec<u64>,
}

impl Tally {
    fn error(&mut self, e: &ClientError) {
        match e {
            ClientError::Refused { status, .. } if *status >= 500 => self.server_errors += 1,
            ClientError::Refused { status: 429, .. } => self.rate_limited += 1,
            ClientError::Refused { code, .. } => {
                *self.other_refusals.entry(code.clone()).or_default() += 1
            }
            ClientError::Transport(_) | ClientError::BadAnswer(_) => self.transport_errors += 1,
        }
    }
}

async fn simulated_worker(url: String, i: usize, until: Instant) -> Tally {
    let mut t = Tally::default();
    let client = Client::new(&url).expect("client");
    let started = Instant::now();
    let auth = loop {
        match client.register(&format!("load-{i}"), 1, 0).await {
            Ok(a) => break a,
            Err(e) => {
                t.error(&e);
                if Instant::now() > until {
                    return t;
                }
                tokio::time::sleep(e.retry_after().unwrap_or(Duration::from_millis(100))).await;
            }
        }
    };
    t.latencies_us.push(started.elapsed().as_micros() as u64);
    while Instant::now() < until {
        let s = Instant::now();
        let fetched = client.fetch(&auth, &Capabilities::builtin()).await;
        t.latencies_us.push(s.elapsed().as_micros() as u64);
        let a = match fetched {
            Ok(FetchResponse::Assigned(a)) => a,
            Ok(FetchResponse::NoWork {
                retry_after_secs, ..
            }) => {
                tokio::time::sleep(Duration::from_secs(u64::from(retry_after_secs))).await;
                continue;
            }
            Err(e) => {
                t.error(&e);
                tokio::time::sleep(e.retry_after().unwrap_or(Duration::from_millis(100))).await;
                continue;
            }
        };
        let result = compute(&a.kind, &AtomicBool::new(false), |_, _, _| {}).expect("compute");
        let req = SubmitRequest {
            protocol: PROTOCOL_VERSION,
            lease_id: a.lease_id,
            workunit_id: a.workunit_id,
            digest: result_digest(a.workunit_id, &a.kind, &result.clone().into()),
            result: result.into(),
            elapsed_ms: 0,
            engine: engine(),
        };
        // A computed result is retried until accepted or definitely refused, like the worker.
        loop {
            let s = Instant::now();
            let r = client.submit(&auth, &req).await;
            t.latencies_us.push(s.elapsed().as_micros() as u64);
            match r {
                Ok(_) => {
                    t.accepted.push(a.lease_id);
                    break;
                }
                Err(e) => {
                    t.error(&e);
                    if !e.is_transient() {
                        break;
                    }
                    tokio::time::sleep(e.retry_after().unwrap_or(Duration::from_millis(100))).await;
                }
            }
        }
    }
    t
}

fn reference(depth: u32) -> BTreeMap<u16, u64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../common/tests/data/chess960_startpos_perft.csv");
    let text = std::fs::read_to_string(path).expect("reference table");
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[2 + depth as usize].parse().unwrap(),
            )
        })
        .collect()
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !(1..=6).contains(&args.depth) {
        eprintln!("error: --depth must be 1..6 (the reference table's range)");
        return ExitCode::FAILURE;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(&dir.path().join("load.db")).expect("store"));
    let spec = NewCampaign::new(args.depth, 2, None, (0..960).collect()).expect("campaign");
    for _ in 0..args.campaigns {
        store
            .create_campaign(&spec, c960_coordinator::clock::now_ms())
            .expect("campaign");
    }
    let config = Config {
        retry_after_secs: 1,
        enrolment: Enrolment::Open,
        limits: Limits {
            // Every simulated worker is 127.0.0.1.
            per_address: Rate::UNLIMITED,
            per_worker: Rate::new(args.rate_per_worker, args.rate_per_worker * 4.0),
            registrations_per_block: Rate::UNLIMITED,
            ..Limits::default()
        },
        // One address block for all: no block separation or block cap (the workunits have
        // public answers, so the untrusted workers' quorums are anchored).
        integrity: c960_coordinator::integrity::trust::Integrity {
            address_separation: c960_coordinator::integrity::trust::AddressSeparation::Off,
            block_lease_cap: 0,
            ..Default::default()
        },
        ..Config::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (tallies, wall) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = api::app(AppState::new(store.clone(), config))
            .into_make_service_with_connect_info::<SocketAddr>();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let began = Instant::now();
        let until = began + Duration::from_secs(args.secs);
        let tasks: Vec<_> = (0..args.workers)
            .map(|i| tokio::spawn(simulated_worker(url.clone(), i, until)))
            .collect();
        let mut tallies = Vec::new();
        for t in tasks {
            tallies.push(t.await.expect("worker task"));
        }
        (tallies, began.elapsed())
    });

    let mut lat: Vec<u64> = tallies
        .iter()
        .flat_map(|t| t.latencies_us.iter().copied())
        .collect();
    lat.sort_unstable();
    let server_errors: u64 = tallies.iter().map(|t| t.server_errors).sum();
    let rate_limited: u64 = tallies.iter().map(|t| t.rate_limited).sum();
    let transport: u64 = tallies.iter().map(|t| t.transport_errors).sum();
    let mut refusals: BTreeMap<String, u64> = BTreeMap::new();
    for t in &tallies {
        for (k, v) in &t.other_refusals {
            *refusals.entry(k.clone()).or_default() += v;
        }
    }
    let accepted: Vec<u64> = tallies.iter().flat_map(|t| t.accepted.clone()).collect();
    let lost = accepted
        .iter()
        .filter(|&&id| {
            store
                .lease(id)
                .ok()
                .flatten()
                .is_none_or(|l| l.state != ReplicaState::Returned)
        })
        .count();
    let reference = reference(args.depth);
    let mut valid = 0u64;
    let mut wrong = 0u64;
    for c in store.campaigns().expect("campaigns") {
        for r in store.table(c.id).expect("table").1 {
            if r.status == c960_coordinator::model::RowStatus::Valid {
                valid += 1;
                if r.nodes != Some(reference[&r.sp.unwrap()]) {
                    wrong += 1;
                }
            }
        }
    }
    let secs = wall.as_secs_f64();
    println!(
        "loadgen: {} workers, {:.1} s, depth {}, per-worker rate limit {}",
        args.workers,
        secs,
        args.depth,
        if args.rate_per_worker > 0.0 {
            format!("{}/s", args.rate_per_worker)
        } else {
            "off".into()
        }
    );
    println!(
        "requests {}  ({:.0}/s)   results accepted {}  ({:.0}/s)   workunits validated {}",
        lat.len(),
        lat.len() as f64 / secs,
        accepted.len(),
        accepted.len() as f64 / secs,
        valid
    );
    println!(
        "latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  max {:.2}",
        percentile(&lat, 0.50),
        percentile(&lat, 0.90),
        percentile(&lat, 0.99),
        percentile(&lat, 1.0)
    );
    println!(
        "5xx {server_errors}   429 {rate_limited}   transport errors {transport}   other refusals {refusals:?}"
    );
    println!("lost results {lost}   valid workunits differing from the reference {wrong}");
    if server_errors > 0 || lost > 0 || wrong > 0 || accepted.is_empty() {
        println!("FAIL");
        return ExitCode::FAILURE;
    }
    println!("OK");
    ExitCode::SUCCESS
}
