//! Quiet, sane defaults, with real processes and default flags: one default worker is never
//! rate limited by a default `serve`, expected back-pressure is logged at INFO, not WARN, and
//! Ctrl-C on `run` says what was done and how to resume, nothing more, and the operator's
//! exports (with the admin token) are not rate limited.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use c960_coordinator::store::{SqliteStore, Store};
use c960_tests::{ServeProcess, bins, signal};

/// `c960-worker work --server URL` with default flags (its state under `home`), its output
/// (stdout and stderr) into `log`.
fn work(url: &str, home: &Path, log: &Path) -> Child {
    let out = std::fs::File::create(log).unwrap();
    Command::new(&bins().1)
        .args(["work", "--server", url])
        .env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("C960_ENROL_SECRET")
        .env_remove("RUST_LOG")
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap()
}

/// `serve` with these flags on `db`, its log into `log`.
fn serve(db: &Path, args: &[&str], log: &Path) -> ServeProcess {
    let file = std::fs::File::create(log).unwrap();
    ServeProcess::start(db, args, Stdio::from(file))
}

/// `campaign add --db DB ARGS…`, which must succeed.
fn add_campaign(db: &Path, args: &[&str]) {
    let out = Command::new(&bins().0)
        .args(["campaign", "add", "--db"])
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// Waits until campaign 1 on `db` has every workunit valid (at most five minutes).
fn wait_complete(db: &Path) {
    let store = SqliteStore::open(db).unwrap();
    let until = Instant::now() + Duration::from_secs(300);
    loop {
        let p = store.progress().unwrap().remove(0);
        if p.valid == p.total {
            return;
        }
        assert!(Instant::now() < until, "campaign not complete: {p:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Stops a worker as a service manager would (SIGTERM: finish and submit, then exit 0).
fn stop(mut worker: Child) {
    signal(&worker, "TERM");
    let exit = worker.wait().unwrap();
    assert!(exit.success(), "worker exit {exit:?}");
}

#[test]
fn one_default_worker_is_never_rate_limited_by_a_default_serve() {
    bins();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    let (serve_log, worker_log) = (dir.path().join("serve.log"), dir.path().join("w.log"));
    let server = serve(&db, &["--open-enrolment"], &serve_log);
    // Depth 5: workunits of a few milliseconds, four at a time for a new (untrusted) worker,
    // so the worker would ask many times a second; quorum 1, anchored by the public table.
    add_campaign(
        &db,
        &["--depth", "5", "--positions", "0-119", "--quorum", "1"],
    );
    let worker = work(&server.url, &dir.path().join("home"), &worker_log);
    wait_complete(&db);
    stop(worker);
    server.stop();
    let log = std::fs::read_to_string(&worker_log).unwrap();
    let served = std::fs::read_to_string(&serve_log).unwrap();
    assert!(log.contains("session: 120 results accepted"), "{log}");
    assert!(
        // A refusal reads "coordinator refused (429 rate_limited): …"; a bare "429" may be
        // in the server's port number.
        !log.contains("rate_limited") && !log.contains("(429 "),
        "{log}"
    );
    assert!(!log.contains("WARN"), "{log}");
    assert!(!served.contains("rate_limited"), "{served}");
    assert!(!served.contains("WARN"), "{served}");
}

#[test]
fn back_pressure_is_logged_at_info_by_the_worker_and_the_coordinator() {
    bins();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    let (serve_log, worker_log) = (dir.path().join("serve.log"), dir.path().join("w.log"));
    // A coordinator stricter than the worker's pace: one request a second, bursts of 4.
    let server = serve(
        &db,
        &["--open-enrolment", "--rate-per-worker", "1"],
        &serve_log,
    );
    add_campaign(
        &db,
        &["--depth", "4", "--positions", "0-19", "--quorum", "1"],
    );
    let worker = work(&server.url, &dir.path().join("home"), &worker_log);
    wait_complete(&db);
    stop(worker);
    server.stop();
    for (who, path) in [("worker", &worker_log), ("coordinator", &serve_log)] {
        let log = std::fs::read_to_string(path).unwrap();
        let limited: Vec<&str> = log.lines().filter(|l| l.contains("rate_limited")).collect();
        assert!(!limited.is_empty(), "the {who} met no limit: {log}");
        assert!(
            limited.iter().all(|l| l.contains(" INFO ")),
            "{who}: {limited:#?}"
        );
        assert!(!log.contains("WARN"), "{who}: {log}");
    }
}

#[test]
fn ctrl_c_on_run_says_what_was_done_and_how_to_resume_and_gives_the_leases_back() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960-run.db");
    // The README's main job, with default flags.
    let child = Command::new(coordinator)
        .args(["run", "--depth", "6", "--db"])
        .arg(&db)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt it once it has computed something and holds leases.
    let mut store = None;
    let until = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < until, "run computed nothing");
        std::thread::sleep(Duration::from_millis(50));
        if store.is_none() && db.exists() {
            store = SqliteStore::open(&db).ok();
        }
        let Some(p) = store
            .as_ref()
            .and_then(|s| s.progress().ok()?.into_iter().next())
        else {
            continue;
        };
        if p.valid >= 1 && p.in_flight > 0 {
            break;
        }
    }
    signal(&child, "INT");
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    );
    // Exit status 130, as for a shell's Ctrl-C; no table.
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(stdout, "");
    // The line it printed when it started, then at most three after the signal.
    let (first, after) = stderr.split_once('\n').unwrap();
    assert!(first.starts_with("campaign 1: perft depth 6"), "{stderr}");
    assert!(after.lines().count() <= 3, "{stderr}");
    let p = store.unwrap().progress().unwrap().remove(0);
    assert!(
        after.contains(&format!("interrupted: {} of 960 workunits done", p.valid)),
        "{stderr}"
    );
    assert!(after.contains("to resume"), "{stderr}");
    // Quiet because the workers gave their leases back before the server went, not because
    // their failures were muted.
    assert_eq!(p.in_flight, 0, "{p:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_with_the_admin_token_are_not_limited_and_the_publics_still_are() {
    bins();
    const ADMIN: &str = "admin-token-for-the-export-test-0123";
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.db");
    let server = serve(
        &db,
        &["--admin-token", ADMIN],
        &dir.path().join("serve.log"),
    );
    add_campaign(&db, &["--depth", "2", "--positions", "0-3"]);
    c960_worker::client::install_crypto_provider();
    let http = reqwest::Client::new();
    let table = format!("{}/api/v1/campaigns/1/table?format=csv", server.url);
    let balance = format!("{}/api/v1/campaigns/1/balance", server.url);
    let get = |url: &str, token: Option<&str>| {
        let mut req = http.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        async move { req.send().await.unwrap() }
    };
    // The operator: many exports in a row (the default limit is 0.5 a second, bursts of 2).
    for _ in 0..20 {
        assert_eq!(get(&table, Some(ADMIN)).await.status().as_u16(), 200);
    }
    // The public, from the same address: still limited.
    let mut public = Vec::new();
    for _ in 0..10 {
        let status = get(&table, None).await.status().as_u16();
        public.push(status);
        if status == 429 {
            break;
        }
    }
    assert_eq!(public[..2], [200, 200], "{public:?}");
    assert_eq!(public.last(), Some(&429), "{public:?}");
    // The operator is not held up by the public's spent budget, for any export.
    assert_eq!(get(&table, Some(ADMIN)).await.status().as_u16(), 200);
    let report = get(&balance, Some(ADMIN)).await.status().as_u16();
    assert_ne!(
        report, 429,
        "the balance export of a perft campaign is refused, not limited"
    );
    // A wrong token is the public's: limited.
    let wrong = get(&table, Some("not-the-admin-token-0123456789")).await;
    assert_eq!(wrong.status().as_u16(), 429);
    let body: serde_json::Value = serde_json::from_str(&wrong.text().await.unwrap()).unwrap();
    assert_eq!(body["code"], "rate_limited");
    server.stop();
}
