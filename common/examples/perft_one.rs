//! Runs one perft with either engine, for instruction counting under `valgrind --tool=callgrind`
//! (deterministic, unlike timings on a loaded machine).
//!
//! `cargo run --release -p c960-common --example perft_one -- c960|cozy "FEN" DEPTH`

#[path = "../tests/common/cozy.rs"]
mod cozy;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [engine, fen, depth] = &args[..] else {
        eprintln!("usage: perft_one c960|cozy FEN DEPTH");
        std::process::exit(2);
    };
    let depth: u32 = depth.parse().expect("DEPTH is a number");
    let nodes = match engine.as_str() {
        "c960" => c960_common::perft(&c960_common::Position::from_fen(fen).expect("FEN"), depth),
        _ => cozy::cozy_perft(&cozy_chess::Board::from_fen(fen, true).expect("FEN"), depth),
    };
    println!("{nodes}");
}
