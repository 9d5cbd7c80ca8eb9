//! Every compiled copy of the perft recursions that this CPU can run ([`Kernel`]: portable,
//! popcnt, BMI1, BMI2 with PEXT slider lookups) gives the same counts: against cozy-chess on
//! random play, against the reference sets, and inside the hashed, threaded engine.
//!
//! The other perft tests use [`Kernel::best`] only; this one makes sure the copies that other
//! CPUs will pick are exact too, as far as this CPU can run them.

use crate::common;

use c960_common::perft::{Kernel, perft_with};
use c960_common::{CastlingNotation, PerftEngine, PerftOptions, Position, StartPosition};

fn available() -> Vec<Kernel> {
    let kernels: Vec<Kernel> = Kernel::ALL
        .into_iter()
        .filter(|k| k.is_available())
        .collect();
    eprintln!(
        "kernels available here: {kernels:?}; best {:?}",
        Kernel::best()
    );
    assert!(kernels.contains(&Kernel::best()));
    kernels
}

#[test]
fn every_kernel_agrees_with_cozy_chess_on_random_play() {
    let kernels = available();
    for pos in &common::random_play_positions(0x4B45_524E, 2_000, 70) {
        let fen = pos.to_fen(CastlingNotation::Shredder);
        let board = cozy_chess::Board::from_fen(&fen, true).unwrap();
        let expected = common::cozy::cozy_perft(&board, 3);
        for &k in &kernels {
            assert_eq!(perft_with(k, pos, 3), expected, "{k:?}: {fen}");
        }
    }
}

#[test]
fn every_kernel_matches_the_reference_sets() {
    let kernels = available();
    let mut lines = common::lines(include_str!("../data/tricky.epd"));
    lines.extend(common::lines(include_str!("../data/chess960_cpw.epd")));
    lines.extend(common::lines(include_str!("../data/standard.epd")));
    for line in &lines {
        let pos = Position::from_fen(&line.fen).unwrap();
        for &(depth, nodes) in line
            .counts
            .iter()
            .filter(|&&(d, n)| d <= 4 && n < 3_000_000)
        {
            for &k in &kernels {
                assert_eq!(
                    perft_with(k, &pos, depth),
                    nodes,
                    "{k:?}: {} d{depth}",
                    line.fen
                );
            }
        }
    }
    for row in common::start_rows().iter().step_by(29) {
        let pos = StartPosition::new(row.sp).unwrap().position();
        for &k in &kernels {
            assert_eq!(
                perft_with(k, &pos, 4),
                row.counts[3],
                "{k:?}: sp {}",
                row.sp
            );
        }
    }
}

#[test]
fn every_kernel_in_the_hashed_engine() {
    let kernels = available();
    for &k in &kernels {
        let engine = PerftEngine::new(PerftOptions {
            threads: 2,
            hash_mib: 1,
            seed: 7,
        })
        .with_kernel(k);
        for line in common::lines(include_str!("../data/tricky.epd")) {
            let pos = Position::from_fen(&line.fen).unwrap();
            for &(depth, nodes) in line
                .counts
                .iter()
                .filter(|&&(d, n)| d <= 4 && n < 3_000_000)
            {
                assert_eq!(
                    engine.perft(&pos, depth),
                    nodes,
                    "{k:?}: {} d{depth}",
                    line.fen
                );
            }
        }
    }
}
