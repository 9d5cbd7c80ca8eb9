//! Tiny workunits at scale with default flags (issue 55, item 4): `serve` and two default
//! `c960-worker work` processes on DFRC at depth 2, all 921,600 starts, real processes on one
//! machine. Release, not run by `.ci/run`; BENCHMARKS.md has its figures:
//!
//! ```text
//! cargo test --release -p c960-tests --test suite -- --ignored --nocapture throughput::
//! ```
//!
//! Prints, per minute, the workunits that became valid and the results graded a second (the
//! rate must not fall as the campaign fills: first minute against the last), the coordinator's
//! memory, and at the end the pages' and `/api/v1/status`'s load times with the results
//! stored. `C960_THROUGHPUT_SECS` (default 180) bounds the run; `0` runs the campaign to
//! completion and checks its export.

use std::time::{Duration, Instant};

use super::first_hour::{SECRET, coordinator, status, two_workers};
use c960_tests::ServeProcess;

/// A process's resident memory in MiB (Linux).
pub(super) fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// (valid workunits of campaign 1, [`graded`]).
fn counts(status: &serde_json::Value) -> (u64, u64) {
    let valid = status["campaigns"][0]["valid"].as_u64().unwrap_or(0);
    (valid, graded(status))
}

/// Results graded so far, as `/api/v1/status` says: every worker's valid and lost votes.
pub(super) fn graded(status: &serde_json::Value) -> u64 {
    status["workers"]["list"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|w| w["valid"].as_u64().unwrap_or(0) + w["lost_votes"].as_u64().unwrap_or(0))
                .sum()
        })
        .unwrap_or(0)
}

/// Median of 9 loads of `url`, in ms.
async fn median_ms(url: &str) -> f64 {
    let mut times = Vec::new();
    for _ in 0..9 {
        let t = Instant::now();
        let resp = reqwest::get(url).await.unwrap();
        assert_eq!(resp.status(), 200, "{url}");
        resp.bytes().await.unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    times[4]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn tiny_workunits_with_default_workers() {
    let secs: u64 = std::env::var("C960_THROUGHPUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("c960.sqlite");
    let serve = ServeProcess::start(
        &db,
        &["--enrol-secret", SECRET],
        std::process::Stdio::null(),
    );
    let began = Instant::now();
    coordinator(
        &[
            "campaign",
            "add",
            "--family",
            "dfrc",
            "--depth",
            "2",
            "--positions",
            "0-921599",
        ],
        &db,
    );
    println!("campaign add: {:.1?}", began.elapsed());
    let url = serve.url.clone();
    let _workers = two_workers(&url, dir.path(), "");
    println!("| minute | valid workunits/s | results graded/s | coordinator RSS |");
    println!("|---|---|---|---|");
    let t0 = Instant::now();
    let mut last = (0, 0);
    let mut minute = 0;
    loop {
        tokio::time::sleep(Duration::from_secs(60)).await;
        minute += 1;
        let st = status(&url).await;
        let now = counts(&st);
        println!(
            "| {minute} | {:.0} | {:.0} | {:.0} MiB |",
            (now.0 - last.0) as f64 / 60.0,
            (now.1 - last.1) as f64 / 60.0,
            rss_mib(serve.child.id())
        );
        last = now;
        let total = st["campaigns"][0]["total"].as_u64().unwrap_or(u64::MAX);
        if now.0 >= total || (secs > 0 && t0.elapsed() >= Duration::from_secs(secs)) {
            println!(
                "{} of {total} valid after {:.0?}: {:.0} valid workunits/s",
                now.0,
                t0.elapsed(),
                now.0 as f64 / t0.elapsed().as_secs_f64()
            );
            break;
        }
    }
    for path in [
        "/".to_string(),
        "/campaigns/1".to_string(),
        "/campaigns/1?page=9216".to_string(),
        "/api/v1/status".to_string(),
        "/workers".to_string(),
    ] {
        println!(
            "| `{path}` with results stored | {:.1} ms |",
            median_ms(&format!("{url}{path}")).await
        );
    }
    if secs == 0 {
        let t = Instant::now();
        let csv = coordinator(&["export", "--campaign", "1", "--format", "csv"], &db);
        println!(
            "export: {} lines in {:.1?}",
            csv.lines().count(),
            t.elapsed()
        );
        assert!(
            !csv.contains(",failed") && !csv.contains(",open"),
            "every row valid"
        );
    }
    assert!(last.0 > 0, "nothing valid");
}
