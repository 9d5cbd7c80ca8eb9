//! Side-by-side perft benchmark: c960 against cozy-chess, single thread, bulk counting, no hash.
//!
//! `cargo bench -p c960-common --bench perft_vs_cozy` runs every case `C960_BENCH_RUNS` times
//! (default 5), alternating the two engines run by run so that both see the same machine state,
//! and prints the median nodes per second of each side and their ratio. Each run is timed twice:
//! wall clock, and the thread's own CPU time (which leaves out time spent descheduled, so ratios
//! stay meaningful on a machine with other load).

#[path = "../tests/suite/common/cozy.rs"]
mod cozy;

use std::time::Instant;

use c960_common::{Position, StartPosition, perft};

struct Case {
    name: String,
    fens: Vec<String>,
    depth: u32,
}

/// CPU time consumed by the calling thread, in seconds.
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Times `f`, returning its result, wall seconds and thread CPU seconds.
fn timed(f: impl FnOnce() -> u64) -> (u64, f64, f64) {
    let (wall, cpu) = (Instant::now(), thread_cpu_seconds());
    let n = f();
    (n, wall.elapsed().as_secs_f64(), thread_cpu_seconds() - cpu)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("C960_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let fen_of = |n| {
        StartPosition::new(n)
            .unwrap()
            .position()
            .to_fen(c960_common::CastlingNotation::Shredder)
    };
    let cpw: Vec<String> = include_str!("../tests/data/chess960_cpw.epd")
        .lines()
        .take(20)
        .map(|l| l.split(';').next().unwrap().trim().to_string())
        .collect();
    let cases = vec![
        Case {
            name: "sp 518 d6".into(),
            fens: vec![fen_of(518)],
            depth: 6,
        },
        Case {
            name: "sp 0 d6".into(),
            fens: vec![fen_of(0)],
            depth: 6,
        },
        Case {
            name: "sp 959 d6".into(),
            fens: vec![fen_of(959)],
            depth: 6,
        },
        Case {
            name: "kiwipete960 d5".into(),
            fens: vec![
                "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w HAha - 0 1".into(),
            ],
            depth: 5,
        },
        Case {
            name: "cpw960 1-20 d5".into(),
            fens: cpw,
            depth: 5,
        },
    ];
    println!("perft, single thread, bulk counting, no hash; {runs} alternating runs, medians");
    println!(
        "{:<16} {:>11} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6}",
        "case", "nodes", "c960", "cozy", "ratio", "c960 cpu", "cozy cpu", "ratio"
    );
    println!(
        "{:<16} {:>11} | {:>9} {:>9} {:>6} | {:>9} {:>9} {:>6}",
        "", "", "Mn/s", "Mn/s", "wall", "Mn/s", "Mn/s", "cpu"
    );
    let mut worst = f64::INFINITY;
    for case in &cases {
        let ours: Vec<Position> = case
            .fens
            .iter()
            .map(|f| Position::from_fen(f).unwrap())
            .collect();
        let theirs: Vec<cozy_chess::Board> = case
            .fens
            .iter()
            .map(|f| cozy_chess::Board::from_fen(f, true).unwrap())
            .collect();
        let (mut our_wall, mut their_wall, mut our_cpu, mut their_cpu) =
            (vec![], vec![], vec![], vec![]);
        let mut nodes = 0;
        for _ in 0..runs {
            let (n, wall, cpu) = timed(|| ours.iter().map(|p| perft(p, case.depth)).sum());
            our_wall.push(n as f64 / wall);
            our_cpu.push(n as f64 / cpu);
            let (m, wall, cpu) =
                timed(|| theirs.iter().map(|b| cozy::cozy_perft(b, case.depth)).sum());
            their_wall.push(m as f64 / wall);
            their_cpu.push(m as f64 / cpu);
            assert_eq!(n, m, "{}: the engines disagree", case.name);
            nodes = n;
        }
        let (a, b) = (median(&mut our_wall), median(&mut their_wall));
        let (c, d) = (median(&mut our_cpu), median(&mut their_cpu));
        worst = worst.min(c / d);
        println!(
            "{:<16} {:>11} | {:>9.1} {:>9.1} {:>5.2}x | {:>9.1} {:>9.1} {:>5.2}x",
            case.name,
            nodes,
            a / 1e6,
            b / 1e6,
            a / b,
            c / 1e6,
            d / 1e6,
            c / d
        );
    }
    println!("lowest CPU-time ratio: {worst:.2}x");
}
