//! A worker process killed in the middle of a workunit: its lease expires and the workunit
//! completes on other workers. A worker stopped with Ctrl-C (SIGINT) twice gives its lease back.

use c960_coordinator::model::{ReplicaState, ResultOutcome, RowStatus};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use c960_coordinator::net::api::Config;
use c960_coordinator::store::Store;
use c960_tests::{TestServer, bins, reference, signal};

fn worker(server: &TestServer, name: &str) -> Child {
    let (_, w) = bins();
    Command::new(w)
        .args([
            "work",
            "--once",
            "--server",
            &server.url,
            "--name",
            name,
            "--max-backoff-secs",
            "1",
            // One thread and a small table, as before the defaults took the whole machine:
            // the two-second lease must outlast a workunit on a busy test machine.
            "--threads",
            "1",
            "--hash",
            "64",
        ])
        .arg("--state-file")
        .arg(server.dir.path().join(format!("{name}.json")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits until the workunit has a lease in progress held by a worker not in `except`.
async fn wait_lease(server: &TestServer, wu: u64, except: &[u64]) -> u64 {
    for _ in 0..3000 {
        let rs = server.store.results(wu).unwrap();
        if let Some(r) = rs
            .iter()
            .find(|r| r.state == ReplicaState::InProgress && !except.contains(&r.worker_id))
        {
            return r.id;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no lease was issued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_lease_expires_and_workunit_completes_elsewhere() {
    bins();
    let server = TestServer::start(Config {
        lease: Duration::from_secs(2),
        ..c960_tests::quick_config()
    })
    .await;
    // Depth 6 of one position: long enough (≈ 10^8 nodes) that the kill lands mid-computation.
    let c = server.campaign(6, "518");
    let wu = server.store.table(c.id).unwrap().1[0].workunit_id;

    let mut a = worker(&server, "a");
    let lease_a = wait_lease(&server, wu, &[]).await;
    a.kill().unwrap();
    a.wait().unwrap();
    let rs = server.store.results(wu).unwrap();
    assert_eq!(
        rs.iter().find(|r| r.id == lease_a).unwrap().state,
        ReplicaState::InProgress,
        "killed too late"
    );

    let mut b = worker(&server, "b");
    let mut c2 = worker(&server, "c");
    server.wait_finished(c.id, Duration::from_secs(300)).await;
    assert!(b.wait().unwrap().success());
    assert!(c2.wait().unwrap().success());

    let (_, rows) = server.store.table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Valid);
    assert_eq!(rows[0].nodes, Some(reference()[&518][5]));
    let rs = server.store.results(wu).unwrap();
    let a_result = rs.iter().find(|r| r.id == lease_a).unwrap();
    assert_eq!(a_result.state, ReplicaState::Expired);
    let valid: Vec<_> = rs
        .iter()
        .filter(|r| r.outcome == ResultOutcome::Valid)
        .collect();
    assert_eq!(valid.len(), 2);
    assert!(valid.iter().all(|r| r.worker_id != a_result.worker_id));
    assert_ne!(valid[0].worker_id, valid[1].worker_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twice_interrupted_worker_gives_its_lease_back() {
    bins();
    let server = TestServer::start(c960_tests::quick_config()).await;
    let c = server.campaign(7, "518");
    let wu = server.store.table(c.id).unwrap().1[0].workunit_id;
    let mut a = worker(&server, "a");
    let lease = wait_lease(&server, wu, &[]).await;
    // The first Ctrl-C would finish the workunit; the second gives it back.
    for _ in 0..2 {
        signal(&a, "INT");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let exit = a.wait().unwrap();
    assert!(exit.success(), "worker exit {exit:?}");
    let rs = server.store.results(wu).unwrap();
    assert_eq!(
        rs.iter().find(|r| r.id == lease).unwrap().state,
        ReplicaState::Abandoned
    );
    // The replica is wanted again at once, not after the (one hour) lease.
    let p = server.store.progress().unwrap().remove(0);
    assert_eq!(p.queued_replicas, 2);
    assert_eq!(p.in_flight, 0);
}
