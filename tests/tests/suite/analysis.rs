//! Analysis workunits through a real coordinator (127.0.0.1, port 0, real SQLite): replicas of the
//! built-in searcher agree exactly and validate; results from different engine ids never form a
//! quorum; an engine failure is a failed replica, not a result; and `run --analyse` writes the
//! balance CSV.

use c960_common::error_code::ErrorCode;
use c960_coordinator::model::{ReplicaState, ResultOutcome, RowStatus};
use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use c960_common::digest::result_digest;
use c960_common::search::{self, SearchLimits};
use c960_common::wire::{
    AnalysisEngine, AnalysisResult, Assignment, Capabilities, FetchResponse, PROTOCOL_VERSION,
    SubmitRequest, WorkResult, WorkerAuth,
};
use c960_common::{CastlingNotation, StartPosition};
use c960_coordinator::store::Store;
use c960_tests::{TestServer, bins, quick_config};
use c960_worker::client::{Client, engine};
use c960_worker::runner::{self, RunnerConfig};

fn builtin(sp: u16, depth: u32) -> AnalysisResult {
    let pos = StartPosition::new(u32::from(sp)).unwrap().position();
    let a = search::analyse(
        &pos,
        &SearchLimits {
            depth,
            hash_mib: search::DEFAULT_HASH_MIB,
        },
    );
    c960_compute::engine::to_wire(&a, search::ENGINE_ID)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_replicas_agree_through_the_coordinator() {
    let server = TestServer::start(quick_config()).await;
    let c = server.analysis_campaign(3, "0-2,518", AnalysisEngine::Builtin);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::new();
    for i in 0..2 {
        let mut cfg = RunnerConfig::new(&server.url);
        cfg.name = format!("w{i}");
        cfg.progress = false;
        cfg.backoff_base = Duration::from_millis(20);
        tasks.push(tokio::spawn(runner::run(cfg, rx.clone())));
    }
    server.wait_finished(c.id, Duration::from_secs(60)).await;
    tx.send(true).unwrap();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert_eq!(row.status, RowStatus::Valid, "{row:?}");
        let sp = row.sp.unwrap();
        // The canonical result is exactly what this build's searcher says.
        assert_eq!(row.result.as_ref(), Some(&builtin(sp, 3)), "sp {sp}");
        let results = server.store.results(row.workunit_id).unwrap();
        let agreeing: Vec<_> = results
            .iter()
            .filter(|r| r.outcome == ResultOutcome::Valid)
            .collect();
        let workers: BTreeSet<u64> = agreeing.iter().map(|r| r.worker_id).collect();
        assert!(agreeing.len() >= 2 && workers.len() == agreeing.len());
    }
    // Exports: CSV with the balance header, and the balance report naming 518.
    let http = reqwest::Client::new();
    let csv = http
        .get(format!(
            "{}/api/v1/campaigns/{}/table?format=csv",
            server.url, c.id
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(csv.starts_with("sp,fen,depth,score_cp,mate,best_move,engine,"));
    assert_eq!(csv.lines().count(), 5);
    let report: serde_json::Value = serde_json::from_str(
        &http
            .get(format!("{}/api/v1/campaigns/{}/balance", server.url, c.id))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(report["summary"]["classical"]["sp"], 518);
    assert_eq!(report["summary"]["positions_scored"], 4);
    assert_eq!(report["ranked"].as_array().unwrap().len(), 4);
    // Its agreement with the published table over the 4 starts scored: coefficients and
    // interval ends in [-1, 1], each interval in order.
    let agreement = &report["summary"]["published_agreement"];
    assert_eq!(agreement["n"], 4);
    assert!(
        agreement["table"]
            .as_str()
            .unwrap()
            .starts_with("Stockfish 18, depth 25")
    );
    for stat in ["pearson", "spearman"] {
        let e = &agreement[stat];
        if !e.is_null() {
            let (v, lo, hi) = (
                e["value"].as_f64().unwrap(),
                e["low"].as_f64().unwrap(),
                e["high"].as_f64().unwrap(),
            );
            assert!(
                lo <= hi && [v, lo, hi].iter().all(|x| (-1.0..=1.0).contains(x)),
                "{stat}: {e}"
            );
        }
    }
    // A balance report of nothing scored, or of an unknown campaign, is a coded 4xx.
    let resp = http
        .get(format!("{}/api/v1/campaigns/999/balance", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
}

async fn lease(client: &Client, auth: &WorkerAuth, caps: &Capabilities) -> Option<Assignment> {
    match client.fetch(auth, caps).await.unwrap() {
        FetchResponse::Assigned(a) => Some(a),
        FetchResponse::NoWork { .. } => None,
    }
}

async fn submit(client: &Client, auth: &WorkerAuth, a: &Assignment, r: AnalysisResult) {
    let result = WorkResult::Analysis(r);
    client
        .submit(
            auth,
            &SubmitRequest {
                protocol: PROTOCOL_VERSION,
                lease_id: a.lease_id,
                workunit_id: a.workunit_id,
                digest: result_digest(a.workunit_id, &a.kind, &result),
                result,
                elapsed_ms: 1,
                engine: engine(),
            },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn different_engine_ids_never_form_a_quorum() {
    let server = TestServer::start(quick_config()).await;
    let c = server.analysis_campaign(2, "518", AnalysisEngine::Uci);
    let client = Client::new(&server.url).unwrap();
    let uci = Capabilities {
        uci_analysis: true,
        ..Capabilities::builtin()
    };
    let plain = client.register("plain", 1, 0).await.unwrap();
    assert!(
        lease(&client, &plain, &Capabilities::builtin())
            .await
            .is_none(),
        "a worker without a UCI engine got a UCI workunit"
    );
    // The same score and moves from two engine builds: two results, no quorum.
    let mut same = builtin(518, 2);
    let ids = ["Stockfish 15.1", "Stockfish 16", "Stockfish 15.1"];
    let mut workunit = 0;
    for (i, id) in ids.iter().enumerate() {
        let auth = client.register(&format!("sf{i}"), 1, 0).await.unwrap();
        let a = lease(&client, &auth, &uci).await.expect("a UCI workunit");
        workunit = a.workunit_id;
        same.engine_id = id.to_string();
        submit(&client, &auth, &a, same.clone()).await;
        let (_, rows) = server.store.analysis_table(c.id).unwrap();
        let expected = if i < 2 {
            RowStatus::Open
        } else {
            RowStatus::Valid
        };
        assert_eq!(rows[0].status, expected, "after {} results", i + 1);
    }
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    assert_eq!(rows[0].result.as_ref().unwrap().engine_id, "Stockfish 15.1");
    assert_eq!(outcomes(&server, workunit), ["valid", "invalid", "valid"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_engine_is_a_failed_replica_not_a_result() {
    let server = TestServer::start(quick_config()).await;
    let c = server.analysis_campaign(2, "7", AnalysisEngine::Builtin);
    let client = Client::new(&server.url).unwrap();
    let caps = Capabilities::builtin();
    let a_auth = client.register("a", 1, 0).await.unwrap();
    let a = lease(&client, &a_auth, &caps).await.unwrap();
    client
        .fail(&a_auth, a.lease_id, "engine hung")
        .await
        .unwrap();
    // Not offered to the failing worker again, and no strike against it.
    assert!(lease(&client, &a_auth, &caps).await.is_none());
    let w = server.store.worker(a_auth.worker_id).unwrap().unwrap();
    assert_eq!((w.refused, w.lost_votes), (0, 0));
    let results = server.store.results(a.workunit_id).unwrap();
    assert_eq!(
        (results[0].state.name(), results[0].digest.as_deref()),
        ("error", None)
    );
    // A builtin-kind workunit refuses a result claiming another engine.
    let b_auth = client.register("b", 1, 0).await.unwrap();
    let b = lease(&client, &b_auth, &caps).await.unwrap();
    let mut fake = builtin(7, 2);
    fake.engine_id = "Stockfish 16".into();
    let result = WorkResult::Analysis(fake);
    let err = client
        .submit(
            &b_auth,
            &SubmitRequest {
                protocol: PROTOCOL_VERSION,
                lease_id: b.lease_id,
                workunit_id: b.workunit_id,
                digest: result_digest(b.workunit_id, &b.kind, &result),
                result,
                elapsed_ms: 1,
                engine: engine(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::InvalidResult));
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Open);
}

#[test]
fn run_analyse_writes_the_balance_csv() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("balance.csv");
    let run = Command::new(coordinator)
        .args([
            "run",
            "--analyse",
            "--depth",
            "3",
            "--positions",
            "0-9,518",
            "--local-workers",
            "2",
        ])
        .arg("--db")
        .arg(dir.path().join("run.db"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "sp,fen,depth,score_cp,mate,best_move,engine,wdl_win,wdl_draw,wdl_loss,nodes,estimate_cp"
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let sps: Vec<u16> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(sps, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 518]);
    for r in &rows {
        let sp: u16 = r[0].parse().unwrap();
        let expect = builtin(sp, 3);
        let pos = StartPosition::new(u32::from(sp)).unwrap().position();
        assert_eq!(r.len(), 12);
        assert_eq!(r[1], pos.to_fen(CastlingNotation::Shredder));
        assert_eq!(r[2], "3");
        assert_eq!(
            r[3],
            expect.score_cp.map(|v| v.to_string()).unwrap_or_default()
        );
        assert_eq!(r[4], expect.mate.map(|v| v.to_string()).unwrap_or_default());
        assert_eq!(r[5], expect.best_move.unwrap());
        assert_eq!(r[6], search::ENGINE_ID);
    }
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("balance: mean White edge"), "{stderr}");

    // Bad engine arguments: one line on stderr, non-zero exit.
    for engine in ["stockfish", "uci:", "uci:/nonexistent/engine"] {
        let bad = Command::new(coordinator)
            .args(["run", "--analyse", "--depth", "2", "--engine", engine])
            .arg("--db")
            .arg(dir.path().join("bad.db"))
            .output()
            .unwrap();
        assert!(!bad.status.success(), "{engine}");
        let err = String::from_utf8(bad.stderr).unwrap();
        assert_eq!(err.trim().lines().count(), 1, "{engine}: {err}");
    }
}

/// Writes an executable shell script that answers the UCI handshake, then does `on_go`.
fn fake_engine(dir: &std::path::Path, name: &str, on_go: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nwhile read -r line; do\n  case \"$line\" in\n    uci) echo 'id name Fake 1'; \
             echo 'option name UCI_Chess960 type check default false'; echo uciok;;\n    \
             isready) echo readyok;;\n    go*) {on_go};;\n  esac\ndone\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_and_crashing_uci_engines_give_failed_replicas() {
    let server = TestServer::start(quick_config()).await;
    let c = server.analysis_campaign(3, "518", AnalysisEngine::Uci);
    for (name, on_go) in [("hang.sh", "exec sleep 600"), ("crash.sh", "exit 3")] {
        let engine = fake_engine(server.dir.path(), name, on_go);
        let (tx, rx) = tokio::sync::watch::channel(false);
        let mut cfg = RunnerConfig::new(&server.url);
        cfg.name = name.into();
        cfg.progress = false;
        cfg.uci = Some(
            c960_compute::uci_engine::UciCommand::parse(&engine.display().to_string()).unwrap(),
        );
        cfg.uci_timeout = Duration::from_secs(1);
        let task = tokio::spawn(runner::run(cfg, rx));
        let (_, rows) = server.store.analysis_table(c.id).unwrap();
        let wu = rows[0].workunit_id;
        let until = std::time::Instant::now() + Duration::from_secs(30);
        let errors = || {
            server
                .store
                .results(wu)
                .unwrap()
                .iter()
                .filter(|r| r.state == ReplicaState::Error)
                .count()
        };
        let before = errors();
        while errors() == before {
            assert!(
                std::time::Instant::now() < until,
                "{name}: no failed replica"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tx.send(true).unwrap();
        let summary = task.await.unwrap().unwrap();
        assert_eq!((summary.failed, summary.submitted), (1, 0), "{name}");
    }
    // Never a result: nothing returned, the workunit still open, no strikes.
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    assert_eq!(
        (rows[0].status.as_str(), rows[0].result.as_ref()),
        ("open", None)
    );
    let results = server.store.results(rows[0].workunit_id).unwrap();
    assert!(
        results
            .iter()
            .all(|r| r.digest.is_none() && r.state == ReplicaState::Error)
    );
    for r in &results {
        let w = server.store.worker(r.worker_id).unwrap().unwrap();
        assert_eq!((w.refused, w.lost_votes), (0, 0));
    }
}

/// The vote outcome of every result of `workunit`, in submission order.
fn outcomes(server: &TestServer, workunit: u64) -> Vec<String> {
    let results = server.store.results(workunit).unwrap();
    results.into_iter().map(|r| r.outcome.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_engine_build_forms_a_quorum_and_another_build_does_not() {
    let Some(wasm) = c960_tests::wasm_stockfish() else {
        println!(
            "note: node or the npm stockfish package is absent (.ci/run installs them); skipping"
        );
        return;
    };
    let debian = std::path::Path::new("/usr/games/stockfish");
    if !debian.is_file() {
        println!("note: /usr/games/stockfish is absent (apt-get install stockfish); skipping");
        return;
    }
    let debian = c960_compute::uci_engine::UciCommand::parse("/usr/games/stockfish").unwrap();
    let server = TestServer::start(quick_config()).await;
    let c = server.analysis_campaign(8, "518", AnalysisEngine::Uci);
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    let workunit = rows[0].workunit_id;
    // The WASM build and Debian's build: two results, no quorum.
    c960_tests::one_uci_result(&server, "wasm-a", wasm.clone(), workunit, 0).await;
    c960_tests::one_uci_result(&server, "debian", debian, workunit, 1).await;
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Open);
    let results = server.store.results(workunit).unwrap();
    assert_ne!(results[0].digest, results[1].digest);
    // A second worker with the same WASM build agrees with the first: valid.
    c960_tests::one_uci_result(&server, "wasm-b", wasm, workunit, 2).await;
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Valid);
    let r = rows[0].result.as_ref().unwrap();
    assert!(
        r.engine_id.starts_with("Stockfish") && r.engine_id.contains(" net:"),
        "{r:?}"
    );
    assert_eq!(r.depths.len(), 8, "{r:?}");
    assert_eq!(r.depths.last().unwrap().score_cp, r.score_cp);
    // The exports: the table with WDL, nodes and the estimator, and the raw per-depth rows.
    let table = c960_coordinator::export::analysis_csv(&rows);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split(',').collect();
    let mean = c960_common::balance::depth_mean_cp(&r.depths, 4).unwrap();
    assert_eq!(row[11], format!("{mean:.2}"), "{table}");
    assert_eq!(row[10], r.nodes.to_string(), "{table}");
    let depths = c960_coordinator::export::depths_csv(&rows);
    assert_eq!(depths.lines().count(), 1 + 8, "{depths}");
    assert!(
        depths.lines().nth(8).unwrap().starts_with("518,8,"),
        "{depths}"
    );
    assert_eq!(outcomes(&server, workunit), ["valid", "invalid", "valid"]);
}

/// Two colluding liars agree on a wrong built-in analysis and form a quorum (an analysis needs
/// no anchor). Their results are drawn for secret checks; the coordinator runs the same
/// deterministic search, so both fail, are quarantined, and what they validated is reopened and
/// settled by honest workers with the true analysis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colluding_analysis_liars_are_caught_by_the_coordinators_own_search() {
    let server = TestServer::start(c960_coordinator::net::api::Config {
        integrity: c960_coordinator::integrity::trust::Integrity {
            check_rate_untrusted_ppm: 1_000_000,
            ..quick_config().integrity
        },
        ..quick_config()
    })
    .await;
    let c = server.analysis_campaign(3, "0-1", AnalysisEngine::Builtin);
    let client = Client::new(&server.url).unwrap();
    let caps = Capabilities::builtin();
    let lie = |a: &Assignment| {
        let sp = match a.kind.position() {
            c960_common::wire::PositionSpec::StartPosition(n) => *n,
            other => panic!("{other:?}"),
        };
        AnalysisResult {
            score_cp: Some(777),
            mate: None,
            ..builtin(sp, 3)
        }
    };
    let mut liars = Vec::new();
    for name in ["l1", "l2"] {
        let auth = client.register(name, 1, 0).await.unwrap();
        // The coordinator may catch a liar before it has answered everything it took.
        while let Ok(FetchResponse::Assigned(a)) = client.fetch(&auth, &caps).await {
            let result = WorkResult::Analysis(lie(&a));
            let req = SubmitRequest {
                protocol: PROTOCOL_VERSION,
                lease_id: a.lease_id,
                workunit_id: a.workunit_id,
                digest: result_digest(a.workunit_id, &a.kind, &result),
                result,
                elapsed_ms: 1,
                engine: engine(),
            };
            if client.submit(&auth, &req).await.is_err() {
                break;
            }
        }
        liars.push(auth.worker_id);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while liars
        .iter()
        .any(|&l| !server.store.worker(l).unwrap().unwrap().quarantined)
    {
        assert!(std::time::Instant::now() < deadline, "liars not caught");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    assert!(
        rows.iter().all(|r| r.status != RowStatus::Valid),
        "{rows:?}"
    );
    for name in ["h1", "h2"] {
        let auth = client.register(name, 1, 0).await.unwrap();
        while let Some(a) = lease(&client, &auth, &caps).await {
            let sp = match a.kind.position() {
                c960_common::wire::PositionSpec::StartPosition(n) => *n,
                other => panic!("{other:?}"),
            };
            submit(&client, &auth, &a, builtin(sp, 3)).await;
        }
        let w = server.store.worker(auth.worker_id).unwrap().unwrap();
        assert!(!w.quarantined);
    }
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    for row in &rows {
        assert_eq!(row.status, RowStatus::Valid, "{row:?}");
        assert_eq!(row.result.as_ref(), Some(&builtin(row.sp.unwrap(), 3)));
    }
    // Both workunits are searched by the coordinator: every untrusted result is drawn. The
    // check of the second may still be queued when the honest quorum forms (it is when the
    // first liar was caught before answering it), so wait for the checker rather than race it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server.store.check_cost().unwrap().checks_run < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            server.store.check_cost().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Issue 30: UCI analyses were never checked, so two pairs of fresh identities that answered
/// every start with the same fabrication (+250 cp, a2a3, the real engine's id) validated half a
/// campaign. Now every value a bare quorum validates is audited; a coordinator that runs the
/// same engine build (`serve --uci`) searches it itself, overturns the fabrication and
/// quarantines its workers, and honest workers settle the values.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fabricated_uci_analyses_are_overturned_by_the_coordinators_own_engine() {
    let debian = std::path::Path::new("/usr/games/stockfish");
    if !debian.is_file() {
        println!("note: /usr/games/stockfish is absent (apt-get install stockfish); skipping");
        return;
    }
    let debian = c960_compute::uci_engine::UciCommand::parse("/usr/games/stockfish").unwrap();
    let server = TestServer::start(c960_coordinator::net::api::Config {
        integrity: c960_coordinator::integrity::trust::Integrity {
            audit_rate_ppm: 1_000_000,
            draw_pool: c960_coordinator::work::transitioner::DRAW_POOL,
            ..quick_config().integrity
        },
        uci: Some(debian.clone()),
        ..quick_config()
    })
    .await;
    let c = server.analysis_campaign(8, "0-5", AnalysisEngine::Uci);
    // The real engine id, so the fabrication passes every check but the search itself.
    let kind = c960_common::wire::WorkUnitKind::Analysis {
        position: c960_common::wire::PositionSpec::StartPosition(0),
        depth: 8,
        engine: AnalysisEngine::Uci,
        hash_mib: c960_coordinator::work::campaign::ANALYSIS_HASH_MIB,
    };
    let mut slot = c960_compute::compute::UciSlot::new(debian.clone(), Duration::from_secs(60));
    let perft = c960_common::perft::PerftEngine::new(Default::default());
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let WorkResult::Analysis(real) =
        c960_compute::compute::compute_any(&kind, &cancel, &perft, Some(&mut slot), |_, _, _| {})
            .unwrap()
    else {
        panic!("not an analysis")
    };
    let fabrication = AnalysisResult {
        score_cp: Some(250),
        mate: None,
        best_move: Some("a2a3".into()),
        pv: vec!["a2a3".into()],
        nodes: 1000,
        wdl: None,
        engine_id: real.engine_id.clone(),
        depths: Vec::new(),
    };
    let client = Client::new(&server.url).unwrap();
    let caps = Capabilities {
        uci_analysis: true,
        ..Capabilities::builtin()
    };
    let mut liars = Vec::new();
    for name in ["l1", "l2", "l3", "l4"] {
        liars.push(client.register(name, 1, 0).await.unwrap());
    }
    // The liars take and answer everything they can, in turns.
    for _ in 0..6 {
        for auth in &liars {
            if let Ok(FetchResponse::Assigned(a)) = client.fetch(auth, &caps).await {
                submit(&client, auth, &a, fabrication.clone()).await;
            }
        }
    }
    // Honest workers with the same build settle the rest, and the audits' aftermath.
    let honest = c960_tests::HonestWorkers::start(&server.url, 2, Some(debian.clone()));
    c960_tests::wait_until(Duration::from_secs(120), || {
        let (_, rows) = server.store.analysis_table(c.id).unwrap();
        let cost = server.store.check_cost().unwrap();
        if rows.iter().all(|r| r.status == RowStatus::Valid) && cost.audits_waiting == 0 {
            Ok(())
        } else {
            Err(format!("not settled: {rows:?}"))
        }
    })
    .await;
    honest.stop().await;
    let (_, rows) = server.store.analysis_table(c.id).unwrap();
    for r in &rows {
        let got = r.result.as_ref().unwrap();
        assert_ne!(
            (got.score_cp, got.best_move.as_deref()),
            (Some(250), Some("a2a3")),
            "a fabrication stood: {r:?}"
        );
    }
    let cost = server.store.check_cost().unwrap();
    assert!(cost.audits_overturned >= 1, "{cost:?}");
    for auth in &liars {
        let w = server.store.worker(auth.worker_id).unwrap().unwrap();
        assert!(
            w.quarantined || w.valid == 0,
            "a liar kept its standing: {w:?}"
        );
    }
}
