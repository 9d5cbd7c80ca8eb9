//! The volunteer's `c960-worker work` as a real process: one identity per running worker, the
//! two-stage stop, what it prints, how it gives up.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use c960_coordinator::store::Store;
use c960_tests::{TestServer, bins};

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

fn signal(child: &Child, sig: &str) {
    let status = Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn worker_id(state: &Path) -> u64 {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(state).unwrap()).unwrap();
    v["worker_id"].as_u64().unwrap()
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
    let state = home.join(".local/state/c960");
    let (first, second) = (
        worker_id(&state.join("worker.json")),
        worker_id(&state.join("worker-2.json")),
    );
    assert_ne!(first, second);
    let (_, rows) = server.store.table(c.id).unwrap();
    assert!(rows.iter().all(|r| r.status == "valid"), "{rows:?}");
    for r in rows {
        let mut voters: Vec<u64> = server
            .store
            .results(r.workunit_id)
            .unwrap()
            .iter()
            .filter(|r| r.outcome == "valid")
            .map(|r| r.worker_id)
            .collect();
        voters.sort_unstable();
        assert_eq!(voters, vec![first.min(second), first.max(second)]);
    }
}
