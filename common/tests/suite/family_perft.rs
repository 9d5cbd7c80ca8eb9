//! The published shuffle-chess table (`data/perft_shuffle5040_d1-6.csv`, computed through the
//! coordinator at quorum 2) against the numbering and a seeded random sample of it against
//! cozy-chess, an independent move generator.

use crate::common;

use c960_common::family::Family;
use c960_common::{CastlingNotation, Position};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TABLE: &str = include_str!("../../../data/perft_shuffle5040_d1-6.csv");

struct Row {
    number: u32,
    arrangement: String,
    fen: String,
    counts: Vec<u64>,
}

fn rows() -> Vec<Row> {
    let mut lines = TABLE.lines();
    assert_eq!(
        lines.next(),
        Some("number,arrangement,fen,d1,d2,d3,d4,d5,d6")
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Row {
                number: f[0].parse().unwrap(),
                arrangement: f[1].to_string(),
                fen: f[2].to_string(),
                counts: f[3..].iter().map(|c| c.parse().unwrap()).collect(),
            }
        })
        .collect()
}

#[test]
fn the_table_covers_every_shuffle_start_in_number_order() {
    let rows = rows();
    assert_eq!(rows.len(), 5040);
    for (i, r) in rows.iter().enumerate() {
        let s = Family::Shuffle.start(i as u64).unwrap();
        assert_eq!(r.number, i as u32);
        assert_eq!(r.arrangement, s.arrangement_string());
        assert_eq!(r.fen, s.position().to_fen(CastlingNotation::Shredder));
        assert_eq!(r.counts.len(), 6);
        // Without castling a start and its mirror image have the same tree.
        let m = Family::Shuffle
            .start_of(
                &c960_common::family::mirror(&s.white),
                &c960_common::family::mirror(&s.black),
            )
            .unwrap();
        assert_eq!(
            r.counts, rows[m.number as usize].counts,
            "{i} vs its mirror"
        );
    }
}

#[test]
fn a_random_sample_agrees_with_cozy_chess() {
    let rows = rows();
    let mut rng = StdRng::seed_from_u64(5040);
    for _ in 0..12 {
        let r = &rows[rng.random_range(0..rows.len())];
        let board = cozy_chess::Board::from_fen(&r.fen, true)
            .unwrap_or_else(|e| panic!("cozy refused {}: {e:?}", r.fen));
        let ours = Position::from_fen(&r.fen).unwrap();
        for depth in 1..=4u32 {
            let want = r.counts[depth as usize - 1];
            assert_eq!(
                common::cozy::cozy_perft(&board, depth),
                want,
                "{} d{depth}",
                r.fen
            );
            assert_eq!(c960_common::perft(&ours, depth), want, "{} d{depth}", r.fen);
        }
    }
    // Depth 5 for a few (about 5M nodes each).
    for _ in 0..3 {
        let r = &rows[rng.random_range(0..rows.len())];
        let board = cozy_chess::Board::from_fen(&r.fen, true).unwrap();
        assert_eq!(
            common::cozy::cozy_perft(&board, 5),
            r.counts[4],
            "{} d5",
            r.fen
        );
    }
}

/// Depth 6 (about 10^8 nodes a start) for a seeded sample, in release builds: `.ci/run` runs it
/// with the deep checks (`cargo test --release -p c960-common --test suite -- --ignored family_perft::`).
#[test]
#[ignore = "release-mode deep check: cargo test --release -- --ignored"]
fn a_random_sample_agrees_with_cozy_chess_at_depth_6() {
    let rows = rows();
    let mut rng = StdRng::seed_from_u64(6);
    for _ in 0..3 {
        let r = &rows[rng.random_range(0..rows.len())];
        let board = cozy_chess::Board::from_fen(&r.fen, true).unwrap();
        let ours = Position::from_fen(&r.fen).unwrap();
        assert_eq!(
            common::cozy::cozy_perft(&board, 6),
            r.counts[5],
            "{} d6 cozy",
            r.fen
        );
        assert_eq!(
            c960_common::perft(&ours, 6),
            r.counts[5],
            "{} d6 ours",
            r.fen
        );
    }
}
