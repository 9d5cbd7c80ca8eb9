//! The volunteer's `c960-worker work` as a real process: one identity per running worker, the
//! two-stage stop, what it prints, how it gives up.

use c960_coordinator::model::{ReplicaState, ResultOutcome, RowStatus};
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use c960_coordinator::store::Store;
use c960_tests::{TestServer, bins, signal, worker_id};

/// `c960-worker work` with this HOME (no XDG_STATE_HOME, so the default state file is
/// `$HOME/.local/state/c960/worker.json`), output to `log`.
fn work(server_url: &str, home: &Path, log: &Path, extra: &[&str]) -> Child {
    let (_, w) = bins();
    let out = std::fs::File::create(log).unwrap();
    Command::new(w)
        .arg("work")
        .args(["--server", server_url, "--max-backoff-secs", "1"])
        .args(extra)
        .env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("C960_ENROL_SECRET")
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap()
}

/// `work --once` to the end: its exit and its log.
fn work_once(server_url: &str, home: &Path, log: &Path) -> (std::process::ExitStatus, String) {
    let mut w = work(server_url, home, log, &["--once", "--threads", "1"]);
    let exit = w.wait().unwrap();
    (exit, std::fs::read_to_string(log).unwrap())
}

/// The ids of the workers registered with a coordinator.
fn registered(server: &TestServer) -> Vec<u64> {
    let now = c960_coordinator::clock::now_ms();
    let list = server.store.worker_summary(now).unwrap().list;
    list.iter().map(|w| w.id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_keeps_one_identity_per_coordinator() {
    bins();
    let a = TestServer::start(c960_tests::quick_config()).await;
    let b = TestServer::start(c960_tests::quick_config()).await;
    let ca = a.campaign(2, "0-3");
    b.campaign(2, "0-3");
    let home = a.dir.path().join("home");
    let log = |name: &str| a.dir.path().join(name);
    let (exit, first) = work_once(&a.url, &home, &log("a1.log"));
    assert!(exit.success(), "{first}");
    assert!(
        first.contains(&format!("registered with {}", a.url)),
        "{first}"
    );
    let on_a = registered(&a);
    assert_eq!(on_a.len(), 1);
    // Another coordinator (its URL spelt with a trailing slash): a registration there, beside
    // the first identity.
    let (exit, log_b) = work_once(&format!("{}/", b.url), &home, &log("b.log"));
    assert!(exit.success(), "{log_b}");
    assert!(
        log_b.contains("beside those for 1 other coordinator"),
        "{log_b}"
    );
    assert_eq!(registered(&b).len(), 1);
    // Back on the first: the first identity, no new registration, its results its own.
    let (exit, again) = work_once(&a.url, &home, &log("a2.log"));
    assert!(exit.success(), "{again}");
    assert!(!again.contains("registered"), "{again}");
    let state = home.join(".local/state/c960/worker.json");
    assert!(
        again.contains(&format!(
            "worker {} of {} (identity in {}",
            on_a[0],
            a.url,
            state.display()
        )),
        "{again}"
    );
    assert_eq!(registered(&a), on_a);
    let (_, rows) = a.store.table(ca.id).unwrap();
    let by_first: usize = rows
        .iter()
        .map(|r| a.store.results(r.workunit_id).unwrap())
        .map(|rs| rs.iter().filter(|r| r.worker_id == on_a[0]).count())
        .sum();
    assert_eq!(by_first, 2, "both runs on A computed as worker {}", on_a[0]);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let servers: Vec<&str> = v["identities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["server"].as_str().unwrap())
        .collect();
    assert_eq!(servers, [a.url.as_str(), b.url.as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_with_one_home_are_two_identities_and_finish_a_quorum_of_two() {
    bins();
    let server = TestServer::start(c960_tests::quick_config()).await;
    let c = server.campaign(3, "0-9");
    let home = server.dir.path().join("home");
    let a = work(
        &server.url,
        &home,
        &server.dir.path().join("a.log"),
        &["--threads", "1"],
    );
    let b = work(
        &server.url,
        &home,
        &server.dir.path().join("b.log"),
        &["--threads", "1"],
    );
    server.wait_finished(c.id, Duration::from_secs(120)).await;
    for w in [&a, &b] {
        signal(w, "TERM");
    }
    for mut w in [a, b] {
        let exit = w.wait().unwrap();
        assert!(exit.success(), "worker exit {exit:?}");
    }
    let log = std::fs::read_to_string(server.dir.path().join("b.log")).unwrap();
    assert!(log.contains("using 1 of "), "{log}");
    assert!(log.contains("MiB perft table"), "{log}");
    // Through a pipe (here a file): plain lines, no colours, no progress line.
    assert!(!log.contains('\x1b'), "ANSI escape in {log}");
    assert!(log.contains("registered with"), "{log}");
    assert!(log.contains("lifetime:"), "{log}");
    let state = home.join(".local/state/c960");
    let (first, second) = (
        worker_id(&state.join("worker.json")),
        worker_id(&state.join("worker-2.json")),
    );
    assert_ne!(first, second);
    let (_, rows) = server.store.table(c.id).unwrap();
    assert!(
        rows.iter().all(|r| r.status == RowStatus::Valid),
        "{rows:?}"
    );
    for r in rows {
        let mut voters: Vec<u64> = server
            .store
            .results(r.workunit_id)
            .unwrap()
            .iter()
            .filter(|r| r.outcome == ResultOutcome::Valid)
            .map(|r| r.worker_id)
            .collect();
        voters.sort_unstable();
        assert_eq!(voters, vec![first.min(second), first.max(second)]);
    }
}

/// Waits until a lease of workunit `wu` is in progress; returns its id.
async fn wait_lease(server: &TestServer, wu: u64) -> u64 {
    for _ in 0..6000 {
        let rs = server.store.results(wu).unwrap();
        if let Some(r) = rs.iter().find(|r| r.state == ReplicaState::InProgress) {
            return r.id;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no lease was issued");
}

fn lease_state(server: &TestServer, wu: u64, lease: u64) -> String {
    let rs = server.store.results(wu).unwrap();
    rs.into_iter()
        .find(|r| r.id == lease)
        .unwrap()
        .state
        .to_string()
}

/// One `work` process on a perft(`depth`) campaign of 518, stopped with `sigterms` SIGTERMs
/// once its lease is in progress: the server, the workunit, the lease, the exit and the log.
async fn stop_mid_workunit(
    depth: u32,
    sigterms: usize,
) -> (TestServer, u64, u64, std::process::ExitStatus, String) {
    bins();
    let server = TestServer::start(c960_tests::quick_config()).await;
    let c = server.campaign(depth, "518");
    let wu = server.store.table(c.id).unwrap().1[0].workunit_id;
    let log = server.dir.path().join("w.log");
    let home = server.dir.path().join("home");
    let extra = ["--threads", "1", "--hash", "16"];
    let mut w = work(&server.url, &home, &log, &extra);
    let lease = wait_lease(&server, wu).await;
    for _ in 0..sigterms {
        signal(&w, "TERM");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let exit = w.wait().unwrap();
    let log = std::fs::read_to_string(&log).unwrap();
    (server, wu, lease, exit, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sigterm_finishes_and_submits_the_workunit_in_hand() {
    // About 10^8 nodes on one thread: seconds of work.
    let (server, wu, lease, exit, log) = stop_mid_workunit(6, 1).await;
    assert!(exit.success(), "worker exit {exit:?}: {log}");
    assert_eq!(lease_state(&server, wu, lease), "returned", "{log}");
    assert!(log.contains("finishing and submitting"), "{log}");
    let rs = server.store.results(wu).unwrap();
    let returned = rs.iter().find(|r| r.id == lease).unwrap();
    assert_eq!(returned.nodes, Some(119_060_324));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sigterms_give_the_lease_back_at_once() {
    // Depth 7 (3 * 10^9 nodes): far from finished when the second signal comes.
    let (server, wu, lease, exit, log) = stop_mid_workunit(7, 2).await;
    assert!(exit.success(), "worker exit {exit:?}: {log}");
    assert_eq!(lease_state(&server, wu, lease), "abandoned", "{log}");
    assert!(log.contains("1 given back"), "{log}");
    let p = server.store.progress().unwrap().remove(0);
    assert_eq!((p.queued_replicas, p.in_flight), (2, 0));
}

#[test]
fn a_dead_coordinator_is_named_and_once_gives_up() {
    // A port nobody listens on: bind one, then close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("w.log");
    let url = format!("http://127.0.0.1:{port}");
    let mut w = work(&url, dir.path(), &log, &["--once", "--attempts", "3"]);
    // Three attempts with waits of at most 1 s: seconds; a minute means it never gave up.
    let mut exit = None;
    for _ in 0..600 {
        if let Some(status) = w.try_wait().unwrap() {
            exit = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(exit) = exit else {
        w.kill().unwrap();
        panic!("--once did not give up");
    };
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(!exit.success(), "{log}");
    assert!(log.contains("connection refused"), "{log}");
    assert!(log.contains("giving up after 3 failed attempts"), "{log}");
    // Nothing was registered, so nothing was kept.
    assert!(!dir.path().join(".local/state/c960/worker.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_names_a_campaign_that_no_connected_worker_may_take() {
    let server = TestServer::start(c960_tests::quick_config()).await;
    let c = server.campaign(2, "0-3");
    let status = || server.status();
    assert_eq!(status().await["stalled"], serde_json::json!([]));
    // One worker for a quorum of two: once it has a replica of everything, nobody may take
    // the second replicas.
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut cfg = c960_worker::runner::RunnerConfig::new(&server.url);
    cfg.progress = false;
    cfg.backoff_cap = Duration::from_secs(1);
    let worker = tokio::spawn(c960_worker::runner::run(cfg, rx));
    let mut stalled = serde_json::Value::Null;
    for _ in 0..300 {
        stalled = status().await["stalled"].clone();
        if stalled.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(stalled[0]["campaign"], c.id, "{stalled}");
    assert_eq!(stalled[0]["cause"], "already_computed", "{stalled}");
    assert!(
        stalled[0]["reason"]
            .as_str()
            .unwrap()
            .contains("start another worker"),
        "{stalled}"
    );
    tx.send(true).unwrap();
    let summary = worker.await.unwrap().unwrap();
    assert_eq!(summary.submitted, 4);
    // A second worker takes the second replicas: no longer stalled, and finished.
    server.finish_with_honest_workers(c.id, 1).await;
    assert_eq!(status().await["stalled"], serde_json::json!([]));
}
