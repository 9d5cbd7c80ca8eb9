//! Perft against every published reference set (depth-limited in the default run; the release
//! check `tests/reference_deep.rs` goes deeper).

use crate::common;

use c960_common::epd::PerftLine;
use c960_common::{CastlingNotation, Position, StartPosition, perft};
use common::{lines, start_rows};

fn check_lines(name: &str, lines: &[PerftLine], max_depth: u32) -> usize {
    let mut checked = 0;
    for line in lines {
        let pos =
            Position::from_fen(&line.fen).unwrap_or_else(|e| panic!("{name}: {}: {e}", line.fen));
        for &(depth, nodes) in line.counts.iter().filter(|(d, _)| *d <= max_depth) {
            assert_eq!(
                perft(&pos, depth),
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
fn all_960_start_positions_to_depth_4() {
    let rows = start_rows();
    assert_eq!(rows.len(), 960);
    for row in &rows {
        let pos = StartPosition::new(row.sp).unwrap().position();
        assert_eq!(
            pos.to_fen(CastlingNotation::Shredder),
            row.shredder,
            "sp {}",
            row.sp
        );
        assert_eq!(
            pos.to_fen(CastlingNotation::XFen),
            row.xfen,
            "sp {}",
            row.sp
        );
        assert_eq!(
            Position::from_fen(&row.xfen).unwrap(),
            pos,
            "sp {} from X-FEN",
            row.sp
        );
        for depth in 1..=4 {
            assert_eq!(
                perft(&pos, depth),
                row.counts[depth as usize - 1],
                "sp {} depth {depth}",
                row.sp
            );
        }
    }
}

#[test]
fn oeis_sums_to_depth_4() {
    let oeis: Vec<u128> = include_str!("../data/oeis_a157851.txt")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    let rows = start_rows();
    for (depth, &expected) in oeis.iter().enumerate().skip(1).take(4) {
        let sum: u128 = rows.iter().map(|r| r.counts[depth - 1] as u128).sum();
        assert_eq!(sum, expected, "reference table column {depth} vs OEIS");
    }
}

#[test]
fn cpw_960_positions_to_depth_4() {
    let lines = lines(include_str!("../data/chess960_cpw.epd"));
    assert_eq!(lines.len(), 960);
    assert_eq!(check_lines("cpw", &lines, 4), 960 * 4);
}

#[test]
fn tricky_positions_to_depth_5() {
    let lines = lines(include_str!("../data/tricky.epd"));
    assert!(check_lines("tricky", &lines, 5) > 80);
}

#[test]
fn standard_positions_to_depth_4() {
    let lines = lines(include_str!("../data/standard.epd"));
    assert!(check_lines("standard", &lines, 4) > 400);
}
