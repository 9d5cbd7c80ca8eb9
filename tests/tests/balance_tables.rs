//! The committed opening-balance tables (`data/balance_*.csv`, docs/balance.md) are whole and
//! consistent: starts in Scharnagl order from 0 without gaps (chunks are committed in order),
//! one engine build and one depth per table, and every value the same as the last completed
//! depth of its search in the per-depth file beside it, the estimator the mean of the 4 deepest.

use std::collections::BTreeMap;
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
