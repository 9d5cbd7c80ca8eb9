//! Runs one perft with either engine, for instruction counting under `valgrind --tool=callgrind`
//! (deterministic, unlike timings on a loaded machine).
//!
//! `cargo run --release -p c960-common --example perft_one -- c960|cozy "FEN" DEPTH`
//!
//! `C960_KERNEL=portable|popcnt|bmi1|bmi2` runs that copy of c960's recursion instead of the
//! one chosen for this CPU.

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
        "c960" => {
            use c960_common::perft::{Kernel, perft_with};
            let kernel = match std::env::var("C960_KERNEL").as_deref() {
                Ok("portable") => Kernel::Portable,
                Ok("popcnt") => Kernel::Popcnt,
                Ok("bmi1") => Kernel::Bmi1,
                Ok("bmi2") => Kernel::Bmi2,
                _ => Kernel::best(),
            };
            eprintln!("kernel {kernel:?}");
            let pos = c960_common::Position::from_fen(fen).expect("FEN");
            perft_with(kernel, &pos, depth)
        }
        _ => cozy::cozy_perft(&cozy_chess::Board::from_fen(fen, true).expect("FEN"), depth),
    };
    println!("{nodes}");
}
