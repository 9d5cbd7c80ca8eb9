//! Split campaigns through a real coordinator (127.0.0.1, port 0, real SQLite) and as a `run`
//! process: per start position, Σ multiplicity × workunit result equals the unsplit perft and the
//! reference table, transpositions are merged (fewer workunits than paths), and the ply-1 divide
//! is assembled.

use std::process::Command;
use std::time::Duration;

use c960_common::{StartPosition, divide, perft};
use c960_coordinator::export;
use c960_coordinator::store::Store;
use c960_coordinator::work::assembly::SplitStatus;
use c960_coordinator::work::campaign::{NewCampaign, parse_positions};
use c960_tests::{TestServer, bins, parse_table, quick_config, reference};
use c960_worker::runner::{self, RunnerConfig};

async fn run_workers(server: &TestServer, campaign: u64, n: usize) {
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for i in 0..n {
        let mut cfg = RunnerConfig::new(&server.url);
        cfg.name = format!("w{i}");
        cfg.progress = false;
        cfg.hash_mib = 4;
        cfg.backoff_base = Duration::from_millis(20);
        tasks.push(tokio::spawn(runner::run(cfg, rx.clone())));
    }
    server
        .wait_finished(campaign, Duration::from_secs(120))
        .await;
    tx.send(true).unwrap();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_campaigns_equal_unsplit_at_depth_5() {
    let server = TestServer::start(quick_config()).await;
    // k = 1 and 2 on two start positions with quorum 2; k = 3 on one with quorum 1 (it has
    // thousands of workunits, and agreement is not what this test is about).
    let cases = [(1, "0,518", 2), (2, "0,518", 2), (3, "959", 1)];
    for (k, positions, quorum) in cases {
        let spec = NewCampaign::new(5, quorum, None, parse_positions(positions).unwrap())
            .unwrap()
            .split_at(k)
            .unwrap();
        let c = server
            .store
            .create_campaign(&spec, c960_coordinator::clock::now_ms())
            .unwrap();
        run_workers(&server, c.id, 2).await;
        let (_, rows) = export::split_table(&*server.store, c.id).unwrap();
        let (_, units) = server.store.split_units(c.id).unwrap();
        for row in &rows {
            let pos = StartPosition::new(u32::from(row.sp)).unwrap().position();
            assert_eq!(row.status, SplitStatus::Valid, "k {k} sp {}", row.sp);
            assert_eq!(
                row.nodes,
                Some(u128::from(reference()[&row.sp][4])),
                "k {k} sp {}",
                row.sp
            );
            // The ply-1 divide equals the unsplit divide.
            let mut want: Vec<(String, u128)> = divide(&pos, 5)
                .into_iter()
                .map(|(m, n)| (m.to_string(), u128::from(n)))
                .collect();
            want.sort();
            assert_eq!(row.divide, want, "k {k} sp {}", row.sp);
            // Transpositions are merged: fewer workunits than move paths from k = 3 on (two
            // plies never transpose: each side has moved once, from a known square).
            let n_units = units.iter().filter(|u| u.origin_sp == row.sp).count() as u64;
            let paths = perft(&pos, k);
            assert_eq!(
                units
                    .iter()
                    .filter(|u| u.origin_sp == row.sp)
                    .map(|u| u.multiplicity)
                    .sum::<u64>(),
                paths
            );
            if k >= 3 {
                assert!(n_units < paths, "k {k}: {n_units} units for {paths} paths");
            }
        }
        let json: serde_json::Value = serde_json::from_str(&export::split_json(&c, &rows)).unwrap();
        assert_eq!(json["check"]["ok"], true);
        assert_eq!(
            json["check"]["compared"],
            parse_positions(positions).unwrap().len()
        );
    }
}

#[test]
fn run_with_split_ply_matches_the_reference() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("table.csv");
    let run = Command::new(coordinator)
        .args([
            "run",
            "--depth",
            "5",
            "--split-ply",
            "2",
            "--positions",
            "7,518",
            "--local-workers",
            "2",
        ])
        .arg("--db")
        .arg(dir.path().join("run.db"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let total: u128 = [7u16, 518]
        .iter()
        .map(|sp| u128::from(reference()[sp][4]))
        .sum();
    assert_eq!(
        String::from_utf8(run.stdout).unwrap().lines().last(),
        Some(total.to_string().as_str())
    );
    assert!(
        stderr.contains("reference table: 2 of 2 start positions agree"),
        "{stderr}"
    );
    let csv = std::fs::read_to_string(&out).unwrap();
    assert!(csv.starts_with("sp,fen,depth,nodes,status,share_done,workunits\n"));
    let table = parse_table(&csv);
    for sp in [7u16, 518] {
        assert_eq!(
            table[&sp],
            (5, Some(reference()[&sp][4]), "valid".to_string())
        );
    }
    // A split ply not below the depth is refused with one line.
    let bad = Command::new(coordinator)
        .args(["run", "--depth", "3", "--split-ply", "3"])
        .arg("--db")
        .arg(dir.path().join("bad.db"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert_eq!(
        String::from_utf8(bad.stderr)
            .unwrap()
            .trim()
            .lines()
            .count(),
        1
    );
}
