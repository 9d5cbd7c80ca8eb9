//! The store throughput benchmark (issue 15): handouts + accepted results per second over real
//! HTTP against real `c960-coordinator serve` processes on one database (a SQLite file or a
//! PostgreSQL schema). Simulated workers answer at once with correct results (perft depth 1 of
//! Chess960 starts, computed here), at quorum 2 so that every workunit is validated. The run
//! ends when every workunit is valid; then the store's invariants are checked (no worker held
//! two replicas of one workunit, every canonical result a valid result of its workunit) and one
//! tab-separated line is printed. `scripts/store-bench.sh` runs the whole matrix.
//!
//! ```text
//! store_bench --serve target/release/c960-coordinator --db DB --coordinators N --batch B \
//!     [--clients C] [--campaigns K] [--pool-size P] [--writers W]
//! ```
//! `DB` is `sqlite` (a file in a temporary directory) or a `postgres://` URL (the schema
//! `store_bench` is dropped and created).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use c960_common::wire::{BatchedOutcome, Capabilities, FetchBatchResponse, FetchResponse};
use c960_coordinator::store::postgres::{PgOptions, PgStore, is_postgres_url};
use c960_coordinator::store::{SqliteStore, Store};
use c960_coordinator::work::campaign::NewCampaign;
use c960_tests::{ServeProcess, fresh_schema, honest_result, honest_submission};
use c960_worker::client::Client;

struct Args {
    serve: String,
    db: String,
    coordinators: usize,
    batch: u32,
    clients: usize,
    campaigns: usize,
    /// Connections in each coordinator's PostgreSQL pool (the URL's `pool_size`), if set.
    pool_size: Option<usize>,
    /// Writing transactions at once in each coordinator (the URL's `writers`), if set.
    writers: Option<usize>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        serve: "target/release/c960-coordinator".into(),
        db: "sqlite".into(),
        coordinators: 1,
        batch: 64,
        clients: 32,
        campaigns: 8,
        pool_size: None,
        writers: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--serve" => a.serve = v,
            "--db" => a.db = v,
            "--coordinators" => a.coordinators = num(&v)?.max(1),
            "--batch" => a.batch = num(&v)?.clamp(1, 256) as u32,
            "--clients" => a.clients = num(&v)?.max(1),
            "--campaigns" => a.campaigns = num(&v)?.max(1),
            "--pool-size" => a.pool_size = Some(num(&v)?.max(1)),
            "--writers" => a.writers = Some(num(&v)?.max(1)),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

/// Rows of a query that must be empty or a count.
fn count(store: &dyn Store, sql: &str) -> u64 {
    let mut n = 0;
    store
        .raw_read(&mut |c| {
            n = c.query_one(sql, &[])?.u64(0)?;
            Ok(())
        })
        .expect("count query");
    n
}

/// What the simulated workers did.
#[derive(Default)]
struct Tally {
    handouts: AtomicU64,
    accepted: AtomicU64,
    refused: AtomicU64,
    errors: AtomicU64,
    noted: AtomicU64,
}

/// One simulated worker: fetches (one or `batch` workunits per request), answers at once with
/// the correct result, until `done`.
async fn worker(url: String, name: String, batch: u32, tally: Arc<Tally>, done: Arc<AtomicBool>) {
    let client = Client::new(&url).expect("client");
    let auth = client.register(&name, 1, 0).await.expect("register");
    let caps = Capabilities::builtin();
    let idle = || tokio::time::sleep(Duration::from_millis(5));
    while !done.load(Ordering::Relaxed) {
        if batch == 1 {
            match client.fetch(&auth, &caps).await {
                Ok(FetchResponse::Assigned(a)) => {
                    tally.handouts.fetch_add(1, Ordering::Relaxed);
                    match client.submit(&auth, &honest_submission(&a)).await {
                        Ok(_) => tally.accepted.fetch_add(1, Ordering::Relaxed),
                        Err(_) => tally.refused.fetch_add(1, Ordering::Relaxed),
                    };
                }
                Ok(_) => idle().await,
                Err(_) => {
                    tally.errors.fetch_add(1, Ordering::Relaxed);
                    idle().await
                }
            }
            continue;
        }
        match client.fetch_batch(&auth, &caps, batch).await {
            Ok(FetchBatchResponse::Assigned(leases)) => {
                tally
                    .handouts
                    .fetch_add(leases.len() as u64, Ordering::Relaxed);
                let results = leases.iter().map(honest_result).collect();
                match client.submit_batch(&auth, results).await {
                    Ok(answer) => {
                        for o in answer.outcomes {
                            match o {
                                BatchedOutcome::Accepted => &tally.accepted,
                                BatchedOutcome::Refused(e) => {
                                    note(&tally, &e.code, &e.message);
                                    &tally.refused
                                }
                            }
                            .fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Err(e) => {
                        note(&tally, "submit", &e.to_string());
                        tally.errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Ok(_) => idle().await,
            Err(e) => {
                note(&tally, "fetch", &e.to_string());
                tally.errors.fetch_add(1, Ordering::Relaxed);
                idle().await
            }
        }
    }
}

/// Prints the first few refusals and errors on stderr (a correct run has none).
fn note(tally: &Tally, what: &str, message: &str) {
    if tally.noted.fetch_add(1, Ordering::Relaxed) < 5 {
        eprintln!("store_bench: {what}: {message}");
    }
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let dir = tempfile::tempdir().expect("temporary directory");
    let (store, db_arg, backend): (Box<dyn Store>, String, &str) = if is_postgres_url(&args.db) {
        let schema = "store_bench";
        let mut url = fresh_schema(&args.db, schema);
        if let Some(n) = args.pool_size {
            url.push_str(&format!("&pool_size={n}"));
        }
        if let Some(n) = args.writers {
            url.push_str(&format!("&writers={n}"));
        }
        let opts = PgOptions {
            schema: Some(schema.into()),
            pool_size: 2,
            ..PgOptions::default()
        };
        let store = PgStore::open_with(&args.db, &opts).expect("open PostgreSQL");
        (Box::new(store), url, "postgres")
    } else {
        let path = dir.path().join("bench.db");
        let store = SqliteStore::open(&path).expect("open SQLite");
        (Box::new(store), path.display().to_string(), "sqlite")
    };
    for _ in 0..args.campaigns {
        let spec = NewCampaign::new(1, 2, None, (0..960).collect()).expect("campaign");
        store.create_campaign(&spec, 0).expect("create campaign");
    }
    let units = (args.campaigns * 960) as u64;
    let serve_args = [
        "--open-enrolment",
        "--shared-address-blocks",
        "--registrations-per-hour",
        "0",
        "--rate-per-address",
        "0",
        "--rate-per-worker",
        "0",
        "--max-open-leases",
        "0",
        "--untrusted-lease-cap",
        "0",
        "--block-lease-cap",
        "0",
        "--max-connections-per-address",
        "0",
        "--max-connections",
        "0",
    ];
    let coordinators: Vec<ServeProcess> = (0..args.coordinators)
        .map(|_| {
            ServeProcess::start_with(
                Path::new(&args.serve),
                Path::new(&db_arg),
                &serve_args,
                Stdio::null(),
            )
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tally = Arc::new(Tally::default());
    let done = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tasks: Vec<_> = (0..args.clients)
        .map(|i| {
            let url = coordinators[i % coordinators.len()].url.clone();
            rt.spawn(worker(
                url,
                format!("bench{i}"),
                args.batch,
                tally.clone(),
                done.clone(),
            ))
        })
        .collect();
    let until = started + Duration::from_secs(600);
    loop {
        let valid: u64 = store
            .progress()
            .expect("progress")
            .iter()
            .map(|p| p.valid)
            .sum();
        if valid == units || Instant::now() > until {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let secs = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    rt.block_on(async {
        for t in tasks {
            let _ = tokio::time::timeout(Duration::from_secs(30), t).await;
        }
    });
    drop(coordinators);
    let progress = store.progress().expect("progress");
    let (valid, failed): (u64, u64) = progress
        .iter()
        .fold((0, 0), |(v, f), p| (v + p.valid, f + p.failed));
    assert_eq!((valid, failed), (units, 0), "every workunit valid once");
    let two_replicas = count(
        &*store,
        "SELECT COUNT(*) FROM (SELECT workunit_id, worker_id FROM results WHERE state IN (0, 1, 4) GROUP BY workunit_id, worker_id HAVING COUNT(*) > 1) d",
    );
    let bad_canonical = count(
        &*store,
        "SELECT COUNT(*) FROM workunits w WHERE w.state = 1 AND NOT EXISTS (SELECT 1 FROM results r WHERE r.id = w.canonical_result_id AND r.workunit_id = w.id AND r.outcome = 1)",
    );
    assert_eq!(
        two_replicas, 0,
        "a worker held two replicas of one workunit"
    );
    assert_eq!(bad_canonical, 0, "a canonical result that is not valid");
    let handouts = tally.handouts.load(Ordering::Relaxed);
    let accepted = tally.accepted.load(Ordering::Relaxed);
    println!(
        "{backend}\t{}\t{}\t{}\t{units}\t{handouts}\t{accepted}\t{}\t{}\t{secs:.2}\t{:.0}",
        args.coordinators,
        args.batch,
        args.clients,
        tally.refused.load(Ordering::Relaxed),
        tally.errors.load(Ordering::Relaxed),
        (handouts + accepted) as f64 / secs
    );
}
