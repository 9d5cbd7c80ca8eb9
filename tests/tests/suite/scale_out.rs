//! Two coordinator processes on one PostgreSQL database, workers split between them, a campaign
//! over all 960 starts at quorum 2: the table equals the reference, no workunit is validated
//! twice, no worker holds two replicas of one workunit, and with one coordinator SIGKILLed
//! mid-run the other finishes the campaign; and a coordinator's log never shows the database's
//! password. Needs `C960_TEST_POSTGRES` (skipped loudly without it, failing under CI).

use std::process::Stdio;
use std::time::{Duration, Instant};

use c960_coordinator::store::Store;
use c960_coordinator::store::postgres::{PgOptions, PgStore};
use c960_coordinator::work::campaign::NewCampaign;
use c960_tests::{ServeProcess, bins, postgres_schema, reference};

/// Rows of a query that must be empty or a count.
fn count(store: &dyn Store, sql: &str) -> u64 {
    let mut n = 0;
    store
        .raw_read(&mut |c| {
            n = c.query_one(sql, &[])?.u64(0)?;
            Ok(())
        })
        .unwrap();
    n
}

/// Synchronous on purpose: the PostgreSQL store's client must not be called from an async task
/// (the coordinator calls it from `spawn_blocking`); the workers run on a runtime of their own.
fn two_coordinators_finish_a_campaign_with_one_killed(depth: u32, schema: &str) {
    // A schema of its own; the coordinator processes reach it through the URL's options.
    let Some((base, url)) = postgres_schema("PostgreSQL scale-out test", schema) else {
        return;
    };
    bins();
    let opts = PgOptions {
        schema: Some(schema.into()),
        ..PgOptions::default()
    };
    let store = PgStore::open_with(&base, &opts).unwrap();
    let c = store
        .create_campaign(
            &NewCampaign::new(depth, 2, None, (0..960).collect()).unwrap(),
            0,
        )
        .unwrap();
    let args = [
        "--open-enrolment",
        "--shared-address-blocks",
        "--registrations-per-hour",
        "0",
        "--lease-secs",
        "3",
        "--rate-per-address",
        "100000",
    ];
    let a = ServeProcess::start(std::path::Path::new(&url), &args, Stdio::null());
    let mut b = Some(ServeProcess::start(
        std::path::Path::new(&url),
        &args,
        Stdio::null(),
    ));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (stop, rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for i in 0..4 {
        let server = if i % 2 == 0 {
            &a.url
        } else {
            &b.as_ref().unwrap().url
        };
        let mut cfg = c960_worker::runner::RunnerConfig::new(server);
        cfg.name = format!("w{i}");
        cfg.progress = false;
        cfg.threads = 1;
        cfg.hash_mib = 16;
        cfg.backoff_cap = Duration::from_secs(1);
        tasks.push(rt.spawn(c960_worker::runner::run(cfg, rx.clone())));
    }
    let started = Instant::now();
    let mut killed_at = None;
    let until = started + Duration::from_secs(600);
    loop {
        let p = store.progress().unwrap().pop().unwrap();
        if b.is_some() && p.valid >= p.total / 3 {
            // SIGKILL mid-run: its open leases expire and go to the workers of the other.
            b.take().unwrap().stop();
            killed_at = Some((started.elapsed().as_secs_f64(), p.valid));
        }
        if p.valid == p.total {
            break;
        }
        assert!(Instant::now() < until, "campaign not finished: {p:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let wall = started.elapsed().as_secs_f64();
    assert!(
        b.is_none(),
        "the campaign finished before a coordinator was killed"
    );
    stop.send(true).unwrap();
    rt.block_on(async {
        for t in tasks {
            // The workers of the killed coordinator give up or stop; neither matters here.
            let _ = tokio::time::timeout(Duration::from_secs(30), t).await;
        }
    });
    drop(a);
    let (_, rows) = store.table(c.id).unwrap();
    assert_eq!(rows.len(), 960);
    let refs = reference();
    for r in &rows {
        let sp = r.sp.unwrap();
        assert_eq!(r.nodes, Some(refs[&sp][depth as usize - 1]), "start {sp}");
    }
    let p = store.progress().unwrap().pop().unwrap();
    assert_eq!(
        (p.valid, p.failed),
        (960, 0),
        "each workunit counted valid once"
    );
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM (SELECT workunit_id, worker_id FROM results WHERE state IN (0, 1, 4) GROUP BY workunit_id, worker_id HAVING COUNT(*) > 1) d"
        ),
        0,
        "a worker held two replicas of one workunit"
    );
    assert_eq!(
        count(
            &store,
            "SELECT COUNT(*) FROM workunits w WHERE w.state = 1 AND NOT EXISTS (SELECT 1 FROM results r WHERE r.id = w.canonical_result_id AND r.workunit_id = w.id AND r.outcome = 1)"
        ),
        0,
        "a canonical result that is not a valid result of its workunit"
    );
    let (killed_s, valid_then) = killed_at.unwrap_or_default();
    println!(
        "scale-out depth {depth}: {} workunits valid in {wall:.1} s over two coordinators and 4 workers; \
         one coordinator SIGKILLed at {killed_s:.1} s with {valid_then} valid, the other finished; \
         {} replicas issued, {} returned; validated twice: 0; two replicas to one worker: 0",
        p.valid,
        count(&store, "SELECT COUNT(*) FROM results"),
        count(&store, "SELECT COUNT(*) FROM results WHERE state = 1"),
    );
}

#[test]
fn two_coordinators_on_postgres_depth_3() {
    two_coordinators_finish_a_campaign_with_one_killed(3, "scale_out_d3");
}

/// The evidence run: depth 5 (release build: `cargo test --release -p c960-tests --test
/// scale_out -- --ignored`).
#[test]
#[ignore]
fn two_coordinators_on_postgres_depth_5() {
    two_coordinators_finish_a_campaign_with_one_killed(5, "scale_out_d5");
}

/// A coordinator on PostgreSQL never writes its database's password into its log: the URL of
/// `--db` is shown as `postgres://user:***@…` when serving and when stopping. (The test cluster
/// trusts 127.0.0.1, so it accepts the made-up password.)
#[test]
fn the_database_password_stays_out_of_the_log() {
    let Some((_, url)) = postgres_schema("PostgreSQL password test", "c960_password_log") else {
        return;
    };
    bins();
    let (scheme, rest) = url.split_once("://").unwrap();
    let (user, host) = rest.split_once('@').unwrap();
    let user = user.split(':').next().unwrap();
    let password = "a-db-password-0417";
    let with_password = format!("{scheme}://{user}:{password}@{host}");
    let server = ServeProcess::start(
        std::path::Path::new(&with_password),
        &["--open-enrolment"],
        Stdio::piped(),
    );
    let (exit, log) = server.stop_with("TERM");
    assert!(exit.success(), "{exit:?}\n{log}");
    assert!(!log.contains(password), "{log}");
    let redacted = format!("{scheme}://{user}:***@{host}");
    for event in ["serving", "stopped: "] {
        assert!(
            log.lines()
                .any(|l| l.contains(event) && l.contains(&redacted)),
            "no {event:?} line naming {redacted}: {log}"
        );
    }
}
