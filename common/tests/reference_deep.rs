//! The deep reference check, run in release mode by `.ci/run`:
//! `cargo test --release -p c960-common --test reference_deep -- --ignored`.
//!
//! All 960 start positions at depths 1–6, the CPW Chess960 set at depth 5, and every trap and
//! classical position at every listed depth up to 6. Uses the hash table and every core; the
//! default test run checks the same data at shallower depths without either.

mod common;

use c960_common::{PerftEngine, PerftOptions, Position, StartPosition};
use common::{lines, start_rows};

fn engine() -> PerftEngine {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    PerftEngine::new(PerftOptions {
        threads,
        hash_mib: 256,
        ..PerftOptions::default()
    })
}

#[test]
#[ignore = "release-mode deep check: run by .ci/run"]
fn all_960_start_positions_to_depth_6() {
    let engine = engine();
    let mut sums = [0u128; 6];
    for row in start_rows() {
        let pos = StartPosition::new(row.sp).unwrap().position();
        for depth in 1..=6 {
            let n = engine.perft(&pos, depth);
            assert_eq!(
                n,
                row.counts[depth as usize - 1],
                "sp {} depth {depth}",
                row.sp
            );
            sums[depth as usize - 1] += n as u128;
        }
    }
    // OEIS A157851 a(1..6).
    assert_eq!(
        sums,
        [18882, 371766, 8224968, 181106056, 4433048830, 107637760217]
    );
}

fn check_file(name: &str, text: &str, max_depth: u32) -> usize {
    let engine = engine();
    let mut checked = 0;
    for line in lines(text) {
        let pos = Position::from_fen(&line.fen).unwrap();
        for &(depth, nodes) in line.counts.iter().filter(|(d, _)| *d <= max_depth) {
            assert_eq!(
                engine.perft(&pos, depth),
                nodes,
                "{name}: {} depth {depth}",
                line.fen
            );
            checked += 1;
        }
    }
    checked
}

#[test]
#[ignore = "release-mode deep check: run by .ci/run"]
fn cpw_960_positions_to_depth_5() {
    assert_eq!(
        check_file("cpw", include_str!("data/chess960_cpw.epd"), 5),
        960 * 5
    );
}

#[test]
#[ignore = "release-mode deep check: run by .ci/run"]
fn tricky_positions_at_every_listed_depth() {
    assert!(check_file("tricky", include_str!("data/tricky.epd"), 6) > 100);
}

#[test]
#[ignore = "release-mode deep check: run by .ci/run"]
fn standard_positions_to_depth_6() {
    assert!(check_file("standard", include_str!("data/standard.epd"), 6) > 700);
}
