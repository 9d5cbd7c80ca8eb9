//! `c960-worker bench`: nodes per second on a fixed set, so volunteers can compare machines.

use std::time::Instant;

use anyhow::Result;
use c960_common::{PerftEngine, PerftOptions, Position, StartPosition};

/// Arguments of `bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Threads (default 1, so that figures compare single cores).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: u16,
    /// Hash table in MiB (default 0: raw move generation speed).
    #[arg(long, default_value_t = 0)]
    hash: u32,
}

/// The fixed set: three start positions at depth 5 and the Chess960 Kiwipete at depth 4.
fn bench_set() -> Vec<(String, Position, u32)> {
    let mut set: Vec<(String, Position, u32)> = [518u32, 0, 959]
        .into_iter()
        .map(|n| {
            (
                format!("sp {n}"),
                StartPosition::new(n).expect("in range").position(),
                5,
            )
        })
        .collect();
    let kiwipete = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w HAha - 0 1";
    set.push((
        "kiwipete960".into(),
        Position::from_fen(kiwipete).expect("valid FEN"),
        4,
    ));
    set
}

pub fn run(args: BenchArgs) -> Result<()> {
    let engine = PerftEngine::new(PerftOptions {
        threads: args.threads as usize,
        hash_mib: args.hash as usize,
        ..PerftOptions::default()
    });
    let mut total_nodes = 0u64;
    let mut total_secs = 0f64;
    for (name, pos, depth) in bench_set() {
        let start = Instant::now();
        let nodes = engine.perft(&pos, depth);
        let secs = start.elapsed().as_secs_f64();
        total_nodes += nodes;
        total_secs += secs;
        outln!(
            "{name:<12} depth {depth} {nodes:>12} nodes {:>8.1} Mnodes/s",
            nodes as f64 / secs / 1e6
        );
    }
    outln!("total {total_nodes} nodes in {total_secs:.3} s");
    outln!("{:.0} nodes/s", total_nodes as f64 / total_secs);
    Ok(())
}
