//! Helpers shared by the core's integration tests: reference data and random play.

#![allow(dead_code)]

pub mod cozy;

use c960_common::epd::{PerftLine, parse_perft_line};

use c960_common::{MoveKind, Position, StartPosition};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Positions reached by random play from random start positions. Castling is played whenever
/// it is available with probability 3/4, so castling rules get exercised far more often than
/// uniform random play would manage.
pub fn random_play_positions(seed: u64, count: usize, max_plies: usize) -> Vec<Position> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut pos = StartPosition::new(rng.random_range(0..960))
            .unwrap()
            .position();
        let plies = rng.random_range(1..=max_plies);
        for _ in 0..plies {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            let castles: Vec<_> = moves
                .iter()
                .filter(|m| m.kind() == MoveKind::Castle)
                .collect();
            let m = if !castles.is_empty() && rng.random_bool(0.75) {
                *castles[rng.random_range(0..castles.len())]
            } else {
                moves[rng.random_range(0..moves.len())]
            };
            pos = pos.play(m);
            out.push(pos);
            if out.len() == count {
                break;
            }
        }
    }
    out
}

/// The perft lines of an EPD reference file.
pub fn lines(text: &str) -> Vec<PerftLine> {
    text.lines()
        .filter_map(|l| parse_perft_line(l).expect("reference line parses"))
        .collect()
}

/// One row of `chess960_startpos_perft.csv`.
pub struct StartRow {
    pub sp: u32,
    pub shredder: String,
    pub xfen: String,
    /// Perft at depths 1..=6.
    pub counts: Vec<u64>,
}

/// The reference table of all 960 start positions.
pub fn start_rows() -> Vec<StartRow> {
    include_str!("../../data/chess960_startpos_perft.csv")
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            StartRow {
                sp: f[0].parse().unwrap(),
                shredder: f[1].to_string(),
                xfen: f[2].to_string(),
                counts: f[3..].iter().map(|n| n.parse().unwrap()).collect(),
            }
        })
        .collect()
}
