//! Finds where c960 and cozy-chess disagree: divides both ways, descends into the first root
//! move whose counts differ, and repeats until depth 1, printing the path of FENs and moves.
//!
//! `cargo run -p c960-common --example divide_vs_cozy -- "FEN" DEPTH`

#[path = "../tests/suite/common/cozy.rs"]
mod cozy;

use c960_common::{CastlingNotation, Position, divide};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(mut fen), Some(depth)) = (args.next(), args.next()) else {
        eprintln!("usage: divide_vs_cozy FEN DEPTH");
        std::process::exit(2);
    };
    let mut depth: u32 = depth.parse().expect("DEPTH is a number");
    loop {
        let pos = Position::from_fen(&fen).expect("valid FEN");
        let board = cozy_chess::Board::from_fen(&pos.to_fen(CastlingNotation::Shredder), true)
            .expect("cozy reads it");
        let mut culprit = None;
        for (m, ours) in divide(&pos, depth) {
            let mut child = board.clone();
            child.play(m.to_string().parse().expect("UCI move"));
            let theirs = cozy::cozy_perft(&child, depth - 1);
            if ours != theirs {
                println!("{fen} {m}: c960 {ours}, cozy-chess {theirs}");
                culprit = Some(pos.play(m));
                break;
            }
        }
        match culprit {
            Some(child) if depth > 1 => {
                fen = child.to_fen(CastlingNotation::Shredder);
                depth -= 1;
            }
            Some(_) => break,
            None => {
                println!("no disagreement at depth {depth}");
                break;
            }
        }
    }
}
