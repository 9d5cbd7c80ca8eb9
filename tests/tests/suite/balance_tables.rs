//! The committed opening-balance tables (`data/balance_*.csv`, docs/balance.md) are whole and
//! consistent: starts in Scharnagl order from 0 without gaps (chunks are committed in order),
//! one engine build and one depth per table, and every value the same as the last completed
//! depth of its search in the per-depth file beside it, the estimator the mean of the 4 deepest;
//! and the table of record (`data/balance_record.csv`) is the documented estimator of the three
//! engines' tables, recomputed here from them.

use std::collections::BTreeMap;

use c960_coordinator::model::RowStatus;
use c960_coordinator::store::Store;
use std::path::PathBuf;

fn data(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../data")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The rows of a CSV file with a header, as maps from column to value.
fn rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines
        .map(|l| {
            // Only the FEN column holds no comma; no field is quoted in these files.
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "{l}");
            header
                .iter()
                .zip(cells)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect()
}

fn check(table: &str, depths: &str, depth: u32, engine_prefix: &str, whole: bool) -> usize {
    let table = rows(&data(table));
    let per_depth = rows(&data(depths));
    let mut scores: BTreeMap<u32, BTreeMap<u32, i64>> = BTreeMap::new();
    for r in &per_depth {
        if let Ok(score) = r["score_cp"].parse::<i64>() {
            scores
                .entry(r["sp"].parse().unwrap())
                .or_default()
                .insert(r["depth"].parse().unwrap(), score);
        }
    }
    let engine = &table[0]["engine"];
    assert!(engine.starts_with(engine_prefix), "{engine}");
    for (i, r) in table.iter().enumerate() {
        let sp: u32 = r["sp"].parse().unwrap();
        assert_eq!(sp as usize, i, "starts in order from 0 without gaps");
        assert_eq!(
            &r["engine"], engine,
            "one engine build in a table (sp {sp})"
        );
        assert_eq!(r["depth"], depth.to_string(), "sp {sp}");
        let score: i64 = r["score_cp"].parse().unwrap();
        assert!(score.abs() < 300, "sp {sp}: {score} cp is no opening score");
        let searched = &scores[&sp];
        assert_eq!(
            searched.keys().copied().max(),
            Some(depth),
            "sp {sp}: every depth up to {depth} completed"
        );
        assert_eq!(
            searched[&depth], score,
            "sp {sp}: the table's value is the last depth's"
        );
        let deepest: Vec<i64> = searched.values().rev().take(4).copied().collect();
        let mean = deepest.iter().sum::<i64>() as f64 / 4.0;
        let estimate: f64 = r["estimate_cp"].parse().unwrap();
        assert!(
            (estimate - mean).abs() < 0.006,
            "sp {sp}: estimate {estimate} ≠ {mean}"
        );
    }
    if whole {
        assert_eq!(table.len(), 960);
    }
    assert!(
        table.len() <= 960 && table.len().is_multiple_of(60),
        "whole chunks only"
    );
    table.len()
}

#[test]
fn the_stockfish_19_table_is_whole_and_consistent() {
    check(
        "balance_sf19_d16.csv",
        "balance_sf19_d16_depths.csv",
        16,
        "Stockfish 19 WASM [sha256:72772f8bdd7353e4",
        true,
    );
}

#[test]
fn the_stockfish_18_table_is_consistent_as_far_as_it_is_computed() {
    let n = check(
        "balance_sf18_d20.csv",
        "balance_sf18_d20_depths.csv",
        20,
        "Stockfish 18 WASM [sha256:ce07b916870473a8",
        false,
    );
    assert!(n >= 420, "{n} starts: the committed chunks went missing");
}

#[test]
fn the_stockfish_15_table_is_whole_and_consistent() {
    check(
        "balance_sf15_d16.csv",
        "balance_sf15_d16_depths.csv",
        16,
        "Stockfish 15.1 [sha256:",
        true,
    );
}

/// Mean and population standard deviation.
fn moments(v: &BTreeMap<u32, f64>) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.values().sum::<f64>() / n;
    let var = v.values().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn the_table_of_record_is_the_documented_estimator_of_the_three_tables() {
    // docs/balance.md, "The estimator of record": a = the mean of Stockfish 18's depth-19 and
    // depth-20 scores, b = Stockfish 19's estimate, c = Stockfish 15.1's depth-16 score;
    // estimate = mean(a) + sd(a) * (0.6 z(a) + 0.2 z(b) + 0.2 z(c)).
    let column = |file: &str, col: &str| -> BTreeMap<u32, f64> {
        rows(&data(file))
            .iter()
            .map(|r| (r["sp"].parse().unwrap(), r[col].parse().unwrap()))
            .collect()
    };
    let mut a: BTreeMap<u32, f64> = BTreeMap::new();
    for r in rows(&data("balance_sf18_d20_depths.csv")) {
        if matches!(r["depth"].as_str(), "19" | "20") {
            *a.entry(r["sp"].parse().unwrap()).or_default() +=
                r["score_cp"].parse::<f64>().unwrap() / 2.0;
        }
    }
    let b = column("balance_sf19_d16.csv", "estimate_cp");
    let c = column("balance_sf15_d16.csv", "score_cp");
    let record = rows(&data("balance_record.csv"));
    assert_eq!(record.len(), 960);
    let (ma, sa) = moments(&a);
    let (mb, sb) = moments(&b);
    let (mc, sc) = moments(&c);
    for (i, r) in record.iter().enumerate() {
        let sp: u32 = r["sp"].parse().unwrap();
        assert_eq!(sp as usize, i);
        let z = 0.6 * (a[&sp] - ma) / sa + 0.2 * (b[&sp] - mb) / sb + 0.2 * (c[&sp] - mc) / sc;
        let want = ma + sa * z;
        let got: f64 = r["estimate_cp"].parse().unwrap();
        assert!((got - want).abs() < 0.006, "sp {sp}: {got} ≠ {want}");
        assert_eq!(
            r["arrangement"],
            c960_common::startpos::StartPosition::new(sp)
                .unwrap()
                .arrangement_string(),
            "sp {sp}"
        );
        assert_eq!(r["sf15_d16_cp"].parse::<f64>().unwrap(), c[&sp]);
    }
}

/// Committed Stockfish 18 values are what the engine gives today: two fresh workers with the npm
/// `stockfish` 18.0.8 build search starts 210 (the table's cheapest) and 518 at depth 20 through
/// a real coordinator, agree at quorum 2, and their canonical result equals the committed row
/// (score, best move, nodes, WDL) and every committed depth's score and nodes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_stockfish_18_values_are_reproduced_by_fresh_searches() {
    let Some(engine) = c960_tests::wasm_stockfish_18() else {
        println!(
            "note: node or the npm stockfish 18.0.8 package is absent (.ci/run installs it into \
             .ci/engines/sf18); skipping"
        );
        return;
    };
    let table = rows(&data("balance_sf18_d20.csv"));
    let per_depth = rows(&data("balance_sf18_d20_depths.csv"));
    let server = c960_tests::TestServer::start(c960_tests::quick_config()).await;
    for sp in [210u32, 518] {
        let c =
            server.analysis_campaign(20, &sp.to_string(), c960_common::wire::AnalysisEngine::Uci);
        let (_, units) = server.store.analysis_table(c.id).unwrap();
        let workunit = units[0].workunit_id;
        c960_tests::one_uci_result(&server, &format!("a{sp}"), engine.clone(), workunit, 0).await;
        c960_tests::one_uci_result(&server, &format!("b{sp}"), engine.clone(), workunit, 1).await;
        let (_, units) = server.store.analysis_table(c.id).unwrap();
        assert_eq!(
            units[0].status,
            RowStatus::Valid,
            "sp {sp}: two searches agree"
        );
        let got = units[0].result.as_ref().unwrap();
        let want = &table[sp as usize];
        assert_eq!(got.engine_id, want["engine"], "sp {sp}");
        assert_eq!(
            got.score_cp.map(|v| v.to_string()).unwrap_or_default(),
            want["score_cp"],
            "sp {sp}"
        );
        assert_eq!(
            got.best_move.as_deref().unwrap_or(""),
            want["best_move"],
            "sp {sp}"
        );
        assert_eq!(got.nodes.to_string(), want["nodes"], "sp {sp}");
        let wdl = got.wdl.unwrap();
        assert_eq!(
            [&want["wdl_win"], &want["wdl_draw"], &want["wdl_loss"]]
                .map(|s| s.parse::<u16>().unwrap()),
            wdl,
            "sp {sp}"
        );
        let committed: Vec<_> = per_depth
            .iter()
            .filter(|r| r["sp"] == sp.to_string())
            .collect();
        assert_eq!(got.depths.len(), committed.len(), "sp {sp}");
        for (d, r) in got.depths.iter().zip(committed) {
            assert_eq!(d.depth.to_string(), r["depth"], "sp {sp}");
            assert_eq!(
                d.score_cp.map(|v| v.to_string()).unwrap_or_default(),
                r["score_cp"],
                "sp {sp} depth {}",
                d.depth
            );
            assert_eq!(d.nodes.to_string(), r["nodes"], "sp {sp} depth {}", d.depth);
        }
    }
}
