//! Self-play game workunits: the same unit played twice gives identical games, PGN and digest
//! (Debian's Stockfish at a small node budget, and the built-in engine through the same path);
//! the games of one unit differ; every PGN reads back to legal moves and passes the
//! coordinator's shape check; two workers with one engine build form a quorum through a real
//! coordinator and another build does not; `run --self-play` writes the score table.

use c960_coordinator::model::{ResultOutcome, RowStatus};
use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use c960_common::digest::result_digest;
use c960_common::family::Family;
use c960_common::game::{self, MAX_PLIES, OPENING_PLIES};
use c960_common::wire::{AnalysisEngine, PositionSpec, SelfPlayResult, WorkResult, WorkUnitKind};
use c960_common::{PerftEngine, PerftOptions, StartPosition};
use c960_compute::compute::{UciSlot, compute_any};
use c960_compute::uci_engine::UciCommand;
use c960_coordinator::store::Store;
use c960_coordinator::work::campaign::{CampaignWork, NewCampaign, SelfPlayBudget, parse_numbers};
use c960_coordinator::work::validator::check_self_play_shape;
use c960_tests::{TestServer, bins, quick_config};

const DEBIAN_STOCKFISH: &str = "/usr/games/stockfish";

fn debian_stockfish() -> Option<UciCommand> {
    if !std::path::Path::new(DEBIAN_STOCKFISH).is_file() {
        println!("note: {DEBIAN_STOCKFISH} is absent (apt-get install stockfish); skipping");
        return None;
    }
    Some(UciCommand::parse(DEBIAN_STOCKFISH).unwrap())
}

fn kind(sp: u16, games: u32, nodes: u64, engine: AnalysisEngine, seed: u64) -> WorkUnitKind {
    WorkUnitKind::SelfPlay {
        position: PositionSpec::StartPosition(sp),
        games,
        nodes,
        engine,
        // The built-in searcher clears its table for every search: a small one is quicker.
        hash_mib: if engine == AnalysisEngine::Builtin {
            1
        } else {
            16
        },
        opening_plies: OPENING_PLIES,
        max_plies: MAX_PLIES,
        seed,
    }
}

fn play(kind: &WorkUnitKind, uci: Option<&mut UciSlot>) -> SelfPlayResult {
    let perft = PerftEngine::new(PerftOptions::default());
    let no = AtomicBool::new(false);
    match compute_any(kind, &no, &perft, uci, |_, _, _| {}).unwrap() {
        WorkResult::SelfPlay(r) => r,
        other => panic!("not a self-play result: {other:?}"),
    }
}

/// The unit played twice (with a fresh engine process each time for UCI) is identical, byte
/// for byte and by digest; its games differ; every PGN reads back and passes the shape check.
fn assert_deterministic(kind: &WorkUnitKind, uci: Option<&UciCommand>) -> SelfPlayResult {
    let slot = || uci.map(|c| UciSlot::new(c.clone(), Duration::from_secs(60)));
    let (mut s1, mut s2) = (slot(), slot());
    let a = play(kind, s1.as_mut());
    let b = play(kind, s2.as_mut());
    assert_eq!(a, b);
    let digest = |r: &SelfPlayResult| result_digest(77, kind, &WorkResult::SelfPlay(r.clone()));
    assert_eq!(digest(&a), digest(&b));
    check_self_play_shape(kind, &a).unwrap();
    let distinct: BTreeSet<&String> = a.games.iter().collect();
    assert_eq!(distinct.len(), a.games.len(), "games of one unit differ");
    let WorkUnitKind::SelfPlay { position, .. } = kind else {
        unreachable!()
    };
    let PositionSpec::StartPosition(sp) = position else {
        unreachable!()
    };
    let start = StartPosition::new(u32::from(*sp)).unwrap().position();
    for pgn in &a.games {
        assert!(pgn.contains("[Variant \"Chess960\"]") && pgn.contains("[SetUp \"1\"]"));
        let g = game::parse_pgn(pgn).unwrap();
        assert_eq!(g.start, start);
        assert!(g.moves.len() > OPENING_PLIES as usize, "{pgn}");
        game::check_finished(&g, MAX_PLIES).unwrap();
    }
    assert_eq!(
        (a.white_wins + a.draws + a.black_wins) as usize,
        a.games.len()
    );
    // Another seed plays other games.
    let WorkUnitKind::SelfPlay { seed, .. } = kind else {
        unreachable!()
    };
    let mut other = kind.clone();
    if let WorkUnitKind::SelfPlay { seed: s, .. } = &mut other {
        *s = seed + 1;
    }
    let mut s3 = slot();
    assert_ne!(play(&other, s3.as_mut()).games, a.games);
    a
}

#[test]
fn self_play_units_are_deterministic_with_debian_stockfish() {
    let Some(sf) = debian_stockfish() else { return };
    // Start 0 (BBQNNRKR): castling needs king-takes-rook on the wire.
    let r = assert_deterministic(&kind(0, 3, 1000, AnalysisEngine::Uci, 5), Some(&sf));
    assert!(r.engine_id.starts_with("Stockfish") && r.engine_id.contains("sha256:"));
    assert!(r.nodes > 0);
    // A tampered game, count or engine id is refused by the shape check.
    let k = kind(0, 3, 1000, AnalysisEngine::Uci, 5);
    let mut lie = r.clone();
    lie.white_wins += 1;
    assert!(check_self_play_shape(&k, &lie).is_err());
    let mut lie = r.clone();
    lie.games[0] = lie.games[0].replace("[Round \"1\"]", "[Round \"9\"]");
    assert!(check_self_play_shape(&k, &lie).is_err());
    let mut lie = r.clone();
    lie.games.swap(0, 1);
    assert!(check_self_play_shape(&k, &lie).is_err());
    let mut lie = r;
    lie.engine_id = c960_common::search::ENGINE_ID.into();
    assert!(check_self_play_shape(&k, &lie).is_err());
}

#[test]
fn self_play_units_are_deterministic_with_the_builtin_engine() {
    assert_deterministic(&kind(518, 2, 150, AnalysisEngine::Builtin, 9), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_form_a_quorum_on_self_play_and_another_build_does_not() {
    let Some(sf) = debian_stockfish() else { return };
    // Another build of the same engine: a wrapper script is another engine file, so another
    // engine id (the same `id name`, another hash).
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("stockfish-wrapper");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec {DEBIAN_STOCKFISH} \"$@\"\n"),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let other = UciCommand::parse(&wrapper.display().to_string()).unwrap();
    assert_ne!(other.build.tag(), sf.build.tag());

    let server = TestServer::start(quick_config()).await;
    let spec = NewCampaign::of(
        CampaignWork::SelfPlay {
            engine: AnalysisEngine::Uci,
            budget: SelfPlayBudget {
                games: 2,
                nodes: 800,
            },
        },
        Family::Chess960,
        parse_numbers(Family::Chess960, "518").unwrap(),
        2,
        None,
    )
    .unwrap();
    let c = server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let (_, rows) = server.store.self_play_table(c.id).unwrap();
    let workunit = rows[0].workunit_id;
    c960_tests::one_uci_result(&server, "debian-a", sf.clone(), workunit, 0).await;
    c960_tests::one_uci_result(&server, "wrapped", other, workunit, 1).await;
    let (_, rows) = server.store.self_play_table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Open, "two builds never agree");
    let results = server.store.results(workunit).unwrap();
    assert_ne!(results[0].digest, results[1].digest);
    c960_tests::one_uci_result(&server, "debian-b", sf, workunit, 2).await;
    let (campaign, rows) = server.store.self_play_table(c.id).unwrap();
    assert_eq!(rows[0].status, RowStatus::Valid);
    let outcomes: Vec<ResultOutcome> = server
        .store
        .results(workunit)
        .unwrap()
        .into_iter()
        .map(|r| r.outcome)
        .collect();
    use ResultOutcome::{Invalid, Valid};
    assert_eq!(outcomes, [Valid, Invalid, Valid]);
    let r = rows[0].result.as_ref().unwrap();
    assert_eq!(r.games.len(), 2);
    // The exports: the score row and every game as PGN.
    let csv = c960_coordinator::export::self_play::csv(&campaign, &rows);
    let line: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(line[0], "518");
    assert_eq!(line[2], "2");
    let s = c960_coordinator::export::self_play::summary_of(r);
    assert_eq!(line[6], format!("{:.4}", s.score.unwrap()));
    let pgn = c960_coordinator::export::self_play::pgn(&rows);
    assert_eq!(pgn.matches("[Variant \"Chess960\"]").count(), 2);
    // Over HTTP: the PGN export and the campaign page with the score.
    let http = reqwest::Client::new();
    let got = http
        .get(format!(
            "{}/api/v1/campaigns/{}/table?format=pgn",
            server.url, c.id
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.text().await.unwrap(), pgn);
    let page = http
        .get(format!("{}/campaigns/{}", server.url, c.id))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("White advantage, Elo")
            && page.contains(&format!("{:.3} [", s.score.unwrap())),
        "{page}"
    );
    // The page names the kind and links the games (it once showed "analysis" and no PGN link).
    assert!(
        page.contains("self-play (") && page.contains("table?format=pgn\""),
        "{page}"
    );
}

#[test]
fn run_self_play_writes_the_score_table() {
    let (coordinator, _) = bins();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("selfplay.csv");
    let run = Command::new(coordinator)
        .args([
            "run",
            "--self-play",
            "--games",
            "2",
            "--nodes",
            "100",
            "--engine",
            "builtin",
            "--positions",
            "518",
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
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        c960_coordinator::export::self_play::SELF_PLAY_CSV_HEADER
    );
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!((row[0], row[2], row[16]), ("518", "2", "valid"));
    assert!(stderr.contains("self-play: 2 games"), "{stderr}");
    // `campaign add --self-play` on the same database, shown with its budget.
    let db = dir.path().join("run.db");
    let add = Command::new(coordinator)
        .args([
            "campaign",
            "add",
            "--self-play",
            "--games",
            "4",
            "--nodes",
            "300",
        ])
        .args(["--engine", "uci", "--positions", "0-3", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    let id = String::from_utf8(add.stdout).unwrap().trim().to_string();
    let show = Command::new(coordinator)
        .args(["campaign", "show", &id, "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let show = String::from_utf8(show.stdout).unwrap();
    assert!(
        show.contains("selfplay/uci") && show.contains("4 games a start, 300 nodes a move"),
        "{show}"
    );
    // Self-play needs its budget: one line on stderr, non-zero exit.
    let bad = Command::new(coordinator)
        .args(["run", "--self-play", "--games", "2"])
        .arg("--db")
        .arg(dir.path().join("bad.db"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
}

/// Issue 30: fabricated games. Two fresh identities answer every built-in self-play workunit
/// with the same legal games from the seeded openings, in canonical PGN with the right counts,
/// but not the engine's moves (the first legal move every ply). They form quorums; the audit
/// plays the workunit again with the coordinator's own engine, overturns every fabrication and
/// quarantines both; honest workers settle the table with the engine's games.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fabricated_games_are_overturned_by_the_coordinators_audit() {
    use c960_common::game::{self, Outcome};
    use c960_common::wire::{Capabilities, FetchResponse, PROTOCOL_VERSION, SubmitRequest};
    let server = TestServer::start(c960_coordinator::net::api::Config {
        integrity: c960_coordinator::integrity::trust::Integrity {
            audit_rate_ppm: 1_000_000,
            draw_pool: c960_coordinator::work::transitioner::DRAW_POOL,
            ..quick_config().integrity
        },
        ..quick_config()
    })
    .await;
    let spec = NewCampaign::of(
        CampaignWork::SelfPlay {
            engine: AnalysisEngine::Builtin,
            budget: SelfPlayBudget {
                games: 2,
                nodes: 200,
            },
        },
        Family::Chess960,
        parse_numbers(Family::Chess960, "0-3").unwrap(),
        2,
        None,
    )
    .unwrap();
    let c = server
        .store
        .create_campaign(&spec, c960_coordinator::clock::now_ms())
        .unwrap();
    let fabricate = |kind: &WorkUnitKind| -> SelfPlayResult {
        let WorkUnitKind::SelfPlay {
            position: PositionSpec::StartPosition(sp),
            games,
            opening_plies,
            max_plies,
            seed,
            ..
        } = kind
        else {
            panic!("{kind:?}")
        };
        let start = c960_common::StartPosition::new(u32::from(*sp))
            .unwrap()
            .position();
        let id = c960_common::search::ENGINE_ID;
        let mut r = SelfPlayResult {
            engine_id: id.into(),
            nodes: 1,
            white_wins: 0,
            draws: 0,
            black_wins: 0,
            games: Vec::new(),
        };
        for (i, opening) in game::openings(&start, *seed, *games, *opening_plies)
            .iter()
            .enumerate()
        {
            let played = game::play_game(
                start,
                opening,
                *max_plies,
                |_, _, current| Ok::<_, ()>(current.legal_moves().as_slice()[0]),
                |_, _| (),
            )
            .unwrap();
            match played.outcome {
                Outcome::WhiteWins => r.white_wins += 1,
                Outcome::Draw => r.draws += 1,
                Outcome::BlackWins => r.black_wins += 1,
            }
            r.games.push(game::to_pgn(&played, id, i as u32 + 1));
        }
        check_self_play_shape(kind, &r).unwrap();
        r
    };
    let client = c960_worker::client::Client::new(&server.url).unwrap();
    let caps = Capabilities {
        self_play: true,
        ..Capabilities::builtin()
    };
    let mut liars = Vec::new();
    for name in ["l1", "l2"] {
        liars.push(client.register(name, 1, 0).await.unwrap());
    }
    let mut fabricated = std::collections::BTreeMap::new();
    for _ in 0..4 {
        for auth in &liars {
            if let Ok(FetchResponse::Assigned(a)) = client.fetch(auth, &caps).await {
                let lie = fabricate(&a.kind);
                fabricated.insert(a.workunit_id, lie.games.clone());
                let result = WorkResult::SelfPlay(lie);
                let req = SubmitRequest {
                    protocol: PROTOCOL_VERSION,
                    lease_id: a.lease_id,
                    workunit_id: a.workunit_id,
                    digest: result_digest(a.workunit_id, &a.kind, &result),
                    result,
                    elapsed_ms: 1,
                    engine: c960_worker::client::engine(),
                };
                let _ = client.submit(auth, &req).await;
            }
        }
    }
    let honest = c960_tests::HonestWorkers::start(&server.url, 2, None);
    c960_tests::wait_until(Duration::from_secs(120), || {
        let (_, rows) = server.store.self_play_table(c.id).unwrap();
        let cost = server.store.check_cost().unwrap();
        if rows.iter().all(|r| r.status == RowStatus::Valid) && cost.audits_waiting == 0 {
            Ok(())
        } else {
            Err(format!("not settled: {rows:?}"))
        }
    })
    .await;
    honest.stop().await;
    let (_, rows) = server.store.self_play_table(c.id).unwrap();
    assert!(!fabricated.is_empty());
    for r in &rows {
        let got = r.result.as_ref().unwrap();
        if let Some(lie) = fabricated.get(&r.workunit_id) {
            assert_ne!(&got.games, lie, "a fabrication stood: {r:?}");
        }
    }
    assert!(server.store.check_cost().unwrap().audits_overturned >= 1);
    for auth in &liars {
        let w = server.store.worker(auth.worker_id).unwrap().unwrap();
        assert!(
            w.quarantined || w.valid == 0,
            "a liar kept its standing: {w:?}"
        );
    }
}
