//! Runs one perft with either engine, for instruction counting under `valgrind --tool=callgrind`
//! (deterministic, unlike timings on a loaded machine).
//!
//! `cargo run --release -p c960-common --example perft_one -- c960|cozy "FEN" DEPTH`
//!
//! `C960_KERNEL=portable|popcnt|bmi1|bmi2` runs that copy of c960's recursion instead of the
//! one chosen for this CPU.
//!
//! `c960-tt` and `cozy-tt` count with a hash table of `PERFT_HASH_MIB` MiB (default 256), one
//! thread: c960's own [`c960_common::PerftEngine`] table, and for cozy-chess a plain
//! always-replace table keyed by its incremental Zobrist hash (the baseline of the hashed
//! target, issue 17).

#[path = "../tests/suite/common/cozy.rs"]
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
        "c960-tt" => {
            use c960_common::perft::{PerftEngine, PerftOptions};
            let pos = c960_common::Position::from_fen(fen).expect("FEN");
            PerftEngine::new(PerftOptions {
                threads: 1,
                hash_mib: hash_mib(),
                ..PerftOptions::default()
            })
            .perft(&pos, depth)
        }
        "cozy-tt" => {
            let board = cozy_chess::Board::from_fen(fen, true).expect("FEN");
            cozy_perft_hashed(&board, depth, &mut CozyTable::new(hash_mib()))
        }
        _ => cozy::cozy_perft(&cozy_chess::Board::from_fen(fen, true).expect("FEN"), depth),
    };
    println!("{nodes}");
}

fn hash_mib() -> usize {
    std::env::var("PERFT_HASH_MIB").map_or(256, |v| v.parse().expect("PERFT_HASH_MIB is a number"))
}

/// A plain perft table for cozy-chess: one 16-byte entry per slot (the key with the remaining
/// depth mixed in, and the count), always replaced, slot by the key modulo the table size.
struct CozyTable {
    entries: Vec<(u64, u64)>,
}

impl CozyTable {
    fn new(mib: usize) -> CozyTable {
        let entries = vec![(0, 0); ((mib << 20) / 16).max(1)];
        // Transparent huge pages as c960's table has them, so that the baseline does not pay
        // TLB misses c960 avoids (only a hint; the zeroed pages are not touched yet).
        #[cfg(target_os = "linux")]
        // SAFETY: the range lies inside the vector's allocation; madvise only advises.
        unsafe {
            let start = entries.as_ptr() as usize;
            let end = start + entries.len() * 16;
            let aligned = (start + (2 << 20) - 1) & !((2 << 20) - 1);
            if aligned < end {
                libc::madvise(aligned as *mut _, end - aligned, libc::MADV_HUGEPAGE);
            }
        }
        CozyTable { entries }
    }

    fn slot(&self, key: u64) -> usize {
        ((u128::from(key) * self.entries.len() as u128) >> 64) as usize
    }
}

/// cozy-chess's bulk-counting perft with the table at every node of depth 2 or more.
fn cozy_perft_hashed(board: &cozy_chess::Board, depth: u32, table: &mut CozyTable) -> u64 {
    if depth < 2 {
        return cozy::cozy_perft(board, depth);
    }
    // An odd multiplier per depth keeps the keys of one position at different depths apart.
    let key = board.hash() ^ u64::from(depth).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let slot = table.slot(key);
    let (stored, count) = table.entries[slot];
    if stored == key && count != 0 {
        return count;
    }
    let mut nodes = 0;
    board.generate_moves(|moves| {
        for mv in moves {
            let mut child = board.clone();
            child.play_unchecked(mv);
            nodes += cozy_perft_hashed(&child, depth - 1, table);
        }
        false
    });
    table.entries[slot] = (key, nodes);
    nodes
}
