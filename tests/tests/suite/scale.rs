//! Depth-8 scale check (issue 5), ignored by default; run it in release:
//!
//! ```text
//! cargo test --release -p c960-tests --test suite -- --ignored --nocapture scale::
//! ```
//!
//! Creates the campaign a depth-8 run over all 960 start positions would use (split at ply 3:
//! millions of workunits) in a real SQLite file, then measures what the coordinator pays at
//! that size: generation, database size, the cost of handing out and accepting workunits (one
//! at a time and in batches) compared with a 960-unit campaign, the progress query, the
//! streamed assembly, and this process's peak memory. Prints figures; asserts only
//! correctness (and that peak memory stays under 1 GiB, the issue's bound).

use std::time::Instant;

use c960_common::digest::result_digest;
use c960_common::wire::{Capabilities, PerftResult, WorkResult};
use c960_coordinator::model::{Settlement, Submission};
use c960_coordinator::store::{SqliteStore, Store};
use c960_coordinator::work::assembly::Assembler;
use c960_coordinator::work::campaign::NewCampaign;

/// Peak resident memory of this process in MiB (Linux).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Assigns and settles at least `units` leases for two workers, `batch` per transaction;
/// returns handouts + results per second and the leases settled.
fn churn(store: &SqliteStore, workers: [u64; 2], units: usize, batch: u32) -> (f64, usize) {
    let caps = Capabilities::builtin();
    let started = Instant::now();
    let mut done = 0;
    let mut now = 1_000;
    while done < units {
        for &w in &workers {
            now += 1;
            let leases = store
                .assign_batch(w, &caps, now, 3_600_000, batch, 0)
                .unwrap();
            assert!(!leases.is_empty());
            let settlements: Vec<Settlement> = leases
                .iter()
                .map(|l| {
                    let result = WorkResult::Perft(PerftResult {
                        nodes: 20,
                        divide: vec![],
                    });
                    Settlement::Store {
                        lease_id: l.lease_id,
                        submission: Submission {
                            digest: result_digest(l.workunit_id, &l.kind, &result),
                            result,
                            elapsed_ms: 0,
                            engine: "scale".into(),
                            implausible: false,
                        },
                    }
                })
                .collect();
            let outcomes = store.settle(w, &settlements, now).unwrap();
            assert!(outcomes.iter().all(|o| o.is_ok()));
            done += leases.len();
        }
    }
    (2.0 * done as f64 / started.elapsed().as_secs_f64(), done)
}

#[test]
#[ignore = "scale check: minutes and gigabytes; run in release with --ignored --nocapture"]
fn a_depth_8_campaign_over_all_960_fits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scale.db");
    let store = SqliteStore::open(&path).unwrap();
    let workers = [
        store.register_worker("a", b"h", "e", 0).unwrap(),
        store.register_worker("b", b"h", "e", 0).unwrap(),
    ];

    // Baseline: the same churn on a 960-workunit campaign.
    let small = SqliteStore::open(&dir.path().join("small.db")).unwrap();
    let small_workers = [
        small.register_worker("a", b"h", "e", 0).unwrap(),
        small.register_worker("b", b"h", "e", 0).unwrap(),
    ];
    small
        .create_campaign(
            &NewCampaign::new(1, 2, None, (0..960).collect()).unwrap(),
            0,
        )
        .unwrap();
    let (small_one, _) = churn(&small, small_workers, 400, 1);
    let (small_batch, _) = churn(&small, small_workers, 1_200, 64);

    let spec = NewCampaign::new(8, 2, None, (0..960).collect())
        .unwrap()
        .split_at(3)
        .unwrap();
    let started = Instant::now();
    let c = store.create_campaign(&spec, 0).unwrap();
    let secs = started.elapsed().as_secs_f64();
    let p = store.progress().unwrap().remove(0);
    let db_bytes: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("scale.db"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    println!(
        "depth 8, split at ply 3, all 960: {} workunits created in {secs:.1} s ({:.0} per second); database {:.0} MiB; peak RSS so far {:.0} MiB",
        p.total,
        p.total as f64 / secs,
        db_bytes as f64 / (1 << 20) as f64,
        peak_rss_mib()
    );
    assert!(p.total > 1_000_000, "millions of workunits");
    assert_eq!(p.queued_replicas, 2 * p.total);

    let (big_one, leases_one) = churn(&store, workers, 400, 1);
    let (big_batch, leases_batch) = churn(&store, workers, 1_200, 64);
    println!(
        "store, one workunit per transaction: {small_one:.0} handouts + results per second on 960 workunits, {big_one:.0} on {} ({:.2}x)",
        p.total,
        big_one / small_one
    );
    println!(
        "store, 64 per transaction: {small_batch:.0} per second on 960 workunits, {big_batch:.0} on {} ({:.2}x)",
        p.total,
        big_batch / small_batch
    );

    let valid = store.progress().unwrap()[0].valid;
    // Both workers answered the same workunits in step, and the two agreed on each.
    assert_eq!(
        valid as usize,
        (leases_one + leases_batch) / 2,
        "each workunit validated by the two workers"
    );
    let mut times: Vec<f64> = (0..21)
        .map(|_| {
            let t = Instant::now();
            let p = store.progress().unwrap();
            assert_eq!(p[0].valid, valid);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!("progress query: median {:.3} ms", times[10]);

    let t = Instant::now();
    let mut assembler = Assembler::default();
    store
        .visit_split_units(c.id, &mut |u| assembler.add(&u))
        .unwrap();
    let rows = assembler.finish(8, |sp| sp.to_string());
    assert_eq!(rows.len(), 960);
    let workunits: u64 = rows.iter().map(|r| r.workunits).sum();
    assert_eq!(workunits, p.total);
    println!(
        "streamed assembly of {} workunits: {:.1} s",
        p.total,
        t.elapsed().as_secs_f64()
    );
    let peak = peak_rss_mib();
    println!("peak RSS of the whole check: {peak:.0} MiB");
    assert!(peak < 1024.0, "peak RSS {peak:.0} MiB");
}
