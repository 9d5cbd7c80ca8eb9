//! What a dispute costs on a deep workunit (issue 54): the extra computation for the honest
//! side and for the coordinator when a consistent liar disagrees with it on perft(`depth`) of a
//! Chess960 start. The real referee ([`next_move`]) moves; each side answers its challenges
//! with a real divide (the liar: the true divide with one node more under the largest child,
//! the worst case for the honest side, which must count the largest subtree at every level);
//! the coordinator counts the leaf once it fits `--budget` (serve's `--check-max-nodes`).
//!
//! ```text
//! dispute_cost [--depth 9] [--position 518] [--threads 2] [--hash-mib 2048] [--budget 500000000]
//! ```
//! The dispute's root divide is the workunit itself, which the workers computed before the
//! dispute: at depth 9 it is computed here (its time is the workunit's cost); deeper, only the
//! disputed child's count is (the largest child by a depth-5 proxy), the other children get
//! the same made-up counts on both sides (the referee compares, it does not recount them), and
//! the workunit's time is stated as extrapolated from the nodes.

use std::time::Instant;

use c960_common::{PerftEngine, PerftOptions, Position, StartPosition, perft};
use c960_coordinator::integrity::referee::next_move;
use c960_coordinator::model::disputes::{Advance, Answer, DisputeView};

struct Args {
    depth: u32,
    position: u32,
    threads: usize,
    hash_mib: usize,
    budget: u64,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        depth: 9,
        position: 518,
        threads: 2,
        hash_mib: 2048,
        budget: 500_000_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: std::num::ParseIntError| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--depth" => a.depth = value.parse().map_err(bad)?,
            "--position" => a.position = value.parse().map_err(bad)?,
            "--threads" => a.threads = value.parse().map_err(bad)?,
            "--hash-mib" => a.hash_mib = value.parse().map_err(bad)?,
            "--budget" => a.budget = value.parse().map_err(bad)?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.depth < 3 {
        return Err("--depth must be at least 3".into());
    }
    Ok(a)
}

type Divide = Vec<(String, u64)>;

fn divide(engine: &PerftEngine, pos: &Position, depth: u32) -> Divide {
    engine
        .divide(pos, depth)
        .into_iter()
        .map(|(m, n)| (m.to_string(), n))
        .collect()
}

/// The liar's answer: the truth with one node more under its largest child.
fn lie_about(truth: &Divide) -> Divide {
    let largest = (0..truth.len()).max_by_key(|&i| truth[i].1).unwrap_or(0);
    let mut lie = truth.clone();
    lie[largest].1 += 1;
    lie
}

fn sum(d: &Divide) -> u64 {
    d.iter().map(|(_, n)| n).sum()
}

fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("dispute_cost: {e}");
            std::process::exit(2);
        }
    };
    // A fresh table for every computation: a challenge comes hours after the workunit, as a
    // lease of its own, and finds none of the workunit's subtrees in the worker's table.
    let worker = || {
        PerftEngine::new(PerftOptions {
            threads: a.threads,
            hash_mib: a.hash_mib,
            ..PerftOptions::default()
        })
    };
    // The coordinator's checker: one thread and serve's default table (64 MiB).
    let coordinator = PerftEngine::new(PerftOptions {
        threads: 1,
        hash_mib: 64,
        ..PerftOptions::default()
    });
    let root = StartPosition::new(a.position)
        .expect("a start number 0..959")
        .position();

    // The workunit: the sides' root divides.
    let engine = worker();
    let began = Instant::now();
    let (truth, workunit_secs, measured) = if a.depth <= 9 {
        let t = divide(&engine, &root, a.depth);
        (t, began.elapsed().as_secs_f64(), true)
    } else {
        // Only the largest child is counted; the others agree, with made-up counts.
        let proxy: Vec<(String, u64)> = root
            .legal_moves()
            .as_slice()
            .iter()
            .map(|&m| (m.to_string(), perft(&root.play(m), 5)))
            .collect();
        let largest = (0..proxy.len()).max_by_key(|&i| proxy[i].1).unwrap_or(0);
        let m = root.legal_moves().as_slice()[largest];
        let t0 = Instant::now();
        let counted = engine.perft(&root.play(m), a.depth - 1);
        let child_secs = t0.elapsed().as_secs_f64();
        let mut t = proxy.clone();
        t[largest].1 = counted;
        // The workunit's time, extrapolated from the largest child's share at depth 5.
        let share = proxy[largest].1 as f64 / proxy.iter().map(|(_, n)| *n as f64).sum::<f64>();
        (t, child_secs / share, false)
    };
    let lie = lie_about(&truth);
    println!(
        "perft({}) of start {}: the workunit took {:.1} s on {} threads ({})",
        a.depth,
        a.position,
        workunit_secs,
        a.threads,
        if measured {
            "measured"
        } else {
            "extrapolated from its largest child"
        }
    );
    println!("| round | node (moves from the start) | depth | nodes per side | time per side |");
    println!("|---|---|---|---|---|");

    let mut view = DisputeView {
        id: 1,
        workunit_id: 1,
        fen: root.to_fen(c960_common::CastlingNotation::Shredder),
        depth: a.depth,
        path: Vec::new(),
        workers: [1, 2],
        claims: [sum(&truth), sum(&lie)],
        answers: [Answer::Divide(truth), Answer::Divide(lie)],
        rounds: 0,
    };
    let mut side_secs = 0.0;
    let mut side_nodes: u128 = 0;
    loop {
        let t0 = Instant::now();
        let step = next_move(&coordinator, &view, a.budget).expect("both sides answered");
        let referee_secs = t0.elapsed().as_secs_f64();
        match step {
            Advance::Decided { losers, nodes } => {
                assert_eq!(
                    losers,
                    vec![2],
                    "the liar, and only the liar, is proven wrong"
                );
                println!(
                    "\nDecided after {} challenge rounds: the liar is proven wrong. The coordinator \
                     counted a leaf of {} nodes at depth {} in {:.2} s.",
                    view.rounds,
                    nodes,
                    view.depth - 1,
                    referee_secs
                );
                println!(
                    "The honest side's extra cost: {:.1} s ({} nodes), {:.1} % of the workunit's \
                     {:.1} s.",
                    side_secs,
                    side_nodes,
                    100.0 * side_secs / workunit_secs,
                    workunit_secs
                );
                return;
            }
            Advance::Challenge {
                mv,
                fen,
                depth,
                claims,
            } => {
                let pos = Position::from_fen(&fen).expect("the referee's FEN parses");
                let engine = worker();
                let t0 = Instant::now();
                let truth = divide(&engine, &pos, depth);
                let secs = t0.elapsed().as_secs_f64();
                side_secs += secs;
                side_nodes += u128::from(sum(&truth));
                view.path.push(mv);
                println!(
                    "| {} | {} | {} | {} | {:.2} s |",
                    view.rounds + 1,
                    view.path.join(" "),
                    depth,
                    sum(&truth),
                    secs
                );
                let lie = lie_about(&truth);
                view = DisputeView {
                    fen,
                    depth,
                    claims,
                    answers: [Answer::Divide(truth), Answer::Divide(lie)],
                    rounds: view.rounds + 1,
                    ..view
                };
            }
        }
    }
}
