//! One deep hashed perft with [`PerftEngine`], timed: the unit of `scripts/deep-bench.sh`, which
//! alternates two builds of this binary side by side (issue 35).
//!
//! `deep_perft SP|FEN DEPTH THREADS HASH_MIB [SEED]` prints one line:
//! `nodes=N wall=S user=S sys=S`, the process's wall clock and CPU times (getrusage, so the
//! table's allocation and page faults are in `sys`). Build it with
//! `cargo bench -p c960-common --bench deep_perft --no-run` (the release profile with LTO; the
//! kernel is chosen at run time as in the worker).

use std::time::Instant;

use c960_common::{PerftEngine, PerftOptions, Position, StartPosition};

/// User and system CPU seconds of this process so far.
fn cpu_seconds() -> (f64, f64) {
    // SAFETY: all-zero bits are a valid rusage, which getrusage then fills in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

fn main() {
    // `cargo bench` appends `--bench`; it is not a position.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [position, depth, threads, hash_mib, rest @ ..] = &args[..] else {
        eprintln!("usage: deep_perft SP|FEN DEPTH THREADS HASH_MIB [SEED]");
        std::process::exit(2);
    };
    let pos = match position.parse::<u32>() {
        Ok(n) => StartPosition::new(n).expect("SP in 0..960").position(),
        Err(_) => Position::from_fen(position).expect("FEN"),
    };
    let options = PerftOptions {
        threads: threads.parse().expect("THREADS is a number"),
        hash_mib: hash_mib.parse().expect("HASH_MIB is a number"),
        seed: rest
            .first()
            .map_or(c960_common::zobrist::DEFAULT_SEED, |s| {
                s.parse().expect("SEED is a number")
            }),
    };
    let depth: u32 = depth.parse().expect("DEPTH is a number");
    let wall = Instant::now();
    let engine = PerftEngine::new(options);
    let nodes = engine.perft(&pos, depth);
    let wall = wall.elapsed().as_secs_f64();
    let (user, sys) = cpu_seconds();
    println!("nodes={nodes} wall={wall:.2} user={user:.2} sys={sys:.2}");
}
