//! A week compressed (issue 55, item 5): a soak benchmark, not a CI test. Release, as root (it
//! mounts a tmpfs), `C960_SOAK_SECS` bounding it (default 3600; it stops earlier once every
//! campaign is complete):
//!
//! ```text
//! cargo test --release -p c960-tests --test suite -- --ignored --nocapture soak::
//! ```
//!
//! 50 simulated workers (the worker's own runner with default settings, in this process, each
//! its own identity) against a real `serve` (default flags) whose SQLite store lies on an 8 GiB
//! tmpfs; the coordinator SIGKILLed and restarted on the same port every 5 minutes, a checked
//! backup (`c960-coordinator backup`) every 3 minutes while it writes, and one disk-full episode
//! (the tmpfs filled to the last byte for 30 s) halfway. Four campaigns in serving order: DFRC
//! perft(2) of all 921,600 starts, Chess960 perft(6) of all 960 split at ply 2, shuffle perft(4)
//! of all 5,040, and Chess960 perft(7) of all 960 split at ply 2 (checked against the published
//! table), which keeps the workers computing for the rest of the hour. A row a minute: valid workunits, results graded a second, the store's size and
//! bytes per result, the coordinator's memory, what happened. At the end: results lost (accepted
//! by a worker, absent from the store), wrong values (every valid row against a recount here or
//! the reference table), and the coordinator's memory per lifetime.

use std::path::Path;
use std::time::{Duration, Instant};

use c960_common::Position;
use c960_tests::{ServeProcess, reference};

use super::first_hour::{SECRET, coordinator};
use super::full_disk::{Tmpfs, fill};
use super::throughput::{graded, rss_mib};

const WORKERS: usize = 50;
const RESTART_EVERY: Duration = Duration::from_secs(300);
const BACKUP_EVERY: Duration = Duration::from_secs(180);
const DISK_FULL_FOR: Duration = Duration::from_secs(30);

/// The store's files (database and WAL) in MiB.
fn store_mib(db: &Path) -> f64 {
    let mut bytes = 0;
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        bytes += std::fs::metadata(&p).map_or(0, |m| m.len());
    }
    bytes as f64 / (1 << 20) as f64
}

/// (valid workunits over every campaign, whether all are complete, results graded).
fn counts(st: &serde_json::Value) -> (u64, bool, u64) {
    let campaigns = st["campaigns"].as_array().cloned().unwrap_or_default();
    let valid = campaigns
        .iter()
        .map(|c| c["valid"].as_u64().unwrap_or(0))
        .sum();
    let done = !campaigns.is_empty()
        && campaigns
            .iter()
            .all(|c| c["valid"].as_u64() == c["total"].as_u64());
    (valid, done, graded(st))
}

/// Where a campaign's true values come from.
#[derive(Clone, Copy)]
enum Truth {
    /// Counted here, from the row's FEN.
    Recount,
    /// The held-out reference table of all 960 (depths 1–6).
    Reference,
    /// The published depth-7 table, `data/perft_d7_all960.csv`.
    PublishedD7,
}

/// The published perft(7) of every start, by number.
fn published_d7() -> std::collections::HashMap<u16, u64> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/perft_d7_all960.csv");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].parse().unwrap(), f[f.len() - 1].parse().unwrap())
        })
        .collect()
}

/// The valid rows of campaign `id` that differ from the truth; (rows checked, wrong).
fn wrong_rows(db: &Path, id: u64, truth: Truth) -> (u64, u64) {
    // Read only for the campaign checked against it.
    let d7 = matches!(truth, Truth::PublishedD7).then(published_d7);
    let csv = coordinator(
        &["export", "--campaign", &id.to_string(), "--format", "csv"],
        db,
    );
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (fen, depth, nodes, state) = (col("fen"), col("depth"), col("nodes"), col("status"));
    let (mut checked, mut wrong) = (0, 0);
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f[state] != "valid" {
            continue;
        }
        checked += 1;
        let got: u64 = f[nodes].parse().unwrap();
        let d: u32 = f[depth].parse().unwrap();
        let sp = || f[0].parse::<u16>().unwrap();
        let truth = match truth {
            Truth::Recount => c960_common::perft(&Position::from_fen(f[fen]).unwrap(), d),
            Truth::Reference => reference()[&sp()][d as usize - 1],
            Truth::PublishedD7 => d7.as_ref().unwrap()[&sp()],
        };
        wrong += u64::from(got != truth);
    }
    (checked, wrong)
}

/// `/api/v1/status`, or what it answered instead of 200 (status, code) and how long it took.
async fn try_status(url: &str) -> Result<serde_json::Value, String> {
    let t = Instant::now();
    let resp = reqwest::get(format!("{url}/api/v1/status"))
        .await
        .map_err(|e| format!("{e} after {:.1?}", t.elapsed()))?;
    let code = resp.status();
    let text = resp.text().await.unwrap_or_default();
    if code != 200 {
        return Err(format!(
            "{code} {} after {:.1?}",
            text.chars().take(120).collect::<String>(),
            t.elapsed()
        ));
    }
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

fn backup(db: &Path, out: &Path) -> (Duration, bool) {
    let t = Instant::now();
    let o = std::process::Command::new(&c960_tests::bins().0)
        .args(["backup", "--keep", "2", "--db"])
        .arg(db)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    (
        t.elapsed(),
        o.status.success() && said.contains("integrity ok"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn a_week_compressed() {
    let secs: u64 = std::env::var("C960_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3600);
    let Some(disk) = Tmpfs::mount(8 * 1024) else {
        return;
    };
    let db = disk.path().join("c960.sqlite");
    let copies = tempfile::tempdir().unwrap();
    let mut serve = ServeProcess::start(
        &db,
        &["--enrol-secret", SECRET],
        std::process::Stdio::null(),
    );
    let url = serve.url.clone();
    let listen = url.trim_start_matches("http://").to_string();
    for (args, what) in [
        (
            vec![
                "--family",
                "dfrc",
                "--depth",
                "2",
                "--positions",
                "0-921599",
                "--priority",
                "3",
            ],
            "DFRC perft(2), 921,600 starts",
        ),
        (
            vec![
                "--depth",
                "6",
                "--split-ply",
                "2",
                "--positions",
                "0-959",
                "--priority",
                "2",
            ],
            "Chess960 perft(6) split at ply 2",
        ),
        (
            vec![
                "--family",
                "shuffle",
                "--depth",
                "4",
                "--positions",
                "0-5039",
                "--priority",
                "1",
            ],
            "shuffle perft(4), 5,040 starts",
        ),
        (
            vec!["--depth", "7", "--split-ply", "2", "--positions", "0-959"],
            "Chess960 perft(7) split at ply 2: compute for the rest of the hour",
        ),
    ] {
        let mut a = vec!["campaign", "add"];
        a.extend(args);
        let id = coordinator(&a, &db);
        println!("campaign {}: {what}", id.trim());
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut workers = Vec::new();
    for i in 0..WORKERS {
        let mut cfg = c960_worker::runner::RunnerConfig::new(&url);
        cfg.name = format!("soak-{i}");
        cfg.progress = false;
        cfg.enrol_secret = Some(SECRET.into());
        workers.push(tokio::spawn(c960_worker::runner::run(cfg, stopped.clone())));
    }
    println!(
        "| minute | valid workunits | results graded/s | store | bytes per result | coordinator RSS | events |"
    );
    println!("|---|---|---|---|---|---|---|");
    let t0 = Instant::now();
    let (mut last_restart, mut last_backup) = (Instant::now(), Instant::now());
    let mut disk_full_done = false;
    let mut last_graded = 0u64;
    let mut lifetimes: Vec<f64> = vec![0.0];
    let mut backups = (0, 0);
    // The backup under way: a checked copy of a store of gigabytes takes minutes on a loaded
    // machine, and the soak goes on meanwhile, as `serve` does.
    let mut backing_up: Option<tokio::task::JoinHandle<(Duration, bool)>> = None;
    let mut done_since: Option<Instant> = None;
    let mut status_failures = 0u64;
    loop {
        let mut events = Vec::new();
        let tick = Instant::now();
        while tick.elapsed() < Duration::from_secs(60) {
            tokio::time::sleep(Duration::from_secs(5)).await;
            let rss = rss_mib(serve.child.id());
            let peak = lifetimes.last_mut().unwrap();
            *peak = peak.max(rss);
            if backing_up.as_ref().is_some_and(|b| b.is_finished()) {
                let (took, ok) = backing_up.take().unwrap().await.unwrap();
                backups.0 += 1;
                backups.1 += u64::from(ok);
                events.push(format!(
                    "backup done in {:.0?}{}",
                    took,
                    if ok { ", checked" } else { " FAILED" }
                ));
            }
            if backing_up.is_none() && last_backup.elapsed() >= BACKUP_EVERY {
                last_backup = Instant::now();
                let (db, out) = (db.clone(), copies.path().to_path_buf());
                backing_up = Some(tokio::task::spawn_blocking(move || backup(&db, &out)));
                events.push("backup started".into());
            }
            if last_restart.elapsed() >= RESTART_EVERY {
                last_restart = Instant::now();
                let _ = std::process::Command::new("kill")
                    .args(["-KILL", &serve.child.id().to_string()])
                    .status();
                let _ = serve.child.wait();
                serve = ServeProcess::start_on(
                    &db,
                    &listen,
                    &["--enrol-secret", SECRET],
                    std::process::Stdio::null(),
                );
                lifetimes.push(0.0);
                events.push("SIGKILL, restarted".into());
            }
            if !disk_full_done && t0.elapsed() >= Duration::from_secs(secs / 2) {
                disk_full_done = true;
                let filler = fill(disk.path());
                events.push(format!("disk full for {DISK_FULL_FOR:?}"));
                tokio::time::sleep(DISK_FULL_FOR).await;
                std::fs::remove_file(filler).unwrap();
            }
        }
        let minute = t0.elapsed().as_secs() / 60;
        // A status that does not answer 200 is a finding, not the end of the soak.
        let st = match try_status(&url).await {
            Ok(st) => st,
            Err(e) => {
                status_failures += 1;
                println!(
                    "| {minute} | — | — | — | — | — | /api/v1/status: {e}; {} |",
                    events.join("; ")
                );
                continue;
            }
        };
        let (valid, complete, graded) = counts(&st);
        let size = store_mib(&db);
        println!(
            "| {minute} | {valid} | {:.0} | {size:.0} MiB | {:.0} | {:.0} MiB | {} |",
            graded.saturating_sub(last_graded) as f64 / tick.elapsed().as_secs_f64(),
            size * (1 << 20) as f64 / graded.max(1) as f64,
            rss_mib(serve.child.id()),
            events.join("; ")
        );
        last_graded = graded;
        if complete {
            done_since.get_or_insert_with(Instant::now);
        }
        if t0.elapsed() >= Duration::from_secs(secs)
            || done_since.is_some_and(|d| d.elapsed() >= Duration::from_secs(60))
        {
            break;
        }
    }
    if let Some(b) = backing_up {
        let (_, ok) = b.await.unwrap();
        backups.0 += 1;
        backups.1 += u64::from(ok);
    }
    stop.send(true).unwrap();
    let mut accepted = 0u64;
    for w in workers {
        accepted += w.await.unwrap().unwrap().submitted;
    }
    drop(serve);
    let stored: u64 = {
        let c = rusqlite::Connection::open(&db).unwrap();
        c.query_row(
            "SELECT COUNT(*) FROM results WHERE returned_ms IS NOT NULL AND nodes IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    println!(
        "after {:.0?}: {accepted} results accepted by the workers, {stored} in the store: {} lost",
        t0.elapsed(),
        accepted.saturating_sub(stored)
    );
    println!("backups: {} of {} checked", backups.1, backups.0);
    println!("/api/v1/status not answering 200 at a minute's reading: {status_failures}");
    println!(
        "coordinator peak RSS per lifetime (MiB): {:?}",
        lifetimes.iter().map(|m| m.round()).collect::<Vec<_>>()
    );
    let mut wrong = 0;
    for (id, truth) in [
        (1, Truth::Recount),
        (2, Truth::Reference),
        (3, Truth::Recount),
        (4, Truth::PublishedD7),
    ] {
        let (checked, w) = wrong_rows(&db, id, truth);
        println!("campaign {id}: {checked} valid rows checked, {w} wrong");
        wrong += w;
    }
    assert_eq!(accepted.saturating_sub(stored), 0, "results lost");
    assert_eq!(wrong, 0, "wrong values");
    assert_eq!(backups.0, backups.1, "a backup failed its check");
}
