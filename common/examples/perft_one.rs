//! Runs one perft with either engine, for instruction counting under `valgrind --tool=callgrind`
//! (deterministic, unlike timings on a loaded machine).
//!
//! `cargo run --release -p c960-common --example perft_one -- c960|cozy "FEN" DEPTH`

fn cozy_perft(board: &cozy_chess::Board, depth: u32) -> u64 {
    let mut nodes = 0;
    match depth {
        0 => nodes = 1,
        1 => {
            board.generate_moves(|moves| {
                nodes += moves.len() as u64;
                false
            });
        }
        _ => {
            board.generate_moves(|moves| {
                for mv in moves {
                    let mut child = board.clone();
                    child.play_unchecked(mv);
                    nodes += cozy_perft(&child, depth - 1);
                }
                false
            });
        }
    }
    nodes
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [engine, fen, depth] = &args[..] else {
        eprintln!("usage: perft_one c960|cozy FEN DEPTH");
        std::process::exit(2);
    };
    let depth: u32 = depth.parse().expect("DEPTH is a number");
    let nodes = match engine.as_str() {
        "c960" => c960_common::perft(&c960_common::Position::from_fen(fen).expect("FEN"), depth),
        _ => cozy_perft(&cozy_chess::Board::from_fen(fen, true).expect("FEN"), depth),
    };
    println!("{nodes}");
}
